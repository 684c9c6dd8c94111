"""py-spy's Python stacks as nested slices: one extra track per thread py-spy saw.

``run.python`` holds intervals of one whole stack, as py-spy saw them (not clipped to the
thread's active time as the metric is: the thread's own busy slices are beside them); a viewer
wants one slice per frame, nested. Walking a thread's intervals in time order, a frame stays
open while the next interval's stack keeps it at the same depth (and the intervals touch); the
frames below a change close, the new ones open. Frames are named as the metric counts them
(``"function (file)"``, the launcher's frames dropped: ``metrics/python_time.py``), with
py-spy's frame, line included, in ``args``.

The stacks get a track of their own beside the thread's TF track (same pool, same name plus
"Python stacks"): a sampled stack changes at sample times, not at the trace's call edges, so its
slices would overlap the TF call slices partly, which viewers cannot nest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.export.figures import TraceFigures
from tftrace.analysis.export.trace_format import Slices, Track, pool_pid
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

# A stack track's key and tid: above every thread track's tid (SYNTHETIC_TID_BASE + key) and
# below 2**32 (Perfetto reads tids as uint32).
STACK_TID_BASE = 1 << 31
STACK_CAT = "python"
STACK_TRACK_SUFFIX = "Python stacks (py-spy)"

# One open frame: (function, start ns, py-spy's frame text).
Open = tuple[str, int, str]


def _frames(stack: str, functions: list[str]) -> list[str]:
    """py-spy's frames of a stack, one per function of it: the launcher's frames, which the
    metric's ``functions`` leave out, dropped too."""
    raw = [f for f in stack.split(";") if f]
    return raw[len(raw) - len(functions) :]


def thread_stack_slices(
    intervals: pd.DataFrame, stack_functions: Mapping[str, list[str]]
) -> list[tuple[int, int, int, str, str]]:
    """(start, end, depth, function, frame) of one thread's nested frame slices
    (``stack_functions``: each stack's functions, ``TraceFigures.stack_functions``)."""
    out: list[tuple[int, int, int, str, str]] = []
    open_: list[Open] = []
    last_end: int | None = None

    def close(keep: int, at: int) -> None:
        while len(open_) > keep:
            function, start, frame = open_.pop()
            out.append((start, at, len(open_), function, frame))

    ordered = intervals.sort_values("start_ns")
    columns = (ordered["start_ns"].tolist(), ordered["end_ns"].tolist(), ordered["stack"])
    for start, end, stack in zip(*columns, strict=True):
        functions = stack_functions[str(stack)]
        frames = _frames(str(stack), functions)
        keep = 0
        if last_end is not None and start == last_end:
            while keep < min(len(open_), len(functions)) and open_[keep][0] == functions[keep]:
                keep += 1
        if last_end is not None:
            close(keep, last_end)
        open_ += [(f, start, raw) for f, raw in zip(functions[keep:], frames[keep:], strict=True)]
        last_end = end
    if last_end is not None:
        close(0, last_end)
    return sorted(out, key=lambda r: (r[0], r[2]))


def python_stack_slices(figures: TraceFigures) -> Slices:
    """The frames of every thread py-spy saw (Python's threads, TF threads running a
    ``tf.py_function``; not tftrace's own) as slices, on the stack track of its thread
    (``STACK_TID_BASE + thread key``), clipped to the trace window (py-spy runs longer than the
    profiler; the export spans the trace)."""
    lo, hi = (
        figures.trace_window
        if len(figures.run.events)
        else (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
    )
    threads, starts, ends, names, frames, depths = [], [], [], [], [], []
    functions = figures.stack_functions
    for thread, intervals in figures.python_stacks.groupby("thread", sort=True):
        for start, end, depth, function, frame in thread_stack_slices(intervals, functions):
            start, end = max(start, lo), min(end, hi)
            if end <= start:
                continue
            threads.append(STACK_TID_BASE + int(thread))
            starts.append(start)
            ends.append(end)
            names.append(function)
            frames.append(frame)
            depths.append(depth)
    return Slices(
        STACK_CAT,
        np.array(threads, dtype=np.int64),
        np.array(starts, dtype=np.int64),
        np.array(ends, dtype=np.int64),
        names,
        {"frame": frames, "depth": np.array(depths, dtype=np.int64)},
    )


def stack_tracks(run: Run, keys: Iterable[int], label_of: Any) -> dict[int, Track]:
    """A track per stack-track key, in its thread's pool, named after its thread."""
    rows = run.threads.set_index("thread", drop=False)
    tracks = {}
    for key in sorted({int(k) for k in keys}):
        row = rows.loc[key - STACK_TID_BASE]
        pool = Pool(row.pool)
        shown_tid = str(int(row.tid)) if pd.notna(row.tid) else "?"
        name = f"{label_of(row)} {STACK_TRACK_SUFFIX} ({pool.value}, tid {shown_tid})"
        tracks[key] = Track(int(row.thread), pool, pool_pid(pool), key, name)
    return tracks
