"""What each thread did, as the replay needs it: its ops with their Eigen shards, the ops it
only waited in, and the inter-op closures.

- An op (a kernel event on the main thread or an inter-op thread, outermost on its thread:
  an op nested in another is part of it) splits into a serial part, the hand-off to the Eigen
  pool and a parallel part: the parallel part is the work of its shards (the Eigen regions
  whose Record it wrote, followed down the split: ``ops.closure_owners``) plus the caller's
  own work while they ran (TF's caller runs shards too); the hand-off is the pool's wake-up
  cost, which the replay charges by the pool's state where the recording measures both
  (``wakeup.py``), else the delay from its first shard's Record to that shard's start, at
  most the median of those delays over the span (a longer one waited for busy workers, which
  the replay reproduces itself); the serial part is the rest of the op, less that delay.
  Work is recorded time undone of the cores' sharing (``recorded_rate``).
- A ``tf.py_function`` op is Python: kept as recorded.
- A wait op (a tf.function call, an iterator's get-next: ``WAIT_OP_PREFIXES``) holds its
  thread while other threads work; the replay joins the closures it scheduled.
- A closure is a StartRegion..StopRegion on an inter-op thread (outermost), joined to the
  Record that scheduled it (``run.regions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from tftrace.analysis.metrics.busy import pool_thread_keys
from tftrace.analysis.metrics.intervals import concurrency, union
from tftrace.analysis.metrics.ops import closure_owners, op_events
from tftrace.analysis.model.categories import equals, is_in, starts_with
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import ITERATOR_GET_NEXT, PY_FUNCTION_OPS, WAIT_OP_PREFIXES
from tftrace.analysis.predict.background import Background, background
from tftrace.analysis.predict.recorded_rate import Rate, recorded_rate

# Per op with shards: its row, each worker's shard spans, how many shards, the hand-off (ns),
# the spans its shards covered (starts, ends)
Shards = list[tuple[int, list[tuple[np.ndarray, np.ndarray]], int, float, np.ndarray, np.ndarray]]
# What an item of a thread is
WORK, PYTHON, WAIT, INPUT = "work", "python", "wait", "input"


def outermost(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of the intervals not inside an earlier one of the same thread."""
    keep = np.zeros(len(start), dtype=bool)
    for t in np.unique(thread):
        rows = np.flatnonzero(thread == t)
        rows = rows[np.lexsort((-end[rows], start[rows]))]
        reach = np.maximum.accumulate(end[rows])
        keep[rows] = np.r_[True, start[rows][1:] >= reach[:-1]]
    return keep


@dataclass(frozen=True)
class Items:
    """The items of the threads that own work over a span, one row each (columns ``thread``,
    ``start_ns``, ``end_ns``, ``what``: WORK, PYTHON, WAIT or INPUT; for WORK: ``serial``,
    ``handoff``, ``parallel`` and ``inline`` in ns and ``shards``), the inter-op closures
    (``thread``, ``start_ns``, ``end_ns``, ``scheduled_ns``, ``scheduled_by``; -1 where no
    Record) and the recorded rate."""

    items: pd.DataFrame
    closures: pd.DataFrame
    rate: Rate
    caller_share: float = 1.0  # of a core, an op's own thread while its shards ran
    caller_measured: bool = False  # by the OS sampler; else assumed (a whole core)
    split_together: float = 0.0  # share of [lo, hi] with two ops or more split at once
    background: Background = field(default_factory=Background)  # what else held the cores
    rates: dict[int, CpuRate] = field(default_factory=dict)  # CPU and run queue, by thread

    def shares_of(self, thread: int, a: float, b: float) -> tuple[float, float]:
        """The shares of [a, b] ``thread`` spent on a CPU and in the kernel's run queue, over
        its busy time (a request thread's: outside its calls); (0, 0) where not sampled."""
        rate = self.rates.get(thread)
        if rate is None:
            return 0.0, 0.0
        on, queued = rate.shares(a, b)
        return float(on), float(queued)


