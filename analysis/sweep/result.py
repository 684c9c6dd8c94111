"""From a sweep's runs to its result: effective settings, verdict, warnings and why.

Inputs are the timed runs' rows (``runs.time_run`` / ``runs.time_copies``: each timed from its
files), so that this module never runs anything; ``tftrace.sweep`` and the tests feed it, and
``load_sweep`` rebuilds them from a finished sweep directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from tftrace.analysis.sweep.outcome import RecordedView, SweepResult
from tftrace.analysis.sweep.runs import POOLS, time_copies, time_run, usable_cpus
from tftrace.analysis.sweep.stats import (
    FIGURE_COLUMNS,
    beyond_cpus,
    label,
    label_of,
    setting_of,
    summarize,
    verdict,
)
from tftrace.analysis.sweep.timing import LATENCY_COLUMNS, Measure, Objective, as_objective
from tftrace.errors import TftraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.sweep import SWEEP_FILE, SWEEP_KIND, Setting, TimedRun
from tftrace.tracer.sweep_setting import cpus_words

# Copies whose windows share less than this of the longest one did not run at once.
TOGETHER = 0.5


def copies_of(result: SweepResult) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Per setting with instances (by ``Setting.key()``), each copy's figures: its CPUs
    (from the first round) and the medians over the rounds of its ``per_s`` and latency."""
    if "copies" not in result.runs.columns:
        return {}
    keys = [setting_of(r).key() for _, r in result.runs.iterrows()]
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for key in dict.fromkeys(keys):
        mine = result.runs[[k == key for k in keys]]
        frame = pd.DataFrame([c for copies in mine["copies"] for c in copies])
        figures = frame[["per_s", *LATENCY_COLUMNS]].apply(pd.to_numeric, errors="coerce")
        medians = figures.groupby(frame["copy"], sort=True).median()
        cpus = frame.groupby("copy", sort=True)["cpus"].first()
        out[key] = [
            {"copy": int(i), "cpus": list(cpus.loc[i]), **medians.loc[i].to_dict()}
            for i in medians.index
        ]
    return out


def ignored_setters_warning(runs: pd.DataFrame) -> list[str]:
    """The script's own setter calls that the sweep recorded and did not apply: one warning."""
    calls = [c for key in POOLS for cs in runs[f"{key}_calls"] for c in cs]
    ignored = dict.fromkeys(
        f"{c['setter']}({c['value']})" for c in calls if c.get("applied", True) is False
    )
    if not ignored:
        return []
    return [
        f"the script calls {', '.join(ignored)} itself: ignored, the sweep sets the pools; "
        "use --keep-script-settings to apply them"
    ]


def override_warnings(runs: pd.DataFrame, cpus: int) -> list[str]:
    """Settings the workload changed or ignored: what was asked for is not what ran."""
    out = ignored_setters_warning(runs)
    for key in POOLS:
        asked = runs[key]
        if asked.isna().all():
            continue
        wanted = asked.fillna(0).astype(int).replace(0, cpus)
        differ = runs[runs[f"{key}_effective"].astype("Int64") != wanted]
        failed = [c for calls in runs[f"{key}_calls"] for c in calls if c.get("error")]
        if failed:
            c = failed[0]
            out.append(
                f"the script calls {c['setter']}({c['value']}) after TensorFlow started; it "
                f"fails ({c['error'].split(':')[0]}), so the script's own setting is ignored"
            )
        if differ.empty:
            continue
        ok = [
            c
            for calls in differ[f"{key}_calls"]
            for c in calls
            if not c.get("error") and c.get("applied", True)
        ]
        sizes = sorted({int(v) for v in differ[f"{key}_effective"].dropna()})
        if ok:
            out.append(
                f"the script sets {ok[-1]['setter']}({ok[-1]['value']}) itself, which overrides "
                f"the sweep's {key}-op values: those runs used {key}-op "
                f"{', '.join(map(str, sizes))} whatever was asked"
            )
        else:
            out.append(
                f"{len(differ)} run(s) did not get the {key}-op size asked for "
                f"(got {', '.join(map(str, sizes))})"
            )
    effective = runs[["intra_effective", "inter_effective"]].drop_duplicates()
    asked_settings = runs[["intra", "inter"]].drop_duplicates()
    if len(asked_settings) > 1 and len(effective) == 1:
        e = effective.iloc[0]
        out.append(
            "every run used the same pool sizes "
            f"({label_of(e['intra_effective'], e['inter_effective'])}): the sweep compared one "
            "setting with itself"
        )
    return out


