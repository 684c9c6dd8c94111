"""Does ``tftrace predict`` foresee what each thread setting gives? Each workload of the diagnosis
corpus (``diagnosis.py``) recorded once at its recorded setting, every setting of its sweep grid
predicted from that one recording, and the predictions compared with the sweep's measured times.

Figures, per workload and pooled over the corpus, with their targets:

    rank correlation   Spearman's, between predicted and measured step times over the grid;
                       pooled over every workload's settings predicted as one figure, each
                       time divided by the geometric mean of its workload's over the grid
                       (predicted and measured alike; ``pooled_rank``); also printed,
                       divided by the recorded setting's instead (one median's noise in
                       every figure)                                                    >= 0.9
    spans              a server at two paces has its other settings predicted as spans (the
                       replay at its slow pace to it at its fast, ``SettingPrediction.bound``):
                       left out of the rank correlation and the speedup error, as a workload
                       not predicted is; how many settings ran inside their span, and the
                       rank correlation with each span's replayed figure as a point
    best within 5 %    the setting the prediction recommends (the fastest predicted, where
                       2 % faster than the recorded one, else the recorded one) ran within
                       5 % of the measured fastest (the sweep's medians)  >= 80 % of workloads
    speedup error      the median of |predicted speedup / measured speedup - 1| over the
                       settings other than the recorded one predicted as one figure
                       (speedup: over the recorded setting, > 1 faster)              <= 15 %
    --predict 2        what a sweep of the baseline and the 2 settings predicted best (and
                       those it times anyway: ``_predicted_k``) would
                       save over the whole grid (runs), and whether it recommends what the
                       whole grid does: the setting that gains >= 10 % beyond noise
                       (``diagnosis.best_row`` on the same measured rows), or none
    told apart         of the pairs of a workload's settings whose measured ranges
                       (min-max over the runs) do not overlap, the share the prediction
                       orders as measured: the rank correlation's question asked only where
                       the measurement answers it (no target: the issue sets none)
    the measurement    its rounds split in halves, the halves' speedups rank-correlated as
    against itself     a prediction is (``split_half.py``), carried to all the runs: the
                       most a prediction free of error could reach (no target: the ceiling
                       the rank correlation's target is checked under)
    ... its best       the fastest setting by one half of the rounds, against the fastest
                       by the other half: within 5 % in how many workloads (the mean over
                       the splits, both ways): the best-setting figure's own noise

A server is compared by its time per request (one over its requests per second, as the
sweep times it); its latency percentiles are not scored. A workload swept over an environment
variable as well (blas-beside-pools) is compared on the settings with its recorded value; a
run recorded at intra-op 1 on the intra-op 1 settings (its ops hold no shards to spread).

Two ways to run:

    predict_accuracy.py --from DIR [DIR ...]
        score saved diagnosis runs (``diagnosis.py --output DIR``: each NAME/record and the
        sweeps in DIR/results.json; a later DIR's workload replaces an earlier one's): no
        workload runs, seconds per workload
    predict_accuracy.py [--only NAMES] [--repeat N] [--output DIR]
        record each workload and sweep its grid (diagnosis.py's, without verifications), then
        score; about 40 minutes on 2 cores for the whole corpus. DIR/results.json is written
        as each workload ends, so ``--from DIR`` scores the runs again (on another machine:
        the table names the machine the runs were recorded on)
    predict_accuracy.py --held-out [--only NAMES] [--repeat N] [--output DIR]
        the same for three real models kept out of the corpus the model was shaped on
        (``held_out``: Keras fits of an LSTM, a transformer and EfficientNetB0, scripts in
        benchmarks/workloads/), about 35 minutes: do the figures hold on workloads the
        model never saw? ``--from DIR`` scores them again

``--against DIR [DIR ...]`` scores the predictions against another saved sweep of the corpus
as well (and this set's measurement against it: what a second measurement reaches).
``--markdown PATH`` writes the table and figures for docs/predict.md, ``--json PATH`` every
figure. The exit status is 0 whether or not a target is met (``--check``: 1 when one is missed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import diagnosis as d
import pandas as pd
from pooled_rank import GRID, RECORDED
from pooled_rank import pooled_spearman as pooled_spearman_of
from split_half import best_agreement, reliability

import tftrace
from tftrace.analysis.render.formatting import markdown_text
from tftrace.errors import TftraceError
from tftrace.tracer.manifest_reader import read_manifest
from tftrace.tracer.rundir import read_json_or_none

SPEARMAN_TARGET = 0.9
BEST_WITHIN = 0.05
BEST_TARGET = 0.8
ERROR_TARGET = 0.15
PREDICT_K = 2


@dataclass
class Scored:
    """One workload: the settings compared (measured and predicted step times, s), or why it
    was not predicted."""

    name: str
    recorded: tuple[int, int]
    settings: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None
    recommended: str | None = None  # the whole grid's recommendation ("keep": none)
    predicted_recommendation: str | None = None  # a --predict K sweep's
    grid_size: int = 0
    timed_k: int = 0  # the settings a ``--predict K`` sweep would time (``_predicted_k``)
    notes: list[str] = field(default_factory=list)
    pick: tuple[int, int] | None = None  # what the prediction recommends, else the recorded
    # the sweep's timed runs of the settings compared (intra, inter, round, time_s), for the
    # measurement's agreement with itself (``split_half``)
    runs: list[dict[str, Any]] = field(default_factory=list)
    # a server that ran at two paces (``Prediction.pace``): the slow and the fast pace's
    # requests/s over the recorded window's; its other settings are predicted as spans
    paces: tuple[float, float] | None = None

    @property
    def spans(self) -> bool:
        """Whether its settings other than the recorded one are predicted as spans (a server
        at two paces, ``SettingPrediction.bound``), not as one figure each."""
        return self.paces is not None

    def inside_spans(self) -> tuple[int, int]:
        """How many of the other settings' measured speedups fall inside their predicted
        span, of how many (0, 0 without spans)."""
        spanned = [r for r in self.settings if not r["recorded"] and r.get("bound")]
        inside = sum(r["bound"][0] <= r["meas_speedup"] <= r["bound"][1] for r in spanned)
        return inside, len(spanned)

    @property
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.settings)

    def spearman(self) -> float | None:
        f = self.frame
        if len(f) < 3 or f["measured_s"].nunique() < 2 or f["predicted_s"].nunique() < 2:
            return None
        return float(f["predicted_s"].corr(f["measured_s"], method="spearman"))

    def picked(self) -> pd.Series:
        """The setting the prediction recommends (``Prediction.recommended``, which
        ``analyze --predict`` names), else the recorded one."""
        f = self.frame
        at = (f["intra"] == self.pick[0]) & (f["inter"] == self.pick[1]) if self.pick else None
        return f[at].iloc[0] if at is not None and at.any() else f[f["recorded"]].iloc[0]

    def best_within(self) -> bool | None:
        f = self.frame
        if f.empty:
            return None
        return bool(self.picked()["measured_s"] <= (1 + BEST_WITHIN) * f["measured_s"].min())

    def errors(self) -> list[float]:
        f = self.frame
        if f.empty:
            return []
        others = f[~f["recorded"]]
        pairs = zip(others["pred_speedup"], others["meas_speedup"], strict=True)
        return [abs(p / m - 1) for p, m in pairs]

    def told_apart(self) -> tuple[int, int]:
        """Of the setting pairs whose measured ranges are disjoint, how many the prediction
        orders the same way, and how many there are."""
        f = self.frame
        if f.empty or "min_s" not in f.columns:
            return 0, 0
        agree = total = 0
        rows = list(f.itertuples())
        for i, a in enumerate(rows):
            for b in rows[i + 1 :]:
                fast, slow = (a, b) if a.measured_s < b.measured_s else (b, a)
                if fast.max_s < slow.min_s:
                    total += 1
                    agree += fast.predicted_s < slow.predicted_s
        return agree, total

    def reaches(self) -> bool | None:
        if self.recommended is None or self.predicted_recommendation is None:
            return None
        return self.recommended == self.predicted_recommendation


def score(outcome: d.Outcome, record: Path) -> Scored:
    """Predict ``outcome``'s swept settings from its recording and compare."""
    s = Scored(outcome.name, outcome.recorded)
    table = outcome.table
    if table is None:
        s.skipped = "no sweep"
        return s
    rows = _rows_at_recorded_env(table, outcome.env)
    s.grid_size = len(table)
    try:
        run = tftrace.load(record)
        rec_intra = run.manifest.pool("intra_op").size
        intras = sorted({int(v) for v in rows["intra"]})
        if rec_intra == 1:
            intras = [1]
            s.notes.append("recorded at intra-op 1: the intra-op 1 settings only")
        started = time.monotonic()
        guess = tftrace.predict(run, intra=intras, inter=sorted({int(v) for v in rows["inter"]}))
        s.notes.append(f"predicted in {time.monotonic() - started:.1f} s")
        if guess.two_paces and guess.pace is not None and guess.server is not None:
            s.paces = guess.pace.over(guess.server.requests_per_s)
    except TftraceError as e:
        s.skipped = str(e).removeprefix("predict: ")
        return s
    base = d.lookup(rows, outcome.recorded)
    if base is None:
        s.skipped = "the recorded setting is not in the sweep"
        return s
    recorded = guess.setting(*outcome.recorded)
    # the order ``sweep --predict K`` times settings in (settings predicted alike go by what
    # the run shows, then fewer threads), not the replay's rounding
    order = {(p.intra, p.inter): i for i, p in enumerate(guess.ranked())}
    for _, row in rows.iterrows():
        key = (int(row["intra"]), int(row["inter"]))
        if key[0] not in intras:
            continue
        p = guess.setting(*key)
        s.settings.append(
            {
                "intra": key[0],
                "inter": key[1],
                "recorded": key == tuple(outcome.recorded),
                "measured_s": float(row["median_s"]),
                "min_s": float(row["min_s"]),
                "max_s": float(row["max_s"]),
                "predicted_s": 1 / p.served.requests_per_s if p.served else p.step_ms / 1e3,
                "meas_speedup": float(base["median_s"] / row["median_s"]),
                "pred_speedup": p.speedup / recorded.speedup,
                "bound": [b / recorded.speedup for b in p.bound] if p.bound else None,
                "basis": p.basis,
                "reason": p.reason,
                "rank": order[key],
            }
        )
    pick = guess.recommended() or recorded
    s.pick = (pick.intra, pick.inter)
    s.runs = timed_runs(record.parent / "sweep" / "sweep.json", outcome.env, s)
    s.recommended = _recommendation(rows, outcome.recorded)
    timed = _predicted_k(rows, s, PREDICT_K)
    s.timed_k = len(timed)
    s.predicted_recommendation = _recommendation(timed, outcome.recorded)
    return s


