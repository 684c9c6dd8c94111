"""Per-op figures: duration, self time, and the intra-op parallelism each op achieved.

Ops are the kernel events on every thread but the Eigen workers: ``name:type`` events
(graph ops on an executor thread, or run inline) and eager ops (``EagerLocalExecute: T``
on a Python thread). An op's achieved parallelism is the mean number of Eigen workers
busy on its behalf while it ran: the busy time of the closures its thread scheduled
during it (joined by flow id, Record -> StartRegion), divided by its duration. Traces
without thread-pool events (TF <= 2.16) fall back to the Eigen pool's overlap with the
op, which is exact only when one op runs at a time.

Given a window, the op types count the ops that overlap it, with their time inside it (so a
share of the window is of that window) and the parallelism each op achieved over its whole run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import busy_intervals, pool_of_threads, pool_thread_keys
from tftrace.analysis.metrics.intervals import concurrency, union
from tftrace.analysis.model.categories import is_in, starts_with
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.memo import per_run
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import (
    EAGER_OP_PREFIX,
    PY_FUNCTION_OPS,
    WAIT_OP_PREFIXES,
    op_type_of_kernel,
)

TOP_OP_TYPES = 10  # the op types an analysis shows (``Analysis.top_ops``)
OP_COLUMNS = [
    "thread",
    "pool",
    "name",
    "op_type",
    "eager",
    "start_ns",
    "end_ns",
    "duration_ns",
    "self_ns",
    "eigen_busy_ns",
    "parallelism",
    "attribution",
]


@per_run
def op_events(run: Run) -> pd.DataFrame:
    """Op events of every non-Eigen thread, with their type and whether they ran eagerly.

    ``pool``, ``name`` and ``op_type`` are categoricals. Each test on names runs once per
    distinct name (``model.categories``), not once per event."""
    ev = run.events
    eager_all = starts_with(ev["name"], EAGER_OP_PREFIX)
    rows = np.flatnonzero((ev["kind"] == EventKind.OP.value).to_numpy() | eager_all)
    thread = ev["thread"].to_numpy()[rows]
    pool = pool_of_threads(run, thread)
    keep = np.asarray(pool != Pool.INTRA_OP.value)
    rows, thread, pool = rows[keep], thread[keep], pool[keep]
    names = ev["name"].iloc[rows]
    is_eager = eager_all[rows]
    return pd.DataFrame(
        {
            "thread": thread,
            "pool": pool,
            "name": names.array,
            "op_type": _op_types(ev["op_type"].iloc[rows], names, is_eager),
            "eager": is_eager,
            "start_ns": ev["start_ns"].to_numpy()[rows],
            "end_ns": ev["end_ns"].to_numpy()[rows],
        }
    )


@per_run
def working_ops(run: Run) -> pd.DataFrame:
    """``op_events`` without the ops a thread only waits inside (``WAIT_OP_PREFIXES``), with
    ``python``: True for a ``tf.py_function`` op and for every op it ran (nested in it on its
    thread: the eager ops its Python body called through TF's Python API), Python's time."""
    ops = op_events(run)
    ops = ops[~starts_with(ops["op_type"], WAIT_OP_PREFIXES)].reset_index(drop=True)
    is_py = is_in(ops["op_type"], PY_FUNCTION_OPS)
    python = is_py.copy()
    thread, start, end = (ops[c].to_numpy() for c in ("thread", "start_ns", "end_ns"))
    for t in np.unique(thread[is_py]):
        s, e = union(start[is_py & (thread == t)], end[is_py & (thread == t)])
        mine = np.flatnonzero(thread == t)
        at = np.searchsorted(s, start[mine], side="right") - 1
        python[mine] |= (at >= 0) & (e[np.clip(at, 0, None)] >= end[mine])
    return ops.assign(python=python)


def _op_types(graph: pd.Series, names: pd.Series, is_eager: np.ndarray) -> pd.Categorical:
    """The op type of each row: a graph op's from the trace, an eager op's from its event name
    (``EagerLocalExecute: T``), normalised as graph ops are (oneDNN's names); per category."""
    eager_types = [
        op_type_of_kernel(n[len(EAGER_OP_PREFIX) :]) if n.startswith(EAGER_OP_PREFIX) else ""
        for n in names.cat.categories.astype(str)
    ]
    categories = pd.Index(list(dict.fromkeys([*graph.cat.categories.astype(str), *eager_types])))
    from_graph = np.r_[categories.get_indexer(graph.cat.categories.astype(str)), -1]
    from_name = np.r_[categories.get_indexer(eager_types), -1]
    codes = np.where(
        is_eager, from_name[names.cat.codes.to_numpy()], from_graph[graph.cat.codes.to_numpy()]
    )
    return pd.Categorical.from_codes(codes, categories=categories)


def _self_ns(ops: pd.DataFrame) -> np.ndarray:
    """Duration minus the time covered by ops nested inside it on the same thread."""
    duration = (ops["end_ns"] - ops["start_ns"]).to_numpy()
    self_ns = duration.copy()
    for _, group in ops.groupby("thread", sort=False):
        order = group.sort_values(["start_ns", "end_ns"], ascending=[True, False]).index
        starts, ends = ops.loc[order, "start_ns"].to_numpy(), ops.loc[order, "end_ns"].to_numpy()
        if len(starts) < 2 or not (starts[1:] < np.maximum.accumulate(ends)[:-1]).any():
            continue  # nothing nests on this thread
        stack: list[int] = []
        for k in range(len(order)):
            while stack and ends[stack[-1]] <= starts[k]:
                stack.pop()
            if stack:  # the innermost open op is this op's parent
                self_ns[ops.index.get_loc(order[stack[-1]])] -= ends[k] - starts[k]
            stack.append(k)
    return np.maximum(self_ns, 0)


def _containing(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index of the interval (sorted by start) that contains each t, or -1."""
    at = np.searchsorted(starts, t, side="right") - 1
    ok = (at >= 0) & (ends[np.clip(at, 0, None)] >= t)
    return np.where(ok, at, -1)


def _attributed_by_flow(run: Run, ops: pd.DataFrame) -> np.ndarray:
    """Eigen busy ns of the closures each op caused while it ran."""
    regions, owner = closure_owners(run, ops)
    r_start, r_end = regions["start_ns"].to_numpy(), regions["end_ns"].to_numpy()
    o_start, o_end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    ok = owner >= 0
    lo = np.maximum(r_start[ok], o_start[owner[ok]])
    hi = np.minimum(r_end[ok], o_end[owner[ok]])
    return np.bincount(owner[ok], weights=np.maximum(hi - lo, 0), minlength=len(ops))


def closure_owners(run: Run, ops: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The Eigen workers' regions joined to their Record (sorted by thread and start), and for
    each the row of ``ops`` (by position) that caused it, -1 where none: its shards.

    Eigen splits a parallel loop recursively: the op's thread schedules a closure, and
    that closure, on a worker, schedules more. A closure scheduled from inside another
    closure belongs to the same op, so ownership is followed up the chain.
    """
    eigen = set(pool_thread_keys(run, Pool.INTRA_OP).tolist())
    regions = run.regions.dropna(subset=["scheduled_ns"])
    regions = regions[regions["thread"].isin(eigen)].sort_values(["thread", "start_ns"])
    n = len(regions)
    thread = regions["thread"].to_numpy()
    r_start, r_end = regions["start_ns"].to_numpy(), regions["end_ns"].to_numpy()
    by = regions["scheduled_by"].to_numpy(dtype=np.int64)
    t = regions["scheduled_ns"].to_numpy(dtype=np.int64)
    parent = np.full(n, -1)
    owner = np.full(n, -1)
    for worker in eigen:  # closures scheduled from inside a closure on this worker
        mine = np.flatnonzero(thread == worker)
        asked = np.flatnonzero(by == worker)
        if len(mine) and len(asked):
            at = _containing(r_start[mine], r_end[mine], t[asked])
            parent[asked[at >= 0]] = mine[at[at >= 0]]
    o_start, o_end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    for op_thread in np.unique(ops["thread"].to_numpy()):
        rows = np.flatnonzero(ops["thread"].to_numpy() == op_thread)
        rows = rows[np.argsort(o_start[rows], kind="stable")]
        asked = np.flatnonzero(by == op_thread)
        at = _containing(o_start[rows], o_end[rows], t[asked])
        owner[asked[at >= 0]] = rows[at[at >= 0]]
    for _ in range(64):  # follow parents: a chain is as deep as the loop's splitting
        inherit = (owner < 0) & (parent >= 0)
        if not inherit.any():
            break
        owner[inherit] = owner[parent[inherit]]
        parent[inherit & (owner < 0)] = parent[parent[inherit & (owner < 0)]]
    return regions, owner


def _attributed_by_overlap(run: Run, ops: pd.DataFrame) -> np.ndarray:
    threads = pool_thread_keys(run, Pool.INTRA_OP)
    intervals = busy_intervals(run, threads)
    if not len(ops) or not intervals:
        return np.zeros(len(ops))
    lo, hi = int(ops["start_ns"].min()), int(ops["end_ns"].max())
    f = concurrency([s for s, _ in intervals.values()], [e for _, e in intervals.values()], lo, hi)
    return f.integral_at(ops["end_ns"].to_numpy()) - f.integral_at(ops["start_ns"].to_numpy())


def op_table(run: Run) -> pd.DataFrame:
    """One row per op: duration, self time, Eigen busy time on its behalf, parallelism."""
    ops = op_events(run).reset_index(drop=True)
    if ops.empty:
        return pd.DataFrame(columns=OP_COLUMNS)
    has_flows = not run.regions.empty and run.regions["scheduled_ns"].notna().any()
    eigen = _attributed_by_flow(run, ops) if has_flows else _attributed_by_overlap(run, ops)
    duration = (ops["end_ns"] - ops["start_ns"]).to_numpy()
    ops["duration_ns"] = duration
    ops["self_ns"] = _self_ns(ops)
    ops["eigen_busy_ns"] = eigen
    ops["parallelism"] = np.where(duration > 0, eigen / np.maximum(duration, 1), np.nan)
    ops["attribution"] = "flow ids" if has_flows else "overlap"
    return ops[OP_COLUMNS]


def clip_ops(ops: pd.DataFrame, window: tuple[int, int]) -> pd.DataFrame:
    """The ops that overlap ``window``, their duration and Eigen busy time cut to it (the op's
    parallelism kept: its Eigen time in the window is taken in proportion)."""
    lo, hi = window
    start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    overlap = (end > lo) & (start < hi)
    if not overlap.all():
        ops, start, end = ops[overlap], start[overlap], end[overlap]
    whole = end - start
    inside = np.minimum(end, hi) - np.maximum(start, lo)
    kept = np.where(whole > 0, inside / np.maximum(whole, 1), 1.0)
    return ops.assign(duration_ns=inside, eigen_busy_ns=ops["eigen_busy_ns"].to_numpy() * kept)


def top_op_types(
    run: Run,
    limit: int | None = TOP_OP_TYPES,
    table: pd.DataFrame | None = None,
    window: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Op types by total time (in ``window`` if given), with the parallelism they achieved
    (duration-weighted); ``limit`` None: every type."""
    ops = op_table(run) if table is None else table
    if window is not None:  # only the columns summed below: a cut copies what it keeps
        ops = clip_ops(ops[["op_type", "start_ns", "end_ns", "eigen_busy_ns"]], window)
    if ops.empty:
        return pd.DataFrame(
            columns=[
                "op_type",
                "count",
                "total_ms",
                "mean_us",
                "parallelism",
            ]
        )
    grouped = ops.groupby("op_type", sort=False).agg(
        count=("duration_ns", "size"), total=("duration_ns", "sum"), eigen=("eigen_busy_ns", "sum")
    )
    out = pd.DataFrame(
        {
            "op_type": grouped.index,
            "count": grouped["count"].to_numpy(),
            "total_ms": grouped["total"].to_numpy() / 1e6,
            "mean_us": grouped["total"].to_numpy() / grouped["count"].to_numpy() / 1e3,
            "parallelism": grouped["eigen"].to_numpy() / np.maximum(grouped["total"].to_numpy(), 1),
        }
    )
    out = out.sort_values("total_ms", ascending=False)
    return (out if limit is None else out.head(limit)).reset_index(drop=True)
