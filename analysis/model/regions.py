"""Busy intervals of thread-pool workers: StartRegion/StopRegion pairs, joined to their Record.

A worker writes ``StartRegion`` (flow id ``_c``) when it begins a closure and
``StopRegion`` when it ends; the thread that scheduled the closure wrote a
``Record`` with the same id in ``_p``. Regions may nest (a closure that runs a
nested parallel-for inline), so pairs are matched by nesting depth, per thread, in
time order. All numpy: a fine-grained trace holds millions of these marks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.schema import REGIONS, empty, validate


def _kind_mask(events: pd.DataFrame, kind: EventKind) -> np.ndarray:
    categories = list(events["kind"].cat.categories)
    if kind.value not in categories:
        return np.zeros(len(events), dtype=bool)
    return np.asarray(events["kind"].cat.codes == categories.index(kind.value))


def pair_marks(
    thread: np.ndarray, t: np.ndarray, is_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(start index, stop index) of each matched pair of region marks."""
    order = np.lexsort((t, thread))
    thread, is_start = thread[order], is_start[order]
    step = np.where(is_start, 1, -1)
    # Depth after each mark, restarted per thread: a start opens level d, the stop that
    # brings the depth back to d - 1 closes it.
    depth = np.cumsum(step)
    first = np.r_[True, thread[1:] != thread[:-1]]
    depth -= (depth - step)[first][np.cumsum(first) - 1]
    level = np.where(is_start, depth, depth + 1)
    grouped = np.lexsort((np.arange(len(level)), level, thread))
    g_thread, g_level, g_start = thread[grouped], level[grouped], is_start[grouped]
    # Within one (thread, level) the marks alternate start, stop: pair each start with
    # the next mark when that mark is a stop of the same group. A stop whose start
    # preceded the trace window, or a start cut off at its end, stays unpaired.
    same = (g_thread[1:] == g_thread[:-1]) & (g_level[1:] == g_level[:-1])
    pair = g_start[:-1] & ~g_start[1:] & same
    return order[grouped[:-1][pair]], order[grouped[1:][pair]]


def pair_regions(events: pd.DataFrame) -> pd.DataFrame:
    """``regions`` table from an ``events`` table (columns of schema.EVENTS)."""
    starts = _kind_mask(events, EventKind.REGION_START)
    marks = np.flatnonzero(starts | _kind_mask(events, EventKind.REGION_STOP))
    if len(marks) == 0:
        return empty(REGIONS)
    thread = events["thread"].to_numpy()[marks]
    t = events["start_ns"].to_numpy()[marks]
    begin, end = pair_marks(thread, t, starts[marks])
    order = np.lexsort((thread[begin], t[begin]))
    begin, end = begin[order], end[order]
    c = events["c"].array[marks[begin]]
    regions: dict[str, Any] = {
        "thread": thread[begin].astype(np.int32),
        "start_ns": t[begin],
        "end_ns": t[end],
        "flow": pd.arrays.IntegerArray(
            np.asarray(c.to_numpy(dtype=np.int64, na_value=0)), np.asarray(c.isna())
        ),
    }
    return _join_records(regions, events)


def _join_records(regions: dict[str, Any], events: pd.DataFrame) -> pd.DataFrame:
    """Attach the Record with ``_p`` == the region's ``_c`` (first one, if ids repeat)."""
    records = np.flatnonzero(_kind_mask(events, EventKind.RECORD) & events["p"].notna().to_numpy())
    p, first = np.unique(
        events["p"].to_numpy(dtype=np.int64, na_value=0)[records], return_index=True
    )
    flow: pd.arrays.IntegerArray = regions["flow"]
    ids = flow.to_numpy(dtype=np.int64, na_value=0)
    n = len(ids)
    if len(p) == 0:
        rows, found = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    else:
        at = np.clip(np.searchsorted(p, ids), 0, len(p) - 1)
        rows = records[first][at]
        found = (p[at] == ids) & ~np.asarray(flow.isna())
    scheduled = events["start_ns"].to_numpy()[rows] if n and len(p) else np.zeros(n, np.int64)
    by = (
        events["thread"].to_numpy()[rows].astype(np.int64)
        if n and len(p)
        else np.zeros(n, np.int64)
    )
    frame = pd.DataFrame(
        {
            **regions,
            "scheduled_ns": pd.arrays.IntegerArray(scheduled.astype(np.int64), ~found),
            "scheduled_by": pd.arrays.IntegerArray(by, ~found),
            "queue_ns": pd.arrays.IntegerArray(regions["start_ns"] - scheduled, ~found),
        },
        copy=False,
    )
    return validate(frame, REGIONS)