def timed_runs(path: Path, env: d.Knobs, s: Scored) -> list[dict[str, Any]]:
    """The sweep's timed runs (``path``: its sweep.json; none where it is not there) of the
    settings ``s`` compares, at the recorded values of ``env``'s variables."""
    runs = (read_json_or_none(path) or {}).get("runs") or []
    compared = {(int(x["intra"]), int(x["inter"])) for x in s.settings}
    return [
        {k: r[k] for k in ("intra", "inter", "round", "time_s")}
        for r in runs
        if (r["intra"], r["inter"]) in compared
        and r.get("time_s") is not None
        and all(str(r.get("env", {}).get(name, value)) == value for name, value in env)
    ]


def _rows_at_recorded_env(table: pd.DataFrame, env: d.Knobs) -> pd.DataFrame:
    rows = table
    for name, value in env:
        if name in rows.columns:
            rows = rows[rows[name].astype(str) == value]
    return rows.reset_index(drop=True)


def _recommendation(rows: pd.DataFrame, recorded: tuple[int, int]) -> str:
    """What a sweep of ``rows`` recommends: the setting that gains beyond noise, or keep."""
    pick, _, gained = d.best_row(rows, recorded)
    return d.label(d._key(pick)) if gained else "keep"


def _predicted_k(rows: pd.DataFrame, s: Scored, k: int) -> pd.DataFrame:
    """The measured rows a ``--predict k`` sweep would have run (``sweep/predicted.py``): the
    recorded setting, the ``k`` others ranked first, as ``sweep --predict k`` ranks them
    (``Prediction.ranked``), and those it times anyway: the settings not predicted (intra-op
    above 1 from a recording at 1) and every one of a server at two paces (``paces``)."""
    f = s.frame
    others = f[~f["recorded"]].nsmallest(k, "rank")
    keep = {tuple(s.recorded)}
    keep |= {(int(a), int(e)) for a, e in zip(others["intra"], others["inter"], strict=True)}
    predicted = {(int(a), int(e)) for a, e in zip(f["intra"], f["inter"], strict=True)}
    if s.paces is not None:  # as ``sweep/predicted.timed_anyway``
        keep |= predicted
    pairs = [(int(a), int(e)) for a, e in zip(rows["intra"], rows["inter"], strict=True)]
    return rows[[p in keep or p not in predicted for p in pairs]].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Pooled figures


