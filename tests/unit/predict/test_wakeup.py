"""What a hand-off to the Eigen pool costs, by the state its worker was in at the Record:
spinning (awake), asleep, or busy with another shard (left to the replay's queueing)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import MS, RECORD, START, STOP, stepped_run
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict.wakeup import MIN_HANDOFFS, wakeup

MAIN, INTER, EIGEN = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP
US = MS / 1000


def _three_handoffs(k: int, t0: float) -> list[Any]:
    """Thread 1 hands worker 2 a shard at 1 ms (the worker idle since the last step: asleep,
    started 20 us late), another 10 us after it ended (awake: 1 us late), and a third while
    the worker still runs the second (busy: it starts when that one ends, 200 us late)."""
    f = 1000 + 10 * k
    rows = []
    for flow, asked, start, end in (
        (f, 1.0, 1.020, 1.5),
        (f + 1, 1.510, 1.511, 1.7),
        (f + 2, 1.5, 1.7, 1.9),
    ):
        rows += [
            (1, "ThreadpoolListener::Record", RECORD, t0 + asked, t0 + asked, flow, None),
            (2, "ThreadpoolListener::StartRegion", START, t0 + start, t0 + start, None, flow),
            (2, "ThreadpoolListener::StopRegion", STOP, t0 + end, t0 + end, None, None),
        ]
    return rows


def test_a_handoff_costs_what_its_workers_state_did():
    run = stepped_run([MAIN, INTER, EIGEN], _three_handoffs, steps=MIN_HANDOFFS + 1, intra=1)
    workers = np.array([2])
    costs = wakeup(run, workers, 0, 10**12, 30 * US)
    assert costs is not None
    # the first step's first shard has no earlier region to be idle since: left out
    assert costs.awake_ns == pytest.approx(1 * US, rel=0.01)
    assert costs.asleep_ns == pytest.approx(20 * US, rel=0.01)
    # a budget longer than the steps' gaps: every one awake, too few asleep to say
    assert wakeup(run, workers, 0, 10**12, 100 * MS) is None
    # no budget (no spin measured): nothing is known awake
    assert wakeup(run, workers, 0, 10**12, 0.0) is None
    assert wakeup(run, np.array([7]), 0, 10**12, 30 * US) is None  # no such worker


def test_too_few_handoffs_say_nothing():
    run = stepped_run([MAIN, INTER, EIGEN], _three_handoffs, steps=MIN_HANDOFFS - 1, intra=1)
    assert wakeup(run, np.array([2]), 0, 10**12, 30 * US) is None


def test_an_inter_op_closure_another_of_the_pools_threads_scheduled_counts_with_from_pool():
    # inter-op thread 1 schedules the closures inter-op thread 2 runs
    run = stepped_run([MAIN, INTER, INTER], _three_handoffs, steps=MIN_HANDOFFS + 1, intra=1)
    threads = np.array([1, 2])
    assert wakeup(run, threads, 0, 10**12, 30 * US) is None  # the pool's own: left out
    costs = wakeup(run, threads, 0, 10**12, 30 * US, from_pool=True)
    assert costs is not None
    assert costs.awake_ns == pytest.approx(1 * US, rel=0.01)
    assert costs.asleep_ns == pytest.approx(20 * US, rel=0.01)
    # no spin measured: every take counts as asleep, and a spinning thread's take, not
    # measured, costs nothing (an inter-op thread spins on the same pool's code)
    blind = wakeup(run, threads, 0, 10**12, 0.0, from_pool=True)
    assert blind is not None
    assert blind.awake_ns == 0.0
    assert 1 * US < blind.asleep_ns < 20 * US
