"""``SweepResult``: a sweep's figures and verdict, and that verdict in sentences (which
setting to use, what is within noise, and why). ``result`` builds it from the timed runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from tftrace.analysis.sweep.stats import MIN_REPEATS, Verdict, label, setting_key, setting_of
from tftrace.analysis.sweep.timing import Objective
from tftrace.tracer.sweep import Setting

if TYPE_CHECKING:
    from tftrace.analysis.sweep.predicted import Narrowed


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

    ``median_s`` (and each run's ``time_s``) is the ``objective``'s figure, lower is better:
    seconds per step (a server's request) for throughput, else the latency percentile in
    seconds; ``speedup`` is the baseline's over it. Both tables also have ``per_s`` (steps or
    requests per second) and ``p50_ms``, ``p90_ms``, ``p99_ms``, ``max_ms`` (their latency);
    ``server`` says the runs were timed as a server. With instances (``tftrace sweep
    --instances``) a run is a setting's copies at once: ``per_s`` is their sum, the latencies
    are over all their requests, and ``copies`` has each copy's own.
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
    # By ``Setting.key()``: (intra, inter), with the instances when the sweep ran copies,
    # then the CPUs and variables where the settings have them.
    recorded: dict[tuple[Any, ...], RecordedView] = field(default_factory=dict)
    output: Path | None = None  # the sweep directory, once written
    options: dict[str, Any] = field(default_factory=dict)  # sweep.json's "options"
    created: str | None = None  # when sweep.json was written (ISO 8601)
    objective: Objective = Objective.THROUGHPUT  # what the runs are compared by
    server: bool = False  # the runs were timed as a server (requests on several threads)
    # ``sweep(predict=K)``: the grid, its predictions and the settings timed; None without
    predicted: Narrowed | None = None

    @property
    def recommended(self) -> Setting:
        """The setting to use: the fastest beyond noise, else the baseline (or, with too few
        runs to judge, the fastest median)."""
        return setting_of(self.table.loc[self.verdict.recommended])

    @property
    def instances(self) -> bool:
        """Whether the sweep ran settings as several copies at once (``--instances``)."""
        return "instances" in self.table.columns

    @property
    def shows_latency(self) -> bool:
        """Whether the table shows rates and latencies: a server, instances, or an objective
        other than throughput. A loop compared by throughput shows its time per step only."""
        return self.server or self.instances or self.objective is not Objective.THROUGHPUT

    @property
    def recommendation(self) -> list[str]:
        """The verdict in sentences, most important first (as ``tftrace sweep`` prints it)."""
        return recommendation(self)


def measure_words(result: SweepResult) -> str:
    """What decided, in words: ``throughput (requests/s)``, ``p99 latency``..."""
    if result.objective is Objective.THROUGHPUT:
        return f"throughput ({result.objective.words(result.server)})"
    return result.objective.words()


def _why(result: SweepResult, rows: list[pd.Series]) -> str | None:
    """The first of ``rows`` with a recorded run that says something: a serious finding,
    else where its time went."""
    for row in rows:
        view = result.recorded.get(setting_key(row))
        finding = view.finding if view is not None else None
        if finding is not None and finding.severity.value in ("high", "medium"):
            return f"in the recorded run of {label(row)}: {finding.message}"
    for row in rows:
        view = result.recorded.get(setting_key(row))
        if view is not None and view.top_category is not None:
            category, share = view.top_category
            return f"in the recorded run of {label(row)}, {share:.0%} of the time is {category}."
    return None


def recommendation(result: SweepResult) -> list[str]:
    """The verdict in sentences, most important first."""
    if result.shows_latency:
        return _by_objective(result)
    t, v = result.table, result.verdict
    pick, fastest = t.loc[v.recommended], t.loc[v.fastest]
    base = t[t["is_baseline"]].iloc[0]
    lines: list[str] = []
    if v.kind == "too-few-runs":
        lines.append(
            f"Only {int(t['runs'].min())} run(s) per setting: too few to tell a difference "
            f"from noise (use --repeat {MIN_REPEATS} or more). Fastest median: {label(fastest)}."
        )
    elif v.kind == "no-difference":
        lines.append(
            "No significant difference: no setting beats the baseline "
            f"({label(base)}) beyond the run-to-run spread"
            + (
                f" (the fastest median, {label(fastest)}, is {fastest['speedup']:.2f}x, "
                "within noise)."
                if v.fastest != v.recommended
                else "."
            )
            + f" Keep {label(base)}."
        )
    else:
        lines.append(
            f"Use {label(pick)}: {pick['speedup']:.2f}x faster than {label(base)} "
            f"({pick['speedup_lo']:.2f}-{pick['speedup_hi']:.2f}x across the repeats)."
        )
        others = [label(t.loc[i]) for i in v.tied if i != v.recommended]
        if others:
            lines.append(
                f"{', '.join(others)}: as fast within noise, with at least as many threads."
            )
    if v.slower:
        names = ", ".join(label(t.loc[i]) for i in v.slower)
        lines.append(f"Slower beyond noise than {label(pick)}: {names}.")
    why = _why(result, [base, pick])
    if why:
        lines.append(f"Why: {why}")
    return lines


def _by_objective(result: SweepResult) -> list[str]:
    """The verdict of a server (or instances, or a latency objective) in sentences, which
    name the objective: requests/s, steps/s or a latency percentile."""
    t, v = result.table, result.verdict
    pick, best = t.loc[v.recommended], t.loc[v.fastest]
    base = t[t["is_baseline"]].iloc[0]
    goal = result.objective
    what = goal.words(result.server)  # "requests/s", "steps/s", "p99 latency"

    def gain(row: pd.Series) -> str:
        if goal is Objective.THROUGHPUT:
            said = f"{row['speedup']:.2f}x the {what} of {label(base)}"
        else:
            said = (
                f"{what} {row['median_s'] * 1e3:.3g} ms against {base['median_s'] * 1e3:.3g} ms "
                f"for {label(base)}, {row['speedup']:.2f}x lower"
            )
        return f"{said} ({row['speedup_lo']:.2f}-{row['speedup_hi']:.2f}x across the repeats)"

    lines: list[str] = []
    if v.kind == "too-few-runs":
        lines.append(
            f"Only {int(t['runs'].min())} run(s) per setting: too few to tell a difference "
            f"from noise (use --repeat {MIN_REPEATS} or more). Best median {what}: "
            f"{label(best)}."
        )
    elif v.kind == "no-difference":
        lines.append(
            f"No significant difference in {what}, the objective: no setting beats the "
            f"baseline ({label(base)}) beyond the run-to-run spread"
            + (
                f" (the best median, {label(best)}, is {best['speedup']:.2f}x, within noise)."
                if v.fastest != v.recommended
                else "."
            )
            + f" Keep {label(base)}."
        )
    else:
        lines.append(f"Use {label(pick)}: {gain(pick)}; objective: {measure_words(result)}.")
        others = [label(t.loc[i]) for i in v.tied if i != v.recommended]
        if others:
            lines.append(
                f"{', '.join(others)}: as good within noise, with at least as many copies "
                "and threads."
            )
    if v.slower:
        names = ", ".join(label(t.loc[i]) for i in v.slower)
        lines.append(f"Worse beyond noise than {label(pick)} on {what}: {names}.")
    why = _why(result, [base, pick])
    if why:
        lines.append(f"Why: {why}")
    return lines
