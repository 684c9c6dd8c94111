"""When is a thread busy, by the trace: the definition every concurrency figure uses.

- A thread-pool worker (inter-op, intra-op, tf.data, other TF threads) is busy while it
  runs a closure (a region between StartRegion and StopRegion) or an op: "owning work".
  Input-pipeline events (``PrefetchProduce``, ``Iterator::...``) are not: a prefetch
  thread sits inside them while it waits for the stage below. This is not on-CPU time:
  a ``tf_Compute`` thread that hands a MatMul to the Eigen pool and waits is busy; the
  OS sampler tells the two apart.
- A Python thread is busy while it is inside TensorFlow: an op it runs inline, an eager
  or tf.function call, or input-pipeline work. Python code around those calls is not busy
  by the trace (py-spy and the OS sampler see it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.memo import per_run
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

PYTHON_POOLS = (Pool.PYTHON_MAIN, Pool.PYTHON_OTHER)
WORKER_KINDS = (EventKind.OP,)
PYTHON_KINDS = (EventKind.OP, EventKind.CALL, EventKind.DATA)


@per_run
def trace_window(run: Run) -> tuple[int, int]:
    """[first event start, last event end] of the trace, ns on the run's axis."""
    if run.events.empty:
        return 0, 0
    return int(run.events["start_ns"].min()), int(run.events["end_ns"].max())


def python_threads(run: Run) -> np.ndarray:
    """Keys of the Python threads (main and others): busy inside TF calls and input
    pipelines too, where a pool's worker is busy only in its regions and ops."""
    threads = run.threads
    return threads.loc[threads["pool"].isin([p.value for p in PYTHON_POOLS]), "thread"].to_numpy()


def _kind_codes(events: pd.DataFrame, kinds: tuple[EventKind, ...]) -> np.ndarray:
    categories = list(events["kind"].cat.categories)
    wanted = [categories.index(k.value) for k in kinds if k.value in categories]
    return np.isin(events["kind"].cat.codes.to_numpy(), wanted)


def busy_intervals(
    run: Run, threads: list[int] | np.ndarray
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """(start, end) arrays of busy intervals per thread key (not merged: may nest)."""
    every = _busy_by_thread(run)
    none = np.zeros(0, dtype=np.int64)
    return {int(t): every.get(int(t), (none, none)) for t in threads}


@per_run
def _busy_by_thread(run: Run) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Every thread's busy intervals, from one pass over the events (sorted by thread)."""
    events = run.events
    thread_col = events["thread"].to_numpy()
    mine = np.where(
        np.isin(thread_col, python_threads(run)),
        _kind_codes(events, PYTHON_KINDS),
        _kind_codes(events, WORKER_KINDS),
    )
    regions = run.regions
    thread = np.concatenate([thread_col[mine], regions["thread"].to_numpy()]).astype(np.int64)
    start = np.concatenate([events["start_ns"].to_numpy()[mine], regions["start_ns"].to_numpy()])
    end = np.concatenate([events["end_ns"].to_numpy()[mine], regions["end_ns"].to_numpy()])
    order = np.argsort(thread, kind="stable")  # per thread: its events, then its regions
    thread, start, end = thread[order], start[order], end[order]
    keys, first = np.unique(thread, return_index=True)
    cuts = np.r_[first, len(thread)]
    return {
        int(k): (start[cuts[i] : cuts[i + 1]], end[cuts[i] : cuts[i + 1]])
        for i, k in enumerate(keys)
    }


@per_run
def merged_busy(run: Run, lo: int, hi: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Every thread's busy intervals cut to [lo, hi] and merged (disjoint, sorted), by thread
    key; a thread with none is absent."""
    return {t: union(*clip(s, e, lo, hi)) for t, (s, e) in _busy_by_thread(run).items()}


def pool_thread_keys(run: Run, pool: Pool) -> np.ndarray:
    return run.threads.loc[run.threads["pool"] == pool.value, "thread"].to_numpy()


def main_thread(run: Run) -> int | None:
    """The key of the Python main thread; None where the run does not know it."""
    main = pool_thread_keys(run, Pool.PYTHON_MAIN)
    return int(main[0]) if len(main) else None


def pool_of_threads(run: Run, thread: np.ndarray) -> pd.Categorical:
    """The pool of each thread key (a categorical; missing for a key the run does not have),
    through a table indexed by key: no per-row lookup."""
    keys = run.threads["thread"].to_numpy(dtype=np.int64)
    pools = pd.Categorical(run.threads["pool"].astype(str))
    top = max(int(keys.max(initial=0)), int(np.max(thread, initial=0)))
    table = np.full(top + 2, -1, dtype=np.int64)
    table[keys] = pools.codes
    return pd.Categorical.from_codes(table[np.asarray(thread)], categories=pools.categories)
