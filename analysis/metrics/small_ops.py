"""Ops too small to split: ops that Eigen did not split ran while cores were free. One measure
for the headline's cause (``core_use.py`` weighs its instants by the idle cores) and the
ops-too-small-to-split rule (``findings/pool_rules.py`` reads the headline's figures).

**Small op types**: the window's op types that kept fewer than ``SMALL_OP_PARALLELISM`` Eigen
workers busy on average, less those never too small to split: the ops a thread only waits
inside (``WAIT_OP_PREFIXES``), Python run as an op and bookkeeping (``NEVER_SPLIT_OPS``).

**Threads at work** at an instant: the Eigen (intra-op) workers inside a closure, plus every
other thread inside an op that computes (``working_ops``): a graph op on an executor thread or
run inline, an eager op, a tf.function's op on a tf.data thread, a ``tf.py_function`` (it holds
a core running Python). A thread that handed its op to the Eigen pool and waits for it still
counts: the trace cannot tell waiting from helping (Eigen's caller runs one block itself when
the loop has few blocks), so the measure errs towards "cores busy", and the rule towards
silence. **Cores were free** while fewer threads were at work than usable cores.

The measure's instants: a small op runs (not one a py_function's Python ran: that time is
Python's) while cores are free. Two chains of small ops side by side on as many cores keep the
cores busy: no such instant. Without thread-pool events (TF <= 2.16) the Eigen workers' work is
invisible, and with fewer than 2 intra-op threads or cores there is nothing to split into: no
verdict. Python code outside TF calls is not in the trace: a main thread busy in Python is
not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import busy_intervals, pool_thread_keys
from tftrace.analysis.metrics.intervals import StepFunction, concurrency
from tftrace.analysis.metrics.ops import working_ops
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import NEVER_SPLIT_OPS, WAIT_OP_PREFIXES

SMALL_OP_PARALLELISM = 1.2  # op types that kept fewer than 1.2 Eigen workers busy on average


@dataclass(frozen=True)
class SmallOps:
    """Ops too small to split over a window.

    ``types``: the small op types (``op_type``, ``count``, ``total_ms``, ``parallelism``, as
    ``top_op_types`` gives them), most time first; ``free``: 1 while a small op ran with cores
    free, else 0. ``ns`` and ``idle_core_s`` are the headline's: the wall time of the instants it
    gave to "ops too small to split" (``free`` less the instants of the causes before it: input
    waits, Python, waiting for a thread) and the idle core-time there.
    """

    types: pd.DataFrame
    cores: int
    intra_op_size: int
    free: StepFunction
    ns: int = 0
    idle_core_s: float = 0.0

    @property
    def parallelism(self) -> float:
        """The small ops' Eigen workers busy on average, weighted by their time."""
        total = self.types["total_ms"].to_numpy(np.float64)
        busy = self.types["parallelism"].to_numpy(np.float64) * total
        return float(busy.sum() / max(total.sum(), 1e-6))


def small_op_types(types: pd.DataFrame) -> pd.DataFrame:
    """The rows of an op-type table (``top_op_types``) that count as small (module docstring)."""
    kinds = types["op_type"].astype(str)
    never = kinds.str.startswith(WAIT_OP_PREFIXES) | kinds.isin(NEVER_SPLIT_OPS)
    small = ~never & (types["parallelism"] < SMALL_OP_PARALLELISM)
    return types[small.to_numpy(dtype=bool)].reset_index(drop=True)


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


def _free(
    at_work: StepFunction, cores: int, ops: pd.DataFrame, window: tuple[int, int]
) -> StepFunction:
    """1 while any of ``ops`` ran and fewer than ``cores`` threads were at work, else 0."""
    lo, hi = window
    running = concurrency([ops["start_ns"].to_numpy()], [ops["end_ns"].to_numpy()], lo, hi)
    edges = np.union1d(at_work.times, running.times)
    left = edges[:-1]

    def level(f: StepFunction) -> np.ndarray:
        return f.values[np.clip(np.searchsorted(f.times, left, side="right") - 1, 0, None)]

    free = (level(running) > 0) & (level(at_work) < cores)
    return StepFunction(edges.astype(np.int64), free.astype(np.int64))


def small_ops(
    run: Run, window: tuple[int, int], cores: int | None, types: pd.DataFrame
) -> SmallOps | None:
    """Ops too small to split over ``window`` on ``cores``; ``types``: every op type of the
    window (``top_op_types(run, limit=None, window=window)``). None where the trace cannot
    tell (module docstring)."""
    size = run.manifest.pool("intra_op").size or 0
    lo, hi = window
    if run.regions.empty or size < 2 or not cores or cores < 2 or hi <= lo:
        return None
    small = small_op_types(types)
    ops = working_ops(run)
    mine = ops[ops["op_type"].isin(small["op_type"]).to_numpy() & ~ops["python"].to_numpy()]
    free = _free(threads_at_work(run, ops, window), cores, mine, window)
    return SmallOps(small, cores, size, free)
