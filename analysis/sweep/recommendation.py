"""A sweep's verdict in sentences: which setting to use, what is within noise, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tftrace.analysis.sweep.stats import MIN_REPEATS, label, setting_key
from tftrace.analysis.sweep.timing import Objective

if TYPE_CHECKING:
    from tftrace.analysis.sweep.result import SweepResult


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