def pooled_spearman(scored: Sequence[Scored], over: str = GRID) -> float | None:
    """Spearman between predicted and measured step times over every compared setting, each
    workload's put on the scale ``over`` (``pooled_rank``: GRID, the target's, or RECORDED)."""
    return pooled_spearman_of(_by_setting(scored), "predicted_s", "measured_s", over)


def _by_setting(scored: Sequence[Scored]) -> list[tuple[pd.DataFrame, tuple[int, int]]]:
    """Each workload's compared settings indexed by (intra, inter), with its recorded one."""
    return [
        (s.frame.set_index(["intra", "inter"]), tuple(s.recorded))
        for s in scored
        if s.settings and s.frame["recorded"].any()
    ]


def figures(scored: Sequence[Scored]) -> dict[str, Any]:
    predicted = [s for s in scored if s.skipped is None and s.settings]
    # the point figures are scored where the tool gives one figure a setting; a server at two
    # paces gets spans (``Scored.spans``), scored by how many measurements fall inside them
    points = [s for s in predicted if not s.spans]
    spanned = [s.inside_spans() for s in predicted if s.spans]
    best = [s.best_within() for s in predicted]
    errors = [e for s in points for e in s.errors()]
    reached = [s.reaches() for s in predicted if s.reaches() is not None]
    apart = [s.told_apart() for s in predicted]
    grid = sum(s.grid_size for s in predicted)
    runs_k = sum(s.timed_k for s in predicted)
    return {
        "workloads": len(scored),
        "predicted": len(predicted),
        "spearman": pooled_spearman(points),
        "spearman_over_recorded": pooled_spearman(points, RECORDED),
        # the spans' replayed figures (the recorded mix of the paces) taken as points too
        "spearman_with_spans": pooled_spearman(predicted),
        "two_paces": [s.name for s in predicted if s.spans],
        "inside_spans": tuple(sum(pair) for pair in zip(*spanned, strict=True))
        if spanned
        else (0, 0),
        "best_within": (sum(bool(b) for b in best), len(best)),
        "median_error": float(pd.Series(errors).median()) if errors else None,
        "predict_k": PREDICT_K,
        "runs_saved": (grid - runs_k, grid),
        "reached": (sum(reached), len(reached)),
        "told_apart": tuple(sum(pair) for pair in zip(*apart, strict=True)) if apart else (0, 0),
        "measurement": _measurement(predicted),
        "best_between_halves": _best_between_halves(predicted),
    }


