"""A sweep's verdict in sentences: which setting to use, what is within noise, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tftrace.analysis.sweep.stats import MIN_REPEATS, label, setting_key

if TYPE_CHECKING:
    from tftrace.analysis.sweep.result import SweepResult


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
