"""Steps: the repeated unit of work on the main thread, and the breakdown of each.

The user's own step markers (``Trace(name, step_num=N)`` blocks) are the steps whenever they
exist (``work.py``). Else, in order of preference by how much of the trace they cover:
- calls of one tf.function from the main thread: the annotation TF writes with the function's
  name around each call (tracing included), else its ``__inference_<name>_<id>`` op; Keras'
  ``train_function`` is one, Keras 3's ``multi_step_on_iterator`` another (with
  ``steps_per_execution=k`` each call runs k batches);
- a user annotation repeated on the main thread (``tf.profiler.experimental.Trace``).

Steps are numbered from 1. ``batches`` is the number of input elements a step fetched (the
iterator's get-next kernels inside it, on any thread), so a Keras step shows its k batches; 0
where the step fetches none itself (a loop that calls ``next(iterator)`` outside the function).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.breakdown import CATEGORIES, span_breakdowns
from tftrace.analysis.metrics.busy import main_thread, trace_window
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.metrics.work import LOOP, find_work
from tftrace.analysis.model.categories import starts_with
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import (
    EAGER_EXECUTE_ANNOTATION_PREFIX,
    INFERENCE_FUNCTION_PREFIX,
    ITERATOR_FETCH_EVENTS,
)

COLUMNS = ("step", "start_ns", "end_ns", "duration_ns", "batches", *CATEGORIES)


@dataclass(frozen=True)
class Steps:
    """The steps of a run (``table``: one row each, ``COLUMNS``), what they are (``source``:
    "tf.function <name>", "annotation <name>" or "none") and how many the whole trace holds
    (``found``: the table may be a window's part of them)."""

    source: str
    table: pd.DataFrame
    found: int = 0

    def within(self, window: tuple[int, int]) -> Steps:
        """The steps that overlap ``window``, whole (a step's figures are its own)."""
        lo, hi = window
        t = self.table
        inside = t[(t["end_ns"] > lo) & (t["start_ns"] < hi)].reset_index(drop=True)
        return Steps(self.source, inside, self.found)

    def stats(self) -> dict[str, Any]:
        d = self.table["duration_ns"].to_numpy() / 1e6
        if len(d) == 0:
            return {"steps": 0, "found": self.found}
        batches = self.table["batches"].to_numpy()
        return {
            "steps": len(d),
            "found": self.found,
            "first": int(self.table["step"].iloc[0]),
            "last": int(self.table["step"].iloc[-1]),
            # None where no step fetched its own input (batches unknown)
            "batches_per_step": float(np.median(batches)) if batches.any() else None,
            "mean_ms": float(d.mean()),
            "std_ms": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
            "cv": float(d.std(ddof=1) / d.mean()) if len(d) > 1 and d.mean() > 0 else 0.0,
            "min_ms": float(d.min()),
            "max_ms": float(d.max()),
        }

    def summary(self) -> StepSummary | None:
        """Percentiles, slowest steps, outliers and trend (``summarize_steps``)."""
        return summarize_steps(self.table)


# A step is an outlier when it takes longer than the median by more than this many robust
# standard deviations (1.4826 x the median absolute deviation), and at least 10 % longer.
OUTLIER_SDS = 3.0
SLOWEST_SHOWN = 5
TREND_MIN_STEPS = 20  # a tenth of the steps at each end: at least two steps each


@dataclass(frozen=True)
class StepSummary:
    """Many steps in a few figures (what a report shows instead of thousands of rows):
    duration percentiles, the slowest steps with the category that took most of each, the
    outliers, and the trend (the last tenth's median over the first tenth's, less 1)."""

    p50_ms: float
    p90_ms: float
    p99_ms: float
    slowest: tuple[tuple[int, float, str], ...]  # (step, ms, its largest category)
    outliers: tuple[int, ...]  # step numbers
    outlier_above_ms: float
    trend: float | None  # None with fewer than TREND_MIN_STEPS steps

    def to_json(self) -> dict[str, Any]:
        return {
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "slowest": [{"step": s, "ms": ms, "largest": c} for s, ms, c in self.slowest],
            "outliers": list(self.outliers),
            "outlier_above_ms": self.outlier_above_ms,
            "trend": self.trend,
        }


def summarize_steps(table: pd.DataFrame) -> StepSummary | None:
    """The summary of a steps table (``COLUMNS``); None without steps."""
    if table.empty:
        return None
    ms = table["duration_ns"].to_numpy(dtype=np.float64) / 1e6
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    mad = float(np.median(np.abs(ms - p50)))
    above = max(p50 + OUTLIER_SDS * 1.4826 * mad, 1.1 * p50)
    numbers = table["step"].to_numpy()
    largest = table[list(CATEGORIES)].to_numpy(dtype=np.float64).argmax(axis=1)
    order = np.argsort(-ms, kind="stable")[:SLOWEST_SHOWN]
    slowest = tuple((int(numbers[i]), float(ms[i]), CATEGORIES[largest[i]]) for i in order)
    trend = None
    if len(ms) >= TREND_MIN_STEPS:
        tenth = len(ms) // 10
        first, last = float(np.median(ms[:tenth])), float(np.median(ms[-tenth:]))
        trend = last / first - 1 if first > 0 else None
    return StepSummary(
        float(p50),
        float(p90),
        float(p99),
        slowest,
        tuple(int(n) for n in numbers[ms > above]),
        float(above),
        trend,
    )


def _top_level(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of intervals not inside an earlier one (calls nested in calls are one step)."""
    order = np.argsort(start, kind="stable")
    reach = np.maximum.accumulate(end[order])
    keep_sorted = np.r_[True, start[order][1:] >= reach[:-1]]
    keep = np.zeros(len(start), dtype=bool)
    keep[order] = keep_sorted
    return keep


def _candidates(run: Run, main: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    ops = op_events(run)
    mine = ops[ops["thread"].to_numpy() == main]
    calls = mine[starts_with(mine["op_type"], INFERENCE_FUNCTION_PREFIX)]
    # "__inference_step_171" -> "__inference_step": once per distinct name, not per call
    types = calls["op_type"].astype("category").cat.remove_unused_categories()
    stems = types.cat.categories.astype(str).str.rsplit("_", n=1).str[0].to_numpy()
    functions = pd.Series(stems[types.cat.codes.to_numpy()], index=calls.index, dtype=object)
    for name, group in calls.groupby(functions):
        out.append(
            (
                f"tf.function {name[len(INFERENCE_FUNCTION_PREFIX) :]}",
                group["start_ns"].to_numpy(),
                group["end_ns"].to_numpy(),
            )
        )
    called = {stem[len(INFERENCE_FUNCTION_PREFIX) :] for stem in stems}
    ev = run.events
    notes = ev[(ev["thread"] == main) & (ev["kind"] == EventKind.ANNOTATION.value)]
    names = notes["name"].astype("category").cat.remove_unused_categories()
    for name, group in notes.groupby(names, observed=True):
        if str(name).startswith(EAGER_EXECUTE_ANNOTATION_PREFIX):
            continue
        # TF's own annotation of a tf.function call bears the function's name
        what = "tf.function" if name in called else "annotation"
        out.append((f"{what} {name}", group["start_ns"].to_numpy(), group["end_ns"].to_numpy()))
    return out


def _batches(run: Run, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Input fetches (get-next kernels, any thread) that start inside each step."""
    ev = run.events
    fetch = np.sort(ev.loc[ev["name"].isin(ITERATOR_FETCH_EVENTS), "start_ns"].to_numpy())
    return np.searchsorted(fetch, end, side="left") - np.searchsorted(fetch, start, side="left")


# A loop's steps cover most of what was traced; a name repeated now and then (TF's own
# "convert_to_tensor" annotations) is not a step.
MIN_COVER = 0.3
# ... but a tf.function called at least this many times is a loop however little of the trace
# its calls cover: a loop that spends most of each step in Python between its calls (input read
# in Python, a straggling worker's own delay), or a trace that is mostly something else (a
# distributed worker waiting seconds for its peers before its first step).
MIN_CALLS = 5


def find_steps(run: Run, window: tuple[int, int] | None = None) -> Steps:
    """The steps of the whole trace; with ``window``, those that overlap it (``found`` still
    counts them all, so a window can say "steps 2-50 of 50")."""
    steps = _find_all(run)
    return steps if window is None else steps.within(window)


def _is_loop(source: str, start: np.ndarray, end: np.ndarray, lo: int, hi: int) -> bool:
    if int((end - start).sum()) >= MIN_COVER * (hi - lo):
        return True
    return source.startswith("tf.function") and len(start) >= MIN_CALLS


def _user_marked(run: Run) -> tuple[str, np.ndarray, np.ndarray] | None:
    """The user's own step markers (``Trace(name, step_num=)``) of a loop: they win over any
    inferred step, however little of the trace they cover; on the thread that made most."""
    work = find_work(run)
    if not work.marked or work.shape != LOOP:
        return None
    units = work.units
    mine = units[units["thread"] == units["thread"].value_counts().index[0]]
    name = str(mine["name"].iloc[0])
    return f"annotation {name}", mine["start_ns"].to_numpy(), mine["end_ns"].to_numpy()


def _find_all(run: Run) -> Steps:
    best = _user_marked(run)
    main = main_thread(run)
    lo, hi = trace_window(run)
    best_cover = 0
    for source, start, end in _candidates(run, main) if main is not None and not best else []:
        keep = _top_level(start, end)
        start, end = start[keep], end[keep]
        cover = int((end - start).sum())
        if len(start) >= 2 and cover > best_cover and _is_loop(source, start, end, lo, hi):
            best, best_cover = (source, start, end), cover
    if best is None:
        return Steps("none", pd.DataFrame(columns=list(COLUMNS)))
    source, start, end = best
    order = np.argsort(start)
    start, end = start[order], end[order]
    ns = span_breakdowns(run, start, end)
    shares = ns / np.maximum(end - start, 1)[:, None]
    table = pd.DataFrame(
        {
            "step": np.arange(1, len(start) + 1),
            "start_ns": start,
            "end_ns": end,
            "duration_ns": end - start,
            "batches": _batches(run, start, end),
        }
    )
    table[list(CATEGORIES)] = shares
    return Steps(source, table, len(table))