def _measurement(scored: Sequence[Scored]) -> dict[str, float] | None:
    """The measured speedups' agreement with themselves (``split_half``), as a dict."""
    runs = {s.name: pd.DataFrame(s.runs) for s in scored if s.runs}
    found = reliability(runs, {s.name: tuple(s.recorded) for s in scored})
    return (
        {**asdict(found), "rounds_for_target": found.rounds_for(SPEARMAN_TARGET)} if found else None
    )


def _best_between_halves(scored: Sequence[Scored]) -> dict[str, float] | None:
    """The best-setting figure of the measurement against itself (``split_half``)."""
    runs = {s.name: pd.DataFrame(s.runs) for s in scored if s.runs}
    found = best_agreement(runs, BEST_WITHIN)
    return asdict(found) if found else None


def against(scored: Sequence[Scored], other: dict[str, d.Outcome]) -> dict[str, Any] | None:
    """These predictions, and this set's measurement, each rank-correlated with another
    sweep's medians (``other``: its outcomes by name) over the settings both compared, for
    the workloads recorded at the same setting in both; None where none are."""
    parts = []
    for s in scored:
        o = other.get(s.name)
        recorded = tuple(s.recorded)
        if o is None or o.table is None or not s.settings or tuple(o.recorded) != recorded:
            continue
        rows = _rows_at_recorded_env(o.table, o.env)
        theirs = {
            (int(a), int(e)): float(m) for a, e, m in rows[["intra", "inter", "median_s"]].values
        }
        frame = s.frame.set_index(["intra", "inter"])
        frame["other_s"] = [theirs.get(key, math.nan) for key in frame.index]
        frame = frame.dropna(subset=["other_s"])
        if recorded in frame.index and len(frame) >= 2:
            parts.append((frame, recorded))
    if not parts:
        return None
    figure = {
        f"{what}{suffix}": pooled_spearman_of(parts, column, "other_s", over)
        for what, column in (("predicted", "predicted_s"), ("measured", "measured_s"))
        for suffix, over in (("", GRID), ("_over_recorded", RECORDED))
    }
    return {"workloads": len(parts), "points": sum(len(f) for f, _ in parts), **figure}


