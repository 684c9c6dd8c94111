"""Were cores free while some ops ran? The trace's measure that ops-too-small-to-split rests on.

**Threads at work** at an instant: the Eigen (intra-op) workers inside a closure, plus every
other thread inside an op that computes: a graph op on an executor thread or run inline, an
eager op, a tf.function's op on a tf.data thread, a ``tf.py_function`` (it holds a core running
Python). tf.function calls and input waits (``IteratorGetNext``) are left out: the thread only
waits inside them. A thread that handed its op to the Eigen pool and waits for it still counts:
the trace cannot tell waiting from helping (Eigen's caller runs one block itself when the loop
has few blocks), so the measure errs towards "cores busy", and a rule built on it towards
silence. **Cores were free** while fewer threads were at work than usable cores.

Python code outside TF calls is not in the trace: a main thread busy in Python is not counted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import busy_intervals, pool_thread_keys
from tftrace.analysis.metrics.intervals import StepFunction, concurrency, union
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.model.categories import is_in, starts_with
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import (
    FUNCTION_PREFIXES,
    ITERATOR_GET_NEXT,
    PY_FUNCTION_OPS,
)

WAITS = (*FUNCTION_PREFIXES, ITERATOR_GET_NEXT)  # op types a thread only waits inside


def working_ops(run: Run) -> pd.DataFrame:
    """``op_events`` without the waits (tf.function calls, input fetches), with ``python``:
    True for a ``tf.py_function`` op and for every op it ran (nested in it on its thread: the
    eager ops its Python body called through TF's Python API)."""
    ops = op_events(run)
    ops = ops[~starts_with(ops["op_type"], WAITS)].reset_index(drop=True)
    is_py = is_in(ops["op_type"], PY_FUNCTION_OPS)
    python = is_py.copy()
    thread, start, end = (ops[c].to_numpy() for c in ("thread", "start_ns", "end_ns"))
    for t in np.unique(thread[is_py]):
        s, e = union(start[is_py & (thread == t)], end[is_py & (thread == t)])
        mine = np.flatnonzero(thread == t)
        at = np.searchsorted(s, start[mine], side="right") - 1
        python[mine] |= (at >= 0) & (e[np.clip(at, 0, None)] >= end[mine])
    return ops.assign(python=python)


def threads_at_work(run: Run, ops: pd.DataFrame, window: tuple[int, int]) -> StepFunction:
    """How many threads were at work (module docstring) at each instant of ``window``; ``ops``
    from ``working_ops``. Each thread counts once however its events nest."""
    lo, hi = window
    eigen = busy_intervals(run, pool_thread_keys(run, Pool.INTRA_OP))
    starts = [s for s, _ in eigen.values()]
    ends = [e for _, e in eigen.values()]
    for _, mine in ops.groupby("thread", sort=False):
        starts.append(mine["start_ns"].to_numpy())
        ends.append(mine["end_ns"].to_numpy())
    return concurrency(starts, ends, lo, hi)


def ns_with_cores_free(
    at_work: StepFunction, cores: int, ops: pd.DataFrame, window: tuple[int, int]
) -> int:
    """ns of ``window`` during which any of ``ops`` ran while fewer than ``cores`` threads were
    at work: a measure of a set of instants, so never more than the window."""
    lo, hi = window
    if hi <= lo or ops.empty:
        return 0
    running = concurrency([ops["start_ns"].to_numpy()], [ops["end_ns"].to_numpy()], lo, hi)
    edges = np.union1d(at_work.times, running.times)
    left, width = edges[:-1], np.diff(edges)

    def level(f: StepFunction) -> np.ndarray:
        return f.values[np.clip(np.searchsorted(f.times, left, side="right") - 1, 0, None)]

    return int(width[(level(running) > 0) & (level(at_work) < cores)].sum())
