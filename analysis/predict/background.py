"""What else held the cores while the replayed span ran, by the kernel's count: the load the
replay adds beside the work it runs.

- ``threads``: the process's threads the replay does not run (a BLAS library's pool, tf.data's
  workers, Python threads that make no request), their CPU over the span, in cores;
- ``processes``: other processes on the usable CPUs, and the hypervisor's steal (tftrace's
  own recorder and py-spy left out: they are not there when the workload runs alone);
- ``spin``: the Eigen workers' CPU outside every region (spinning before they sleep), at the
  recorded pool size. The replay spins the pool itself where the recording shows how long a
  worker spins (``spin_budget_ns``: the budget ``s`` for which ``min(gap, s)`` over every
  worker's gaps between its regions sums to that CPU): each time the pool runs out of work,
  its ``intra`` workers want a core for ``s`` (``replay.py``). How often it runs dry is the
  setting's: at inter-op 1 after every op, so an op's thread shares the cores with the
  spinning workers between ops. Otherwise (no regions to measure gaps by) ``spin`` is held
  throughout, ``intra / recorded`` as much at ``intra`` workers; none at intra-op 1 (no
  workers) either way.

Each is an average over the span (the OS sampler reads a few times a second at most for
processes), taken as steady, but for a BLAS library's pool (NumPy's products, OpenBLAS or
MKL): it works only when Python calls it, so its CPU goes with the Python of the replayed
threads (``beside_python``: cores of it beside each thread running Python, a
``tf.numpy_function`` or the main thread between ops; at most its threads' number), and
what more it used stays in ``threads``. Held apart throughout instead, a pool that ran only
inside a ``tf.numpy_function`` took its cores from the TF ops that ran after the function,
and inter-op 1 (the function and the ops one after the other) was predicted 0.92x where it
ran 1.06x. A thread's Python (the main thread between ops, a
``tf.py_function``) is not here: the replay keeps it where it ran, at its own CPU
(``items.Items.shares_of``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import busy_intervals
from tftrace.analysis.metrics.contention import contention_of
from tftrace.analysis.metrics.cpu_time import thread_cpu
from tftrace.analysis.metrics.intervals import union
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.predict.wakeup import Wakeup, wakeup

# The cores left to the replayed threads are at least this share of them, however much
# others held: a recording on a machine others filled still ran.
LEAST_LEFT = 0.1


def left_to(cores: float, background: float) -> float:
    """The cores left to the replayed threads beside ``background`` cores held by others:
    what others hold is theirs, however many threads the pools have (a process pinned to a
    CPU keeps it, and a shard queued behind it waits for it)."""
    return max(cores - background, LEAST_LEFT * cores)


# The replay runs these threads itself, and the pool whose closures it replays (``background``'s
# ``closures``); the profiler's are there only while recording.
REPLAYED = (Pool.INTRA_OP.value, Pool.PYTHON_MAIN.value, Pool.PROFILER.value)


@dataclass(frozen=True)
class Background:
    """Cores held beside the replayed threads (module doc), each an average over the span."""

    threads: float = 0.0
    processes: float = 0.0
    spin: float = 0.0
    beside_python: float = 0.0
    with_python: float = 0.0  # the part of ``threads`` that goes with the Python (an average)
    spin_budget_ns: float = 0.0  # how long an Eigen worker out of work spins (0: unknown)
    wakeup: Wakeup | None = None  # what a hand-off to the pool costs, awake or asleep
    inter_wakeup: Wakeup | None = None  # what waking an inter-op thread for a closure costs

    @property
    def recorded(self) -> float:
        """The cores held beside the recorded run."""
        return self.threads + self.processes + self.spin

    def at(self, intra: int, recorded_intra: int) -> float:
        """The cores held beside a replay at ``intra`` Eigen workers (the spin apart where the
        replay spins the pool itself)."""
        held_spin = intra > 1 and self.spin_budget_ns <= 0
        spin = self.spin * intra / max(recorded_intra, 1) if held_spin else 0.0
        return self.threads - self.with_python + self.processes + spin


def background(
    run: Run,
    lo: int,
    hi: int,
    replayed: tuple[int, ...],
    python_ns: float = 0.0,
    closures: Pool = Pool.INTER_OP,
) -> Background:
    """The ``Background`` over [lo, hi]; ``replayed``: the Python threads the replay runs
    (the main thread, a server's request threads); ``python_ns``: their time running Python
    over the span, summed over them; ``closures``: the pool whose closures it runs (the
    inter-op pool; tf.data's for an input pipeline's). Nothing without the OS sampler."""
    if hi <= lo or run.samples.empty:
        return Background()
    seconds = (hi - lo) / 1e9
    cpu = thread_cpu(run, (lo, hi))
    pool = cpu["pool"].astype(str)
    others = ~pool.isin([*REPLAYED, closures.value]) & ~cpu["thread"].isin(replayed)
    used = cpu["cpu_ns"].clip(lower=0)
    blas = others & (pool == Pool.BLAS_OPENMP.value)
    beside = 0.0
    if python_ns > 0 and blas.any():
        beside = min(float(used[blas].sum()) / python_ns, float(blas.sum()))
    threads = float(used[others].sum()) / 1e9 / seconds
    with_python = min(beside * python_ns / 1e9 / seconds, threads)
    eigen = pool == Pool.INTRA_OP.value
    spun = float(cpu.loc[eigen, "outside_busy_ns"].clip(lower=0).sum())
    workers = cpu.loc[eigen, "thread"].to_numpy()
    budget = spin_budget(_gaps(run, workers, lo, hi), spun)
    processes = 0.0
    held = contention_of(run, (lo, hi))
    if held is not None:
        processes = (held.neighbours_core_s + held.steal_core_s) / seconds
    return Background(
        threads,
        processes,
        spun / 1e9 / seconds,
        beside,
        with_python,
        budget,
        wakeup(run, workers, lo, hi, budget),
        _inter_wakeup(
            run, cpu.loc[pool == Pool.INTER_OP.value, "thread"], closures, lo, hi, budget
        ),
    )


def _inter_wakeup(
    run: Run, inter: pd.Series, closures: Pool, lo: int, hi: int, budget: float
) -> Wakeup | None:
    """What waking one of the ``inter`` inter-op threads for a closure another thread
    scheduled costs (``wakeup.py``); the same Eigen pool's threads spin alike, for ``budget``
    ns. None where the closures replayed are tf.data's (``pipeline.py``): measured for the
    inter-op pool only."""
    if closures != Pool.INTER_OP:
        return None
    return wakeup(run, inter.to_numpy(), lo, hi, budget, from_pool=True)


def spin_budget(gaps: np.ndarray, spun: float) -> float:
    """How long a worker spins once out of work: the budget ``s`` for which ``min(gap, s)``
    over the workers' idle ``gaps`` (ns) sums to the CPU they ``spun`` (ns); the longest gap
    where they spun as long as they idled, 0 with no spin or no gaps."""
    gaps = gaps[gaps > 0].astype(np.float64)
    if spun <= 0 or not len(gaps):
        return 0.0
    if spun >= gaps.sum():
        return float(gaps.max())
    low, high = 0.0, float(gaps.max())
    for _ in range(60):  # bisection: the spin over the gaps grows with the budget
        mid = (low + high) / 2
        low, high = (mid, high) if np.minimum(gaps, mid).sum() < spun else (low, mid)
    return high


def _gaps(run: Run, workers: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Each worker's idle gaps between its regions (merged) over [lo, hi], in ns."""
    out = [np.zeros(0, dtype=np.int64)]
    for starts, ends in busy_intervals(run, workers).values():
        if len(starts):
            s, e = union(np.clip(starts, lo, hi), np.clip(ends, lo, hi))
            out.append(s[1:] - e[:-1])
    return np.concatenate(out)
