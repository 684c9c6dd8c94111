"""The cause of each instant of a window's idle core-time, by the trace (core use's causes
after run-queue wait; ``core_use.py`` weighs them by the idle cores): input waits, Python,
waiting for a thread of a full pool, ops too small to split (``small_ops.py``), a dependency
chain, dispatch."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.breakdown import CATEGORIES, category_timeline
from tftrace.analysis.metrics.busy import pool_of_threads, pool_thread_keys
from tftrace.analysis.metrics.concurrency import PoolConcurrency
from tftrace.analysis.metrics.intervals import StepFunction, concurrency, sorted_unique
from tftrace.analysis.model.categories import starts_with
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import ITERATOR_GET_NEXT

INPUT, PYTHON, WAITING, TOO_SMALL = "input", "python", "waiting", "too_small"
CHAIN, DISPATCH, UNEXPLAINED = "chain", "dispatch", "unexplained"
_CATEGORY = {name: i for i, name in enumerate(CATEGORIES)}


def value_at(f: StepFunction, t: np.ndarray) -> np.ndarray:
    i = np.clip(np.searchsorted(f.times, t, side="right") - 1, 0, max(len(f.values) - 1, 0))
    return f.values[i] if len(f.values) else np.zeros(len(t), dtype=np.int64)


def _per_thread(frame: pd.DataFrame, lo: int, hi: int) -> StepFunction:
    """How many threads have one of the frame's intervals open."""
    groups = [g for _, g in frame.groupby("thread", sort=False)]
    return concurrency(
        [g["start_ns"].to_numpy() for g in groups], [g["end_ns"].to_numpy() for g in groups], lo, hi
    )


def _full_pool(
    run: Run, concurrency_of: dict[Pool, PoolConcurrency], lo: int, hi: int
) -> StepFunction:
    """1 while a closure of the inter- or intra-op pool is scheduled, not started, and every
    thread of its pool is busy (the pool is the limit), else 0; over [lo, hi]."""
    regions = run.regions.dropna(subset=["scheduled_ns"])
    pools = pool_of_threads(run, regions["thread"].to_numpy())
    parts = []
    for pool in (Pool.INTER_OP, Pool.INTRA_OP):
        c = concurrency_of.get(pool)
        mine = regions[np.asarray(pools == pool.value)]
        if c is None or mine.empty or not c.size:
            continue
        queued = concurrency(
            [mine["scheduled_ns"].to_numpy(np.int64)], [mine["start_ns"].to_numpy()], lo, hi
        )
        parts.append((queued, c.function, c.size))
    times = sorted_unique(
        np.concatenate(
            [np.array([lo, hi], dtype=np.int64)] + [f.times for q, b, _ in parts for f in (q, b)]
        )
    )
    at = times[:-1]
    full = np.zeros(len(at), dtype=bool)
    for queued, busy, size in parts:
        full |= (value_at(queued, at) > 0) & (value_at(busy, at) >= size)
    return StepFunction(times, full.astype(np.int64))


def causes_of_instants(
    run: Run,
    lo: int,
    hi: int,
    too_small: StepFunction | None,
    concurrency_of: dict[Pool, PoolConcurrency],
) -> tuple[np.ndarray, np.ndarray]:
    """(edges, cause key per segment) over [lo, hi], first match as in ``CAUSES``;
    ``too_small``: ``SmallOps.free`` (None: the trace cannot tell, no instant is too small)."""
    cat_edges, category = category_timeline(run, (lo, hi))
    ev = run.events
    data = pool_thread_keys(run, Pool.TF_DATA)
    get_next = ev[starts_with(ev["name"], ITERATOR_GET_NEXT) & ~ev["thread"].isin(data)]
    waits = _per_thread(get_next, lo, hi)
    small = too_small or StepFunction(np.array([lo, hi], dtype=np.int64), np.zeros(1, np.int64))
    full_pool = _full_pool(run, concurrency_of, lo, hi)
    # every step function sampled below changes only at these edges
    edges = sorted_unique(np.r_[cat_edges, waits.times, small.times, full_pool.times])
    edges = edges[(edges >= lo) & (edges <= hi)]
    at = edges[:-1]
    cat = category[np.clip(np.searchsorted(cat_edges, at, side="right") - 1, 0, len(category) - 1)]
    full = value_at(full_pool, at) > 0
    on_ops = (cat == _CATEGORY["intra-op parallel"]) | (cat == _CATEGORY["op, intra idle"])
    cause = np.full(len(at), UNEXPLAINED, dtype=object)
    rules = [  # first match wins: assign the first one last
        (INPUT, value_at(waits, at) > 0),
        (PYTHON, cat == _CATEGORY["python / host"]),
        (WAITING, full | (cat == _CATEGORY["waiting for a thread"])),
        (TOO_SMALL, on_ops & (value_at(small, at) > 0)),
        (CHAIN, on_ops),  # ops ran, none small with a core free: the rest waits for them
        (DISPATCH, cat == _CATEGORY["dispatch & executor"]),
    ]
    for key, where in reversed(rules):
        cause[where] = key
    return edges, cause
