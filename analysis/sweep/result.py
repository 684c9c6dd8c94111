"""From a sweep's runs to its result: timings, effective settings, verdict, warnings and why.

Inputs are the timed runs' records (``TimedRun``: the run directory, the setting asked for,
what the parent measured), so that this module never runs anything; ``tftrace.sweep`` and the
tests feed it, and ``load_sweep`` rebuilds them from a finished sweep directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from tftrace.analysis.sweep.stats import (
    Verdict,
    beyond_cpus,
    label,
    label_of,
    setting_key,
    summarize,
    verdict,
)
from tftrace.analysis.sweep.timing import Measure, measure, steps_frame
from tftrace.errors import TftraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.sweep import SWEEP_FILE, SWEEP_KIND, Setting, TimedRun

POOLS = {"intra": "intra_op", "inter": "inter_op"}
SETTERS = {key: f"set_{pool}_parallelism_threads" for key, pool in POOLS.items()}


@dataclass(frozen=True)
class RecordedView:
    """What the analysis of a fully recorded run says about one setting."""

    intra_concurrency: float | None
    inter_concurrency: float | None
    finding: Any | None  # the most severe Finding, if any
    top_category: tuple[str, float] | None  # the breakdown's largest share
    path: Path
    concurrency_over: str = "the trace window"


@dataclass(frozen=True)
class SweepResult:
    """A sweep's figures and verdict.

    ``table`` has one row per setting (median time, spread, speedup, CPU use), ``runs`` one
    row per timed run; ``verdict`` indexes ``table``. ``recommended`` is the setting to use
    and ``recommendation`` says why in sentences. ``output`` is the sweep directory (with
    ``sweep.json`` and ``speedup.png``), ``options`` what the sweep was asked, as written there.
    Example::

        result = tftrace.sweep("train.py", intra=[1, 2, 4])
        print(result.recommended.label(), result.table[["median_s", "speedup"]])
    """

    target: list[str]
    cpus: int
    unit: str  # "s/step" when the timed spans are steps, else "s"
    bases: list[str]
    runs: pd.DataFrame
    table: pd.DataFrame
    verdict: Verdict
    warnings: list[str]
    recorded: dict[tuple[int | None, int | None], RecordedView] = field(default_factory=dict)
    output: Path | None = None  # the sweep directory, once written
    options: dict[str, Any] = field(default_factory=dict)  # sweep.json's "options"
    created: str | None = None  # when sweep.json was written (ISO 8601)

    @property
    def recommended(self) -> Setting:
        """The setting to use: the fastest beyond noise, else the baseline (or, with too few
        runs to judge, the fastest median)."""
        return Setting(*setting_key(self.table.loc[self.verdict.recommended]))

    @property
    def recommendation(self) -> list[str]:
        """The verdict in sentences, most important first (as ``tftrace sweep`` prints it)."""
        from tftrace.analysis.sweep.recommendation import recommendation

        return recommendation(self)


def usable_cpus(manifest: Manifest) -> int:
    """``Manifest.usable_cpus`` of a run; 1 when it does not say."""
    return manifest.usable_cpus or 1


def time_run(facts: TimedRun, how: Measure, marker: str | None, warmup: int = 1) -> dict[str, Any]:
    """One row of the runs table: the timing and the pool sizes the run really had."""
    steps = steps_frame(rundir.read_json_or_none(facts.path / rundir.STEPS))
    report = rundir.read_json_or_none(facts.path / rundir.WORKLOAD_REPORT) or {}
    timing = measure(steps, report, how, marker, (facts.wall_s, facts.cpu_s), warmup)
    manifest = facts.manifest
    cpus = usable_cpus(facts.manifest)
    row: dict[str, Any] = {
        "intra": facts.setting.intra,
        "inter": facts.setting.inter,
        "round": facts.round,
        "time_s": timing.per_unit,
        "span_s": timing.seconds,
        "steps": timing.steps,
        "cpu_util": (
            timing.cpu_seconds / (timing.seconds * cpus)
            if timing.cpu_seconds is not None and timing.seconds > 0
            else None
        ),
        "basis": timing.basis,
        "wall_s": facts.wall_s,
        "process_cpu_s": facts.cpu_s,
        "path": str(facts.path),
    }
    for key, pool in POOLS.items():
        calls = manifest.workload.setter_calls
        row[f"{key}_effective"] = manifest.pool(pool).size
        row[f"{key}_source"] = manifest.pool(pool).source
        row[f"{key}_calls"] = [c.to_json() for c in calls if c.setter == SETTERS[key]]
    return row


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
    baseline: tuple[int | None, int | None],
    target: list[str],
) -> SweepResult:
    """The result from the runs' rows, as ``time_run`` gives them."""
    runs = pd.DataFrame(rows)
    runs["intra"] = runs["intra"].astype("Int64")
    runs["inter"] = runs["inter"].astype("Int64")
    table = summarize(runs, baseline)
    warnings = override_warnings(runs, cpus)
    for i in beyond_cpus(table, cpus):
        warnings.append(
            f"{label(table.loc[i])} asks for more threads in one pool than the {cpus} CPUs "
            "this process may use: it measures oversubscription"
        )
    bases = list(dict.fromkeys(runs["basis"]))
    if len(bases) > 1:
        warnings.append("runs were timed differently: " + "; ".join(bases))
    unit = "s/step" if runs["steps"].notna().all() else "s"
    return SweepResult(target, cpus, unit, bases, runs, table, verdict(table, cpus), warnings)


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


def load_sweep(path: Path) -> SweepResult:
    """A finished sweep again, from its directory: the runs are re-timed from their files
    and the recorded runs re-analysed; the warnings are the ones the sweep gave."""
    data = rundir.read_json_or_none(path / SWEEP_FILE)
    if data is None or data.get("kind") != SWEEP_KIND:
        raise SweepDirError(f"{path}: not a sweep directory (no readable sweep.json)")
    options = data.get("options") or {}
    facts = []
    for r in data.get("runs") or []:
        run_path = path / r["path"]
        manifest = rundir.read_json_or_none(run_path / rundir.MANIFEST)
        if manifest is None:
            raise SweepDirError(f"{run_path}: the run's manifest.json is missing or damaged")
        facts.append(
            TimedRun(
                Setting(r["intra"], r["inter"]),
                r["round"],
                run_path,
                r["wall_s"],
                r.get("process_cpu_s"),
                Manifest.from_json(manifest),
            )
        )
    if not facts:
        raise SweepDirError(f"{path}: the sweep has no finished run")
    (base,) = [s for s in data["settings"] if s.get("is_baseline")]
    how = Measure(options.get("measure") or "auto")
    warmup = int(options.get("warmup_steps") or 1)
    result = build(
        [time_run(f, how, options.get("marker"), warmup) for f in facts],
        usable_cpus(facts[0].manifest),
        (base["intra"], base["inter"]),
        list(data.get("target") or []),
    )
    result.warnings[:] = list(data.get("warnings") or [])
    for s in data["settings"]:
        if s.get("recorded_run"):
            result.recorded[(s["intra"], s["inter"])] = recorded_view(path / s["recorded_run"])
    return replace(result, output=path, options=options, created=data.get("created"))
