"""The analysed window, marked in an exported trace: where ``tftrace analyze`` looks.

The export itself stays whole (every slice, flow and counter of the trace, the concurrency
counters over the whole trace too): a timeline is for finding what happened anywhere. The
window that ``--window`` selects (the steady steps by default) and the warm-up before it are
two slices in a process of their own, ``tftrace window``, at the top of the viewer, named after
what they are (``steady: steps 2-6 of 6 (tf.function train_step), ...``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tftrace.analysis.export.figures import TraceFigures
from tftrace.analysis.export.trace_format import microseconds

WINDOW_PID = 10_000  # above every pool's pid; sorted first
WINDOW_TRACK = "tftrace window"


def window_marks(figures: TraceFigures) -> list[Any]:
    """Trace events: the track's names and a slice for the figures' window (and one for the
    warm-up)."""
    lo, hi = figures.window
    spans = [(lo, hi, "analysed window", figures.window_basis)]
    table = figures.steps.table
    warm = min(figures.warmup_steps, len(table))
    if warm:
        start, end = int(table["start_ns"].iloc[0]), int(table["end_ns"].iloc[warm - 1])
        spans.append((start, end, "warm-up", f"step{'s 1-' if warm > 1 else ' '}{warm}"))
    events: list[Any] = [
        {"ph": "M", "name": "process_name", "pid": WINDOW_PID, "args": {"name": WINDOW_TRACK}},
        {"ph": "M", "name": "process_sort_index", "pid": WINDOW_PID, "args": {"sort_index": -1}},
    ]
    starts = microseconds(np.array([s[0] for s in spans], dtype=np.int64))
    ends = microseconds(np.array([s[1] for s in spans], dtype=np.int64))
    # one track each: a time window may overlap the warm-up without nesting in it
    for tid, ((_, _, track, name), ts, te) in enumerate(zip(spans, starts, ends, strict=True), 1):
        common = {"pid": WINDOW_PID, "tid": tid}
        events.append({**common, "ph": "M", "name": "thread_name", "args": {"name": track}})
        events.append(
            {**common, "ph": "X", "name": name, "cat": "window", "ts": ts, "dur": te - ts}
        )
    return events
