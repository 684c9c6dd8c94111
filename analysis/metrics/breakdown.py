"""Where the wall time went: every instant of a window in exactly one category.

Categories, first match wins (so they add up to 100 % of the window):

1. ``intra-op parallel``: at least one Eigen (intra-op) worker is inside a region.
2. ``op, intra idle``: an op runs on some other thread (a graph op on an inter-op thread
   or inline, or an eager op on a Python thread) and no Eigen worker is busy.
3. ``waiting for a thread``: a closure has been scheduled (Record) and not yet started
   (StartRegion) on any pool, and nothing of 1-2 runs: work exists, no thread runs it.
4. ``dispatch & executor``: a Python thread is inside a TF call (eager dispatch,
   tf.function call) or an executor event is open, and nothing of 1-3 holds.
5. ``python / host``: Python code runs: a ``tf.py_function`` / ``py_func`` op is running
   (it holds the GIL; this takes precedence over 3 and 4), or the main thread is on a CPU
   (its CPU time grew by more than half of a sampling period, per the OS sampler) and
   nothing of 1-4 holds.
6. ``idle``: the rest.

tf.function call events (``__inference_*``) count as calls (4), not ops: the ops they run
are traced separately.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_thread_keys, trace_window
from tftrace.analysis.metrics.intervals import boundaries, clip, union
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.model.categories import is_in, starts_with
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.memo import per_run
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import FUNCTION_PREFIXES, PY_FUNCTION_OPS

CATEGORIES = (
    "intra-op parallel",
    "op, intra idle",
    "waiting for a thread",
    "dispatch & executor",
    "python / host",
    "idle",
)
# Indicator order (first match wins) and the category each one fills.
_ORDER = ("eigen", "ops", "python_ops", "queued", "tf_call", "main_on_cpu")
_CATEGORY_OF = (0, 1, 4, 2, 3, 4)


@dataclass(frozen=True)
class Indicators:
    """Interval sets, one per condition of the categories above."""

    eigen: tuple[np.ndarray, np.ndarray]
    ops: tuple[np.ndarray, np.ndarray]
    python_ops: tuple[np.ndarray, np.ndarray]
    queued: tuple[np.ndarray, np.ndarray]
    tf_call: tuple[np.ndarray, np.ndarray]
    main_on_cpu: tuple[np.ndarray, np.ndarray]


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


def _main_on_cpu(run: Run) -> tuple[np.ndarray, np.ndarray]:
    main = pool_thread_keys(run, Pool.PYTHON_MAIN)
    samples = run.samples[run.samples["thread"].isin(main)].sort_values("t_ns")
    if len(samples) < 2:
        return _empty()
    t, cpu = samples["t_ns"].to_numpy(), samples["cpu_ns"].to_numpy()
    on = np.diff(cpu) > 0.5 * np.diff(t)
    return t[:-1][on], t[1:][on]


@per_run
def indicators(run: Run) -> Indicators:
    eigen = set(pool_thread_keys(run, Pool.INTRA_OP).tolist())
    regions = run.regions
    in_eigen = regions["thread"].isin(eigen).to_numpy()
    ops = op_events(run)
    ops = ops[~starts_with(ops["op_type"], FUNCTION_PREFIXES)]
    is_python = is_in(ops["op_type"], PY_FUNCTION_OPS)
    queued = regions.dropna(subset=["scheduled_ns"])
    ev = run.events
    python = run.threads.loc[
        run.threads["pool"].isin([Pool.PYTHON_MAIN.value, Pool.PYTHON_OTHER.value]), "thread"
    ]
    kind = ev["kind"]
    calls = ((kind == EventKind.CALL.value) & ev["thread"].isin(python)) | (
        kind == EventKind.EXECUTOR.value
    )
    return Indicators(
        eigen=(regions["start_ns"].to_numpy()[in_eigen], regions["end_ns"].to_numpy()[in_eigen]),
        ops=(ops["start_ns"].to_numpy()[~is_python], ops["end_ns"].to_numpy()[~is_python]),
        python_ops=(ops["start_ns"].to_numpy()[is_python], ops["end_ns"].to_numpy()[is_python]),
        queued=(
            queued["scheduled_ns"].to_numpy(dtype=np.int64),
            queued["start_ns"].to_numpy(dtype=np.int64),
        ),
        tf_call=(ev.loc[calls, "start_ns"].to_numpy(), ev.loc[calls, "end_ns"].to_numpy()),
        main_on_cpu=_main_on_cpu(run),
    )


def _timeline(run: Run, lo: int, hi: int, sig: Indicators) -> tuple[np.ndarray, np.ndarray]:
    """Each condition's intervals merged into disjoint ones, whose boundaries then alternate
    open, closed, open...: after one merge of all boundaries, a condition holds where an odd
    number of its own boundaries lie behind. Merged, the boundaries are a few sorted runs, so
    the merge is near-linear, and nested events (an op in a call) add no edges."""
    idle = len(CATEGORIES) - 1
    if hi <= lo:
        return np.array([lo, max(lo, hi)], dtype=np.int64), np.full(1, idle)
    times = [np.array([lo, hi], dtype=np.int64)]
    owner = [np.full(2, -1, dtype=np.int8)]
    for k, name in enumerate(_ORDER):
        start, end = getattr(sig, name)
        bounds = boundaries(*union(*clip(start, end, lo, hi)))
        times.append(bounds)
        owner.append(np.full(len(bounds), k, dtype=np.int8))
    t, who = np.concatenate(times), np.concatenate(owner)
    order = np.argsort(t, kind="stable")
    t, who = t[order], who[order]
    last = np.ones(len(t), dtype=bool)  # the last boundary at each instant: its state holds
    np.not_equal(t[1:], t[:-1], out=last[:-1])
    category = np.full(int(last.sum()) - 1, idle)
    for k in reversed(range(len(_ORDER))):  # first match wins: assign the first one last
        mine = who == k
        if mine.any():
            category[(np.cumsum(mine) & 1).astype(bool)[last][:-1]] = _CATEGORY_OF[k]
    return t[last], category


@per_run
def _trace_timeline(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """The category timeline of the whole trace, computed once: any window's is a cut of it
    (what is open at an instant does not depend on the window around it)."""
    sig = indicators(run)
    lo, hi = trace_window(run)
    for name in _ORDER:  # the OS sampler's on-CPU spans may reach past the trace's events
        s, e = getattr(sig, name)
        if len(s):
            lo, hi = min(lo, int(s.min())), max(hi, int(e.max()))
    return _timeline(run, lo, hi, sig)


def category_timeline(
    run: Run, window: tuple[int, int] | None = None, signals: Indicators | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The window cut where any condition changes: (edges, the category of each segment as
    an index into CATEGORIES); ``len(edges) == len(categories) + 1``. Outside the trace
    nothing is open: idle."""
    lo, hi = window or trace_window(run)
    if signals is not None:
        return _timeline(run, lo, hi, signals)
    idle = len(CATEGORIES) - 1
    if hi <= lo:
        return np.array([lo, max(lo, hi)], dtype=np.int64), np.full(1, idle)
    edges, category = _trace_timeline(run)
    # The edges inside the window are one slice: no search per edge.
    first = int(np.searchsorted(edges, lo, side="right"))  # first edge after lo
    stop = int(np.searchsorted(edges, hi, side="left"))  # first edge at or after hi
    cut = np.concatenate([[lo], edges[first:stop], [hi]], dtype=np.int64)
    before = category[first - 1] if 0 < first <= len(category) else idle
    inner = category[first : min(stop, len(category))]
    tail = np.full(max(0, stop - max(first, len(category))), idle)  # past the last edge: idle
    return cut, np.concatenate([[before], inner, tail]).astype(category.dtype, copy=False)


