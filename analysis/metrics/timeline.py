"""Every thread's busy intervals over a window, one row each, for the report's timeline.

Rows run from the driver (the main thread) through the pools that run TF's work to the rest;
gaps narrower than a pixel of the figure are closed to keep the drawing small.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import busy_intervals
from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

TIMELINE_RESOLUTION = 2000  # gaps under 1/2000 of the window are below a pixel: not drawn
# Timeline rows: the driver first, then the pools that run TF's work, then the rest.
_FIRST = (
    Pool.PYTHON_MAIN,
    Pool.INTER_OP,
    Pool.INTRA_OP,
    Pool.TF_DATA,
    Pool.TF_OTHER,
    Pool.PYTHON_OTHER,
)
TIMELINE_ORDER = (*_FIRST, *(p for p in Pool if p not in _FIRST))
_RANK = {pool.value: rank for rank, pool in enumerate(TIMELINE_ORDER)}


def thread_label(thread: pd.Series) -> str:
    """'pool: TF or Python name (tid N)': the name that tells the thread apart in its pool."""
    name = next(
        (
            str(thread[c])
            for c in ("tf_name", "python_name", "line_name", "os_name")
            if pd.notna(thread[c])
        ),
        "?",
    )
    tid = f"tid {int(thread['tid'])}" if pd.notna(thread["tid"]) else "no tid"
    return f"{thread['pool']}: {name} ({tid})"


def _close_gaps(start: np.ndarray, end: np.ndarray, min_gap_ns: int) -> tuple[np.ndarray, ...]:
    """Join disjoint sorted intervals separated by less than ``min_gap_ns`` (sub-pixel gaps)."""
    if min_gap_ns <= 0 or len(start) < 2:
        return start, end
    new = np.r_[True, (start[1:] - end[:-1]) >= min_gap_ns]
    last = np.r_[np.flatnonzero(new)[1:] - 1, len(end) - 1]
    return start[new], end[last]


def _timeline_threads(run: Run) -> pd.DataFrame:
    ranks = run.threads["pool"].astype(str).map(_RANK).fillna(len(_RANK))
    return run.threads.assign(_rank=ranks.to_numpy()).sort_values(["_rank", "thread"])


def thread_timeline(run: Run, window: tuple[int, int], min_gap_ns: int = 0) -> pd.DataFrame:
    """Every thread busy in the window: its merged busy intervals (``busy.py``), one row each.

    ``row`` numbers the threads from the top of the figure (main thread, inter-op, intra-op,
    tf.data, ...); gaps shorter than ``min_gap_ns`` are closed to keep the drawing small.
    """
    lo, hi = window
    threads = _timeline_threads(run)
    intervals = busy_intervals(run, threads["thread"].to_numpy())
    parts: list[pd.DataFrame] = []
    for _, thread in threads.iterrows():
        start, end = union(*clip(*intervals[int(thread["thread"])], lo, hi))
        start, end = _close_gaps(start, end, min_gap_ns)
        if len(start):
            parts.append(
                pd.DataFrame(
                    {
                        "row": len(parts),
                        "thread": int(thread["thread"]),
                        "label": thread_label(thread),
                        "pool": str(thread["pool"]),
                        "start_ns": start,
                        "end_ns": end,
                        "start_s": (start - lo) / 1e9,
                        "width_s": (end - start) / 1e9,
                    }
                )
            )
    if not parts:
        return pd.DataFrame(
            columns=["row", "thread", "label", "pool", "start_ns", "end_ns", "start_s", "width_s"]
        )
    return pd.concat(parts, ignore_index=True)