def thread_items(
    run: Run,
    lo: int,
    hi: int,
    main: int | tuple[int, ...],
    cores: float,
    callers_over: tuple[int, int] | None = None,
    pool: Pool = Pool.INTER_OP,
) -> Items:
    """The items of every thread but the Eigen workers over [lo, hi], and the closures of
    ``pool`` (tf.data's: ``pipeline.py``); ``main``: the thread that steps (a server's request
    threads: each); ``callers_over``: a wider span to measure the ops' own threads' share of
    a core while their shards ran (``caller_share``) over, where [lo, hi] is a stretch of it."""
    mains = (main,) if isinstance(main, int) else tuple(main)
    items = _op_items(run, lo, hi)
    closures = _closures(run, lo, hi, pool)
    shards = _shards(run, items)
    covered = [(int(items["thread"].iat[i]), us, ue) for i, _, _, _, us, ue in shards]
    wide = _op_items(run, *callers_over) if callers_over is not None else None
    callers = (
        [(int(wide["thread"].iat[i]), us, ue) for i, _, _, _, us, ue in _shards(run, wide)]
        if wide is not None
        else covered
    )
    measured = caller_share(run, callers)
    share = 1.0 if measured is None else measured
    lighter = (
        np.concatenate([us for _, us, _ in covered] or [np.zeros(0, np.int64)]),
        np.concatenate([ue for _, _, ue in covered] or [np.zeros(0, np.int64)]),
        share,
    )
    busy = _busy(run, items, closures, mains)
    on_cpu = cpu_rates(run, busy)
    # a main (or request) thread's Python: its CPU over its time outside its calls
    spans = {m: _python_spans(items, m, lo, hi) for m in mains}
    held = background(run, lo, hi, mains, _python_ns(items, spans, lo, hi), pool)
    rates = {**on_cpu, **cpu_rates(run, spans, unbusy=0.0)}
    loads = [(s, e, _loads(rates.get(m), s, e)) for m, (s, e) in spans.items()]
    rate = recorded_rate(list(busy.values()), cores, lo, hi, lighter, held.recorded, loads)
    items = _with_op_work(items, shards, rate, share, on_cpu, held.wakeup is None)
    together = concurrency([us for _, us, _ in covered], [ue for _, _, ue in covered], lo, hi)
    split_together = float(together.time_at_level(3)[2]) / max(hi - lo, 1)
    return Items(
        items,
        closures,
        rate,
        share,
        measured is not None,
        split_together,
        held,
        rates,
    )