def breakdown(
    run: Run, window: tuple[int, int] | None = None, signals: Indicators | None = None
) -> pd.DataFrame:
    """ns and share of the window per category (rows in CATEGORIES order)."""
    lo, hi = window or trace_window(run)
    edges, category = category_timeline(run, (lo, hi), signals)
    if hi <= lo:
        return pd.DataFrame({"category": CATEGORIES, "ns": 0, "share": 0.0})
    width = np.diff(edges)
    ns = np.bincount(category, weights=width, minlength=len(CATEGORIES)).astype(np.int64)
    return pd.DataFrame({"category": CATEGORIES, "ns": ns, "share": ns / (hi - lo)})


def span_breakdowns(
    run: Run, starts: np.ndarray, ends: np.ndarray, signals: Indicators | None = None
) -> np.ndarray:
    """ns per category of each span [starts[i], ends[i]] (one row per span, columns in
    CATEGORIES order), equal to ``breakdown`` of each span but from one category timeline
    of the whole trace: a category at an instant does not depend on the window around it,
    so each span's figures are differences of running totals (linear in events + spans, where
    a breakdown per span would cost spans x events)."""
    out = np.zeros((len(starts), len(CATEGORIES)), dtype=np.int64)
    if len(starts) == 0:
        return out
    lo, hi = trace_window(run)
    lo, hi = min(lo, int(starts.min())), max(hi, int(ends.max()))
    whole = _trace_timeline(run) if signals is None else None
    if whole is not None and whole[0][0] <= lo and hi <= whole[0][-1]:
        edges, category = whole  # the spans lie inside it: no cut to copy
    else:
        edges, category = category_timeline(run, (lo, hi), signals)
    width = np.diff(edges)

    def segment(t: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(category) - 1)

    i, j = segment(starts), segment(ends)
    total = np.zeros(len(width) + 1, dtype=np.int64)
    for c in range(len(CATEGORIES)):
        mine = category == c
        np.cumsum(np.where(mine, width, 0), out=total[1:])  # in c before each edge
        to_end = total[j] + np.where(mine[j], ends - edges[j], 0)
        to_start = total[i] + np.where(mine[i], starts - edges[i], 0)
        out[:, c] = to_end - to_start
    return out