def build(
    rows: Sequence[dict[str, Any]],
    cpus: int,
    baseline: Setting | tuple[int | None, ...],
    target: list[str],
    objective: Objective | str = Objective.THROUGHPUT,
) -> SweepResult:
    """The result from the runs' rows, as ``time_run`` (or ``time_copies``) gives them;
    ``baseline`` is the baseline ``Setting`` (or its pools: (intra, inter[, instances]));
    ``cpus``, the CPUs the sweep may use."""
    objective = as_objective(objective)
    runs = pd.DataFrame(rows)
    for key in ("intra", "inter", "instances", "cores", "cpus"):
        if key in runs.columns:
            runs[key] = runs[key].astype("Int64")
    for name in FIGURE_COLUMNS:
        if name in runs.columns:
            runs[name] = pd.to_numeric(runs[name], errors="coerce")
    server = bool("server" in runs.columns and runs["server"].fillna(False).astype(bool).any())
    table = summarize(runs, baseline)
    warnings = override_warnings(runs, cpus)
    for i in beyond_cpus(table, cpus):
        pinned = setting_of(table.loc[i]).cpus
        than = f"the {cpus} CPUs this process may use"
        if pinned is not None:
            than = f"the {cpus_words(pinned)} it is pinned to"
        warnings.append(
            f"{label(table.loc[i])} asks for more threads in one pool than {than}: it "
            "measures oversubscription"
        )
    bases = list(dict.fromkeys(runs["basis"]))
    if len(bases) > 1:
        warnings.append("runs were timed differently: " + "; ".join(bases))
    unit = "s/step" if runs["steps"].notna().all() else "s"
    if objective is not Objective.THROUGHPUT:
        unit = f"s ({objective.words()})"
    elif server:
        unit = "s/request"
    if "together" in runs.columns:
        apart = runs[pd.to_numeric(runs["together"], errors="coerce") < TOGETHER]
        if len(apart):
            least = float(pd.to_numeric(apart["together"]).min())
            warnings.append(
                f"in {len(apart)} run(s) the copies' windows overlapped for as little as "
                f"{least:.0%} of the longest one: their summed rate counts copies that did not "
                "all run at once (give the workload more requests or steps)"
            )
    if "instances" in runs.columns:
        pairs = zip(table["instances"], table["cores"], strict=True)
        left = {int(k): cpus - int(k) * int(c) for k, c in pairs}
        for k, n in left.items():
            if n:
                warnings.append(
                    f"{cpus} CPUs do not split evenly into {k} copies: {n} CPU(s) stay unused"
                )
    return SweepResult(
        target,
        cpus,
        unit,
        bases,
        runs,
        table,
        verdict(table, cpus),
        warnings,
        objective=objective,
        server=server,
    )


