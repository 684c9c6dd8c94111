"""What handing an op's shards to the Eigen pool costs, awake or asleep: a shard's delay from
its Record to its start, by the state its worker was in at the Record.

A worker out of work spins for a while (``background.spin_budget``), then sleeps. A shard
Recorded while its worker spins starts at once; one Recorded after it slept waits for the
kernel to wake it and give it a core. Measured on 2 cores, Keras MobileNetV2 served from
four threads: recorded at intra-op 2, inter-op 2 (spin budget 26 us), shards whose worker
had been idle under 30 us started 0.4 us after their Record (median), those idle 30 us or
more 4-12 us (median; 17 us mean); at inter-op 1 the same split, but more of them asleep
(the pool runs dry after every op). A shard Recorded while its worker still ran another
waited for that one: the replay queues such work itself, and they are left out here.

The replay charges each op's hand-off by the state its pool is in when the hand-off starts
(``replay.py``): awake while an op is in its parallel part or the pool spins, else asleep.

The inter-op pool is the same Eigen pool: a closure one thread Records waits for an idle
thread to wake and steal it, or for its scheduler to finish what it runs and take it back
(``replay.py``). Measured on 2 cores, a custom Keras training loop recorded at 2/2: closures
taken by a thread idle for less than 20 us started 0.6 us after their Record (median), by one
idle longer 34 us (median; 50-70 us mean), where most closures ran 2-3 us.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tftrace.analysis.model.run import Run

# Fewer hand-offs than this in a state: its cost is not measured (the op's own recorded
# hand-off is kept instead).
MIN_HANDOFFS = 20
# The slowest hand-offs left out of each mean: a worker preempted by another process.
TRIM = 0.99


@dataclass(frozen=True)
class Wakeup:
    """The mean delay (ns) from a shard's Record to its start with its worker awake and
    asleep at the Record."""

    awake_ns: float
    asleep_ns: float


def wakeup(
    run: Run,
    workers: np.ndarray,
    lo: int,
    hi: int,
    budget_ns: float,
    from_pool: bool = False,
) -> Wakeup | None:
    """The ``Wakeup`` of the shards in [lo, hi] that a thread outside the pool Recorded,
    ``workers`` the pool's threads and ``budget_ns`` how long one spins; None where either
    state has too few. ``from_pool``: also those another of the pool's threads Recorded (an
    inter-op closure that an idle thread steals); then too few taken awake is a take of 0
    (a thread that spins takes one in under a microsecond), and only too few asleep is None."""
    regions = run.regions
    mine = regions[regions["thread"].isin(workers)].sort_values(["thread", "start_ns"])
    if mine.empty:
        return None
    previous_end = mine.groupby("thread")["end_ns"].shift(1).to_numpy(dtype=np.float64)
    asked = mine["scheduled_ns"].to_numpy(dtype=np.float64, na_value=np.nan)
    start = mine["start_ns"].to_numpy(dtype=np.float64)
    by = mine["scheduled_by"].to_numpy(dtype=np.float64, na_value=np.nan)
    outside = by != mine["thread"].to_numpy() if from_pool else ~np.isin(by, workers)
    keep = outside & ~np.isnan(asked) & ~np.isnan(previous_end) & (start >= lo) & (start < hi)
    idle = asked[keep] - previous_end[keep]
    delay = np.maximum(start[keep] - asked[keep], 0.0)
    awake = delay[(idle >= 0) & (idle < budget_ns)]
    asleep = delay[idle >= max(budget_ns, 0.0)]
    if len(asleep) < MIN_HANDOFFS or (len(awake) < MIN_HANDOFFS and not from_pool):
        return None
    # an inter-op thread that spins takes a closure in under a microsecond: where too few
    # were taken so to measure it (a server's threads sleep between requests), none is charged
    took = _trimmed_mean(awake) if len(awake) >= MIN_HANDOFFS else 0.0
    return Wakeup(took, _trimmed_mean(asleep))


def _trimmed_mean(delays: np.ndarray) -> float:
    return float(delays[delays <= np.quantile(delays, TRIM)].mean())