def _against_line(a: dict[str, Any]) -> str:
    return (
        f"against another sweep ({a['workloads']} workload{'s' * (a['workloads'] != 1)}, "
        f"{a['points']} settings): these "
        f"predictions rank its medians at {_num(a['predicted'])} over each grid "
        f"({_num(a['predicted_over_recorded'])} over the recorded setting); this set's "
        f"measurement, at {_num(a['measured'])} ({_num(a['measured_over_recorded'])})"
    )


def judgements(f: dict[str, Any]) -> list[tuple[str, bool | None]]:
    """Each target as a line and whether it passed (None: nothing to judge)."""

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else "PASS" if ok else "**FAIL**"

    rho = f["spearman"]
    ok_rho = None if rho is None else rho >= SPEARMAN_TARGET
    hits, n = f["best_within"]
    ok_best = None if not n else hits / n >= BEST_TARGET
    err = f["median_error"]
    ok_err = None if err is None else err <= ERROR_TARGET
    saved, grid = f["runs_saved"]
    reached, judged = f["reached"]
    agreed, pairs = f.get("told_apart", (0, 0))
    spans = "; the servers predicted as spans left out, below" if f.get("two_paces") else ""
    return [
        (
            f"rank correlation (pooled, each workload's times over their geometric mean on its "
            f"grid{spans}): "
            # three digits: 0.898 is no pass, and two would print it 0.90
            f"{_num(rho, 3)}  target >= {SPEARMAN_TARGET}: {verdict(ok_rho)}",
            ok_rho,
        ),
        (
            "rank correlation (pooled, each workload's times over its recorded setting's): "
            f"{_num(f.get('spearman_over_recorded'))}  (that one median's noise moves its "
            "workload's every setting)",
            None,
        ),
        *([(_spans_line(f), None)] if f.get("two_paces") else []),
        (
            f"best within {BEST_WITHIN:.0%}: {hits} of {n}"
            + (f" ({hits / n:.0%})" if n else "")
            + f"  target >= {BEST_TARGET:.0%}: {verdict(ok_best)}",
            ok_best,
        ),
        (
            f"median speedup error: {_pct(err)}  target <= {ERROR_TARGET:.0%}: {verdict(ok_err)}",
            ok_err,
        ),
        (
            f"--predict {f['predict_k']}: {saved} of {grid} settings' runs saved"
            + (f" ({saved / grid:.0%})" if grid else "")
            + f"; the whole grid's recommendation reached in {reached} of {judged}",
            None,
        ),
        (
            f"settings the measurement tells apart (disjoint ranges): {agreed} of {pairs} "
            "pairs ordered as measured" + (f" ({agreed / pairs:.0%})" if pairs else ""),
            None,
        ),
        (f"predicted: {f['predicted']} of {f['workloads']} workloads", None),
        (_measurement_line(f.get("measurement")), None),
        *(
            [(_best_halves_line(f["best_between_halves"]), None)]
            if f.get("best_between_halves")
            else []
        ),
        *([(_against_line(f["against"]), None)] if f.get("against") else []),
    ]