def _python_spans(
    items: pd.DataFrame, main: int, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """A main (or request) thread's time in [lo, hi] outside its ops, its calls and its input
    waits: its Python (starts, ends)."""
    mine = items[items["thread"] == main]
    s, e = union(mine["start_ns"].to_numpy(), mine["end_ns"].to_numpy())
    starts = np.r_[lo, np.clip(e, lo, hi)]
    ends = np.r_[np.clip(s, lo, hi), hi]
    keep = ends > starts
    return starts[keep], ends[keep]


def _python_ns(
    items: pd.DataFrame, spans: dict[int, tuple[np.ndarray, np.ndarray]], lo: int, hi: int
) -> float:
    """The threads' time running Python over [lo, hi]: their ``tf.py_function`` ops and the
    main (or request) threads' time outside ops, summed over the threads."""
    py = items[items["what"] == PYTHON]
    inside = np.clip(py["end_ns"], lo, hi) - np.clip(py["start_ns"], lo, hi)
    return float(inside.sum()) + sum(float((e - s).sum()) for s, e in spans.values())


def _op_items(run: Run, lo: int, hi: int) -> pd.DataFrame:
    """The ops over [lo, hi] as items (``thread``, ``start_ns``, ``end_ns``, ``what``), by
    thread and start: work outermost among the ops a thread works in; a wait op may hold
    work (a function run inline on its caller), so it is outermost among the waits only."""
    ops = op_events(run)
    ops = ops[(ops["end_ns"].to_numpy() > lo) & (ops["start_ns"].to_numpy() < hi)]
    waiting = starts_with(ops["op_type"], WAIT_OP_PREFIXES)
    what = np.where(waiting, WAIT, np.where(is_in(ops["op_type"], PY_FUNCTION_OPS), PYTHON, WORK))
    what = np.where(equals(ops["op_type"], ITERATOR_GET_NEXT), INPUT, what)
    thread, start, end = (ops[c].to_numpy() for c in ("thread", "start_ns", "end_ns"))
    keep = np.zeros(len(ops), dtype=bool)
    for mask in (~waiting, waiting):
        rows = np.flatnonzero(mask)
        keep[rows[outermost(thread[rows], start[rows], end[rows])]] = True
    return pd.DataFrame(
        {"thread": thread[keep], "start_ns": start[keep], "end_ns": end[keep], "what": what[keep]}
    ).sort_values(["thread", "start_ns"], ignore_index=True)


def _loads(rate: CpuRate | None, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The share of a core a thread used over each span (0 where not sampled)."""
    return np.zeros(len(starts)) if rate is None else rate.shares(starts, ends)[0]


# Below this much time covered by shards (2 sampler periods at 100 Hz) the OS sampler's
# cumulative CPU says too little of the callers: a whole core is assumed. A custom Keras
# training loop's shards covered 44 and 45 ms in two recordings at 2, 2 on 2 cores, and its
# callers used 24 % and 23 % of a core then; taken as a whole core (a floor of 100 ms), its
# intra-op 1, inter-op 2 was predicted 1.51x and 1.50x against 1.31x and 1.42x measured
# (1.37x and 1.41x at 20 ms).
MIN_COVERED_NS = 20_000_000


def caller_share(run: Run, covered: list[tuple[int, np.ndarray, np.ndarray]]) -> float | None:
    """The share of a core the ops' own threads used while their shards ran: their CPU time
    (the OS sampler's cumulative count, interpolated at each span's ends) over those spans;
    None without samples of them or with too little covered time. TF's callers differ: one
    runs shards itself, one waits on a barrier (Eigen's contraction, oneDNN's products)."""
    samples = run.samples
    cpu_ns, wall_ns = 0.0, 0.0
    for thread in sorted({t for t, _, _ in covered}):
        mine = samples[samples["thread"] == thread]
        if len(mine) < 2:
            return None
        t, cpu = mine["t_ns"].to_numpy(), mine["cpu_ns"].to_numpy()
        for th, us, ue in covered:
            if th == thread:
                inside = (us >= t[0]) & (ue <= t[-1])
                cpu_ns += float((np.interp(ue, t, cpu) - np.interp(us, t, cpu))[inside].sum())
                wall_ns += float((ue - us)[inside].sum())
    if wall_ns < MIN_COVERED_NS:
        return None
    return float(min(max(cpu_ns / wall_ns, 0.0), 1.0))


def _closures(run: Run, lo: int, hi: int, pool: Pool) -> pd.DataFrame:
    regions = run.regions
    inter = np.isin(regions["thread"].to_numpy(), pool_thread_keys(run, pool))
    start, end = regions["start_ns"].to_numpy(), regions["end_ns"].to_numpy()
    rows = np.flatnonzero(inter & (start >= lo) & (start < hi))
    thread = regions["thread"].to_numpy()[rows]
    rows = rows[outermost(thread, start[rows], end[rows])]
    return pd.DataFrame(
        {
            "thread": regions["thread"].to_numpy()[rows],
            "start_ns": start[rows],
            "end_ns": end[rows],
            "scheduled_ns": regions["scheduled_ns"].to_numpy(dtype=np.int64, na_value=-1)[rows],
            "scheduled_by": regions["scheduled_by"].to_numpy(dtype=np.int64, na_value=-1)[rows],
        }
    ).sort_values("start_ns", ignore_index=True)


def _cpu_at(thread: np.ndarray, t: np.ndarray, on_cpu: dict[int, CpuRate]) -> np.ndarray:
    """Each row's thread's CPU over its busy time at ``t`` (NaN where not sampled)."""
    out = np.full(len(t), np.nan)
    for k, mine in on_cpu.items():
        rows = thread == k
        if rows.any():
            out[rows] = mine.at(t[rows])
    return out


def _busy(
    run: Run, items: pd.DataFrame, closures: pd.DataFrame, mains: tuple[int, ...]
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each thread's busy intervals as the replay counts them: closures on the inter-op
    threads, regions on the Eigen workers, work on the main (or request) threads."""
    out = {}
    for frame in (closures, run.regions[run.regions["thread"].isin(eigen_threads(run))]):
        for thread, group in frame.groupby("thread"):
            out[int(thread)] = (group["start_ns"].to_numpy(), group["end_ns"].to_numpy())
    for main in mains:
        mine = items[(items["thread"] == main) & (items["what"] == WORK)]
        out[int(main)] = (mine["start_ns"].to_numpy(), mine["end_ns"].to_numpy())
    return out


@dataclass(frozen=True)
class CpuRate:
    """A thread's CPU over its busy time (at most 1) in each interval between two of the OS
    sampler's readings (``times``: the readings; ``rate``: one per interval), and its wait in
    the kernel's run queue over the same (``queued``: at most what the CPU leaves)."""

    times: np.ndarray
    rate: np.ndarray
    queued: np.ndarray

    def at(self, t: np.ndarray) -> np.ndarray:
        slot = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.rate) - 1)
        return self.rate[slot]

    @cached_property
    def _integrals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The readings' times, and the CPU and run-queue shares integrated up to each."""
        t = self.times.astype(np.float64)
        widths = np.diff(t)
        on = np.r_[0.0, np.cumsum(self.rate * widths)]
        return t, on, np.r_[0.0, np.cumsum(self.queued * widths)]

    def shares(self, a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The mean CPU and run-queue shares over each [a, b] (each interval weighed by its
        overlap); 0 for a span outside the readings or empty."""
        t, on, queued = self._integrals
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        inside = (b > a) & (a >= t[0]) & (b <= t[-1])
        width = np.where(inside, b - a, 1.0)

        def mean(integral: np.ndarray) -> np.ndarray:
            grown = np.interp(b, t, integral) - np.interp(a, t, integral)
            return np.where(inside, grown / width, 0.0)

        return mean(on), mean(queued)


def cpu_rates(
    run: Run, busy: dict[int, tuple[np.ndarray, np.ndarray]], unbusy: float = 1.0
) -> dict[int, CpuRate]:
    """Each busy thread's CPU per busy second, per sampler interval (the kernel's count;
    ``unbusy`` in an interval where it was not busy at all)."""
    samples = run.samples
    out: dict[int, CpuRate] = {}
    if samples.empty:
        return out
    for thread, group in samples.groupby("thread", sort=False):
        if int(thread) not in busy or len(group) < 2:
            continue
        group = group.sort_values("t_ns")
        t = group["t_ns"].to_numpy()
        cpu = np.diff(group["cpu_ns"].to_numpy().astype(np.float64))
        wait = np.diff(group["wait_ns"].to_numpy().astype(np.float64))
        starts, ends = busy[int(thread)]
        inside = np.diff(concurrency([starts], [ends], int(t[0]), int(t[-1])).integral_at(t))
        per = np.maximum(inside, 1.0)
        rate = np.where(inside > 0, np.minimum(cpu / per, 1.0), unbusy)
        queued = np.where(inside > 0, np.clip(wait / per, 0.0, 1.0 - rate), 0.0)
        out[int(thread)] = CpuRate(t, rate, queued)
    return out


def eigen_threads(run: Run) -> np.ndarray:
    return pool_thread_keys(run, Pool.INTRA_OP)


def _shards(run: Run, items: pd.DataFrame) -> Shards:
    """Per op with shards: (its row, each worker's shard spans merged and cut to the op, how
    many shards, the hand-off delay in ns, the spans its shards covered: starts, ends)."""
    work = np.flatnonzero(items["what"].to_numpy() == WORK)
    if not len(work) or run.regions.empty:
        return []
    start, end = items["start_ns"].to_numpy(), items["end_ns"].to_numpy()
    regions, owner = closure_owners(run, items.iloc[work].reset_index(drop=True))
    r_start, r_end = regions["start_ns"].to_numpy(), regions["end_ns"].to_numpy()
    r_thread = regions["thread"].to_numpy()
    asked = regions["scheduled_ns"].to_numpy(dtype=np.int64, na_value=-1)
    by = regions["scheduled_by"].to_numpy(dtype=np.int64, na_value=-1)
    owned = np.flatnonzero(owner >= 0)
    order = owned[np.argsort(owner[owned], kind="stable")]
    out = []
    for group in np.split(order, np.flatnonzero(np.diff(owner[order])) + 1) if len(order) else []:
        i = int(work[owner[group[0]]])
        s = np.clip(r_start[group], start[i], end[i])
        e = np.clip(r_end[group], start[i], end[i])
        us, ue = union(s, e)
        # a region may nest in another on its worker: each worker's regions merged
        worker = r_thread[group]
        spans = [union(s[worker == w], e[worker == w]) for w in np.unique(worker)]
        # the hand-off: the op's own first Record to the start of that shard
        own = group[(by[group] == items["thread"].iat[i]) & (asked[group] >= 0)]
        first = own[np.argmin(asked[own])] if len(own) else group[np.argmin(r_start[group])]
        delay = float(r_start[first] - asked[first]) if asked[first] >= 0 else 0.0
        room = max(float(end[i] - start[i]) - float((ue - us).sum()), 0.0)
        out.append((i, spans, len(group), min(max(delay, 0.0), room), us, ue))
    return out


def _with_op_work(
    items: pd.DataFrame,
    shards: Shards,
    rate: Rate,
    share: float,
    on_cpu: dict[int, CpuRate],
    recorded_delays: bool = True,  # False: the replay charges the pool's state (wakeup.py)
) -> pd.DataFrame:
    """``items`` with each op's serial, hand-off and parallel parts and its shard count.

    Where the OS sampler read the op's thread, the part of a split op that no shard covered
    counts as serial work only for the thread's CPU over its busy time then; the rest of it
    the thread was off a CPU, waiting on the pool, and joins the hand-off (the pool's cost,
    which an op run inline at intra-op 1 does not pay). Measured on 2 cores: a Keras fit of
    MobileNetV2 at intra 2 kept its inter-op threads on a CPU 38 % of their busy time, 42 %
    of its split ops' time was covered by no shard, and at intra 1 its ops ran 1.9x
    faster.

    An op not split is, where the OS sampler read its thread, its time at the thread's CPU
    over its busy time then: the kernel's count, not an even share of the cores. On 2 cores
    a small conv net served from four threads at intra-op 1, inter-op 2 kept its inter-op
    threads on a CPU 51 % of their busy time, an even share 69 %: its ops' work came out
    42 % above their CPU, and inter-op 1 was predicted 0.77x where it ran 1.08x (0.84x now;
    the rest is the interpreter lock's lead, ``replay.py``).

    Run inline (``inline``; -1 for an op not split), a split op is its shards' work alone:
    what its own thread did around and beside them was the split's (scheduling the shards,
    waking the workers, waiting for them). Measured on 2 cores, op by op (the same 162 ops
    of a Keras fit of MobileNetV2 recorded at intra-op 2 and at intra-op 1): the ops took
    180 ms inline, their shards' work was 184 ms, their own threads' work beside and around
    it 237 ms more. Two chains of 300x300 products (the sample traces' workload) ran 0.86x,
    0.88x and 1.08x at intra-op 1, inter-op 1 against 2, 2: predicted 0.96-1.02x so, and
    0.57-0.62x with their threads' work beside the shards counted as the op's.
    """
    n = len(items)
    serial = rate.work(items["start_ns"].to_numpy(), items["end_ns"].to_numpy())
    handoff, parallel, count = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
    inline = np.full(n, -1.0)
    for i, spans, k, delay, us, ue in shards:
        covered = float(rate.work(us, ue).sum())
        shard_work = sum(float(rate.work(s, e).sum()) for s, e in spans)
        handoff[i] = delay if recorded_delays else 0.0
        parallel[i] = shard_work + share * covered
        serial[i] = max(serial[i] - covered - delay, 0.0)
        count[i] = k
        inline[i] = shard_work
    if shards:  # the pool's wake-up: a longer delay waited for busy workers
        handoff = np.minimum(handoff, float(np.median([d for _, _, _, d, _, _ in shards])))
    start, end = items["start_ns"].to_numpy(), items["end_ns"].to_numpy()
    on = _cpu_at(items["thread"].to_numpy(), (start + end) / 2, on_cpu)
    sampled = ~np.isnan(on)
    split = sampled & (count > 0)
    kept = serial[split] * on[split]
    handoff[split] += serial[split] - kept
    serial[split] = kept
    unsplit = sampled & (count == 0) & (items["what"].to_numpy() == WORK)
    serial[unsplit] = (end - start)[unsplit] * on[unsplit]
    return items.assign(
        serial=serial, handoff=handoff, parallel=parallel, shards=count, inline=inline
    )