def recorded_view(path: Path) -> RecordedView:
    """Analyse one fully recorded run (the heavy part: load, analyse, diagnose)."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.metrics.concurrency import pools_table
    from tftrace.analysis.model.pools import Pool
    from tftrace.analysis.model.run import load

    run = load(path)
    analysis = analyze(run)
    # The sweep pinned the pool sizes on purpose: saying so again is noise.
    findings = [f for f in analysis.findings if not f.id.endswith("pinned-vs-cpus")]
    # Concurrency over the same steady span the timed runs measure, when the trace has steps.
    steps = analysis.steps.table
    table = analysis.pools
    over = "the trace window"
    if len(steps) >= 2:
        window = (int(steps["end_ns"].iloc[0]), int(steps["end_ns"].iloc[-1]))
        table = pools_table(run, window)
        over = f"the steady steps ({analysis.steps.source})"
    pools = table.set_index("pool") if len(table) else pd.DataFrame()

    def mean(pool: Pool) -> float | None:
        if pool.value not in pools.index:
            return None
        return float(pools.loc[pool.value, "mean"])

    shares = analysis.breakdown.sort_values("share", ascending=False)
    top = (str(shares.iloc[0]["category"]), float(shares.iloc[0]["share"])) if len(shares) else None
    return RecordedView(
        mean(Pool.INTRA_OP),
        mean(Pool.INTER_OP),
        findings[0] if findings else None,
        top,
        path,
        over,
    )


class SweepDirError(TftraceError):
    """A directory that is not a readable sweep (one line for the user)."""


# What a sweep.json of the wrong shape raises while it is read (someone else's directory).
DAMAGED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def load_sweep(path: Path) -> SweepResult:
    """A finished sweep again, from its directory: the runs are re-timed from their files
    and the recorded runs re-analysed; the warnings are the ones the sweep gave. A damaged
    sweep.json or run, or a run named outside the directory, is one ``SweepDirError``."""
    try:
        return _load_sweep(path)
    except TftraceError:
        raise
    except DAMAGED as e:
        raise SweepDirError(f"{path}: sweep.json is damaged ({type(e).__name__}: {e})") from None


def inside(path: Path, name: object) -> Path:
    """``path / name`` where ``name`` is a relative path that stays inside ``path``."""
    if not isinstance(name, str) or not name or Path(name).is_absolute():
        raise ValueError(f"a run's path must be relative to the sweep: {name!r}")
    if ".." in Path(name).parts:
        raise ValueError(f"a run's path leaves the sweep: {name!r}")
    return path / name


def _load_sweep(path: Path) -> SweepResult:
    data = rundir.read_json_or_none(path / SWEEP_FILE)
    if data is None or data.get("kind") != SWEEP_KIND:
        raise SweepDirError(f"{path}: not a sweep directory (no readable sweep.json)")
    options = data.get("options") or {}
    groups: list[list[TimedRun]] = []
    for r in data.get("runs") or []:
        setting = Setting.from_json(r)
        copies = r.get("copies")
        if copies is None:
            groups.append([_timed(inside(path, r["path"]), setting, r["round"], r["wall_s"], r)])
            continue
        groups.append(
            [
                replace(
                    _timed(inside(path, c["path"]), setting, r["round"], r["wall_s"], {}),
                    copy=c["copy"],
                    cpus=tuple(c.get("cpus") or ()),
                )
                for c in copies
            ]
        )
    if not groups:
        raise SweepDirError(f"{path}: the sweep has no finished run")
    (base,) = [s for s in data["settings"] if s.get("is_baseline")]
    how = Measure(options.get("measure") or "auto")
    warmup = int(options.get("warmup_steps") or 1)
    objective = as_objective(options.get("objective") or Objective.THROUGHPUT)
    marker = options.get("marker")
    rows = [
        time_copies(g, how, marker, warmup, objective)
        if g[0].copy is not None
        else time_run(g[0], how, marker, warmup, objective)
        for g in groups
    ]
    cpus = data.get("cpus")  # the sweep's CPUs: a pinned run's manifest has fewer
    result = build(
        rows,
        int(cpus) if cpus else usable_cpus(groups[0][0].manifest),
        Setting.from_json(base),
        list(data.get("target") or []),
        objective,
    )
    result.warnings[:] = list(data.get("warnings") or [])
    for s in data["settings"]:
        if s.get("recorded_run"):
            result.recorded[Setting.from_json(s).key()] = recorded_view(
                inside(path, s["recorded_run"])
            )
    return replace(result, output=path, options=options, created=data.get("created"))


def _timed(
    run_path: Path, setting: Setting, round_: int, wall_s: float, row: dict[str, Any]
) -> TimedRun:
    manifest = rundir.read_json_or_none(run_path / rundir.MANIFEST)
    if manifest is None:
        raise SweepDirError(f"{run_path}: the run's manifest.json is missing or damaged")
    return TimedRun(
        setting, round_, run_path, wall_s, row.get("process_cpu_s"), Manifest.from_json(manifest)
    )