def _spans_line(f: dict[str, Any]) -> str:
    """The servers at two paces, predicted as spans: how many measurements fell inside
    them, and the rank correlation with their replayed figures taken as points."""
    names = f["two_paces"]
    inside, of = f["inside_spans"]
    return (
        f"predicted as spans (a server at two paces: {', '.join(names)}): {inside} of {of} "
        f"settings measured inside their span; the rank correlation with each span's replayed "
        f"figure taken as its point: {_num(f.get('spearman_with_spans'), 3)}"
    )


def _measurement_line(m: dict[str, float] | None) -> str:
    if m is None:
        return "the measurement against itself: n/a (fewer than 4 rounds of runs)"
    return (
        f"the measurement against itself: two halves of the runs rank the {m['points']:.0f} "
        f"settings alike at {m['half']:.2f} (mean of {m['splits']:.0f} splits); all the runs, "
        f"{m['full']:.2f} (Spearman-Brown): a prediction free of error would reach about "
        f"{m['ceiling']:.2f} against these medians"
        + (
            f"; a ceiling of {SPEARMAN_TARGET} takes about {m['rounds_for_target']} runs a setting"
            if m.get("rounds_for_target") and m["ceiling"] < SPEARMAN_TARGET
            else ""
        )
    )


def _best_halves_line(b: dict[str, float]) -> str:
    return (
        f"the measurement against itself, best setting: the fastest by half of the runs ran "
        f"within {b['within']:.0%} of the fastest by the other half in {b['hits']:.1f} of "
        f"{b['workloads']:.0f} workloads (mean over {b['splits']:.0f} splits, both ways)"
    )


def _num(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


HEADER = ("workload", "recorded", "settings", "spearman", "best (pred / meas)", "within 5%?",
          "median error", "grid says", "--predict 2 says")  # fmt: skip


def rows(scored: Sequence[Scored]) -> list[tuple[str, ...]]:
    body = []
    for s in scored:
        rec = d.label(s.recorded)
        if s.skipped is not None:
            body.append((s.name, rec, "-", "-", f"not predicted: {s.skipped}", "-", "-", "-", "-"))
            continue
        f = s.frame
        pred = s.picked()
        meas = f.loc[f["measured_s"].idxmin()]
        errors = s.errors()
        best = (
            f"{d.label((int(pred['intra']), int(pred['inter'])))} / "
            f"{d.label((int(meas['intra']), int(meas['inter'])))}"
        )
        body.append(
            (
                s.name,
                rec,
                str(len(f)),
                _num(s.spearman()),
                best,
                d._yes(s.best_within()),
                _pct(float(pd.Series(errors).median()) if errors else None),
                s.recommended or "-",
                s.predicted_recommendation or "-",
            )
        )
    return body


def detail(scored: Sequence[Scored]) -> list[str]:
    """Each compared setting's predicted and measured speedup, per workload."""
    lines = []
    for s in scored:
        if s.skipped is not None or not s.settings:
            continue
        cells = ", ".join(
            f"{d.label((r['intra'], r['inter']))} {r['pred_speedup']:.2f}/{r['meas_speedup']:.2f}"
            for r in s.settings
            if not r["recorded"]
        )
        lines.append(f"- {s.name} (predicted/measured speedup): {cells}")
        if s.paces is not None:
            inside, of = s.inside_spans()
            spans = ", ".join(
                f"{d.label((r['intra'], r['inter']))} {r['bound'][0]:.2f}-{r['bound'][1]:.2f}"
                for r in s.settings
                if r.get("bound")
            )
            lines.append(
                f"  {s.name} ran at two paces, {s.paces[0]:.2f}x and {s.paces[1]:.2f}x its "
                f"window's requests/s; predicted spans: {spans}: {inside} of {of} settings "
                "measured inside theirs"
            )
    return lines


# ---------------------------------------------------------------------------------------------
# Running


def saved(dirs: Sequence[Path]) -> dict[str, tuple[d.Outcome, Path]]:
    """The workloads saved under ``dirs`` (each with results.json), by name, with the folder
    of each one's recording; a later folder's workload replaces an earlier one's."""
    by_name: dict[str, tuple[d.Outcome, Path]] = {}
    for folder in dirs:
        path = folder / "results.json"
        for outcome in d.outcomes_of(path, d.read_results(path)):
            by_name[outcome.name] = (outcome, folder / outcome.name / "record")
    return by_name


def without_results(dirs: Sequence[Path]) -> Path | None:
    """The first of ``dirs`` without a results.json (not a saved run of the corpus), or None."""
    return next((p for p in dirs if not (p / "results.json").is_file()), None)


def from_saved(dirs: Sequence[Path]) -> tuple[list[Scored], list[Path]]:
    """Score the diagnosis runs saved under ``dirs`` (each with results.json); the scores and
    the recordings scored."""
    by_name = saved(dirs)
    records = [record for _, record in by_name.values()]
    return [_safe_score(o, record) for o, record in by_name.values()], records


def _safe_score(outcome: d.Outcome, record: Path) -> Scored:
    d._say(f"{outcome.name}: predict from {record}")
    try:
        return score(outcome, record)
    except Exception as e:  # one workload's bug is its row, not the end of the benchmark
        traceback.print_exc(file=sys.stderr)
        return Scored(outcome.name, outcome.recorded, skipped=f"{type(e).__name__}: {e}")


def record_and_sweep(w: d.Workload, cpus: int, repeat: int, out: Path) -> d.Outcome:
    """``diagnosis.run_one`` without the verifications: record once, sweep the grid."""
    outcome = d.Outcome(w.name, w.recorded, objective=w.objective, env=w.env)
    env = {
        **d.RECORD_ENV,
        "TF_NUM_INTRAOP_THREADS": str(w.intra),
        "TF_NUM_INTEROP_THREADS": str(w.inter),
        **dict(w.env),
    }
    burner = d._start_burner(out) if w.beside else None
    try:
        rec = tftrace.record(
            w.script, list(w.args), output=out / "record", pyspy=False, env=env, echo=False
        )
        if rec.exit_code != 0:
            outcome.errors.append(f"the workload exited with {rec.exit_code}")
        d._sweep(w, cpus, repeat, out, outcome)
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
    return outcome


HELD_OUT_SCRIPTS = Path(__file__).resolve().parent / "workloads"


def held_out(cpus: int) -> list[d.Workload]:
    """Real models kept out of the corpus the model was shaped on, recorded at ``cpus`` /
    ``cpus`` as the corpus's loops are: how its figures hold on workloads it never saw."""

    def fit(name: str, script: str, about: str) -> d.Workload:
        return d.Workload(name, HELD_OUT_SCRIPTS / script, (), cpus, cpus, about)

    return [
        fit("keras-lstm", "keras_fit_lstm.py", "Keras fit of an LSTM text classifier"),
        fit("keras-transformer", "keras_fit_transformer.py",
            "Keras fit of two transformer encoder blocks"),
        fit("keras-efficientnet", "keras_fit_efficientnet.py",
            "Keras fit of EfficientNetB0 (weights=None)"),
    ]  # fmt: skip


def run_corpus(entries: Sequence[d.Workload], repeat: int, out: Path) -> list[Scored]:
    cpus = len(os.sched_getaffinity(0))
    scored, outcomes = [], []
    for i, w in enumerate(entries, 1):
        d._say(f"[{i}/{len(entries)}] {w.name}: record and sweep (repeat {repeat})")
        outcome = record_and_sweep(w, cpus, repeat, out / w.name)
        outcomes.append(outcome)
        # saved as each workload ends: ``--from OUT`` scores them again, on another machine too
        d._write_results(out, outcomes, cpus, (repeat, 0))
        scored.append(_safe_score(outcome, out / w.name / "record"))
    return scored


def recorded_on(records: Sequence[Path]) -> str:
    """Where the scored runs were recorded (their manifests' CPU, usable cores, TensorFlow):
    runs saved on another machine are scored here, and the table says where they ran."""
    seen = []
    for record in records:
        try:
            manifest = read_manifest(record / "manifest.json")
        except TftraceError:
            continue
        model = manifest.raw.get("host", {}).get("cpu_model", "unknown")
        tf = manifest.versions.get("tensorflow_runtime", "unknown")
        where = f"CPU: {model}; usable cores: {manifest.usable_cpus}; TensorFlow {tf}"
        if where not in seen:
            seen.append(where)
    return "; ".join(seen) or "unknown (no manifest read)"


def markdown(
    scored: Sequence[Scored], lines: Sequence[str], source: str, records: Sequence[Path]
) -> str:
    return "\n".join(
        [
            f"- recorded on {markdown_text(recorded_on(records))}",  # a manifest's words
            f"- tftrace: {d.source_version()}; {source}",
            "",
            d.markdown_table(HEADER, rows(scored)),
            "",
            *[f"- {line}" for line in lines],
            "",
            *detail(scored),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--from",
        dest="saved",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="score saved diagnosis runs (diagnosis.py --output DIR)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="another sweep of the corpus (saved runs): score the predictions against it too",
    )
    parser.add_argument("--only", help="comma-separated workload names (when running)")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="run the held-out real models instead of the corpus (when running)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=d.DEFAULT_REPEAT,
        help="timed runs per setting in a sweep (when running)",
    )
    parser.add_argument("--output", type=Path, help="directory for the runs (when running)")
    parser.add_argument("--markdown", type=Path, help="write the table and figures here")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)  # fmt: skip
    # checked before any workload runs: a run of the corpus takes 40 minutes
    missing = without_results([*(args.saved or ()), *(args.against or ())])
    if missing is not None:
        parser.error(f"{missing}: no results.json (give diagnosis.py's --output folder)")
    other = {n: o for n, (o, _) in saved(args.against).items()} if args.against else None
    if args.saved:
        scored, records = from_saved(args.saved)
        source = "from the saved runs of " + ", ".join(str(p) for p in args.saved)
    else:
        names = [n.strip() for n in args.only.split(",")] if args.only else None
        cpus = len(os.sched_getaffinity(0))
        workloads = held_out(cpus) if args.held_out else d.corpus(cpus)
        known = [w.name for w in workloads]
        unknown = [n for n in names or [] if n not in known]
        if unknown:
            parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(known)}")
        out = args.output or Path(tempfile.mkdtemp(prefix="tftrace-predict-"))
        entries = [w for w in workloads if names is None or w.name in names]
        scored = run_corpus(entries, args.repeat, out)
        which = "the held-out models" if args.held_out else "the corpus"
        source = f"{which}, recorded and swept here (repeat {args.repeat}), runs in {out}"
        records = [out / s.name / "record" for s in scored]
    found = figures(scored)
    if other is not None:
        found["against"] = against(scored, other)
    lines = judgements(found)
    print(d.text_table(HEADER, rows(scored)))
    print()
    for line, _ in lines:
        print(line)
    print()
    print("\n".join(detail(scored)))
    if args.markdown:
        args.markdown.write_text(markdown(scored, [line for line, _ in lines], source, records))
        print(f"wrote {args.markdown}")
    if args.json:
        args.json.write_text(
            json.dumps({"figures": found, "workloads": [asdict(s) for s in scored]}, indent=2)
        )
    missed = any(ok is False for _, ok in lines)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
