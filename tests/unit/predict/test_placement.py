"""Where the kernel puts more Eigen workers than cores: the slowdown of an op whose blocks
are one per worker, worked out by hand."""

from __future__ import annotations

import pytest

from tftrace.analysis.predict.placement import placement_slowdown, queued_slowdown


def test_workers_that_fit_the_cores_queue_nowhere():
    assert queued_slowdown(2, 2) == 1.0
    assert queued_slowdown(4, 8) == 1.0
    assert queued_slowdown(4, 1) == 1.0  # one core: every block waits its turn anyway


def test_the_op_waits_for_the_most_loaded_core():
    # 4 workers on 2 cores: the 2 queued land on one core half the time (3 blocks' time),
    # apart the other half (2): 2.5 against 2
    assert queued_slowdown(4, 2) == pytest.approx(1.25)
    # 3 workers: the queued one makes a core hold 2 blocks, against 1.5 ideally
    assert queued_slowdown(3, 2) == pytest.approx(4 / 3)
    # 5 on 3 cores: 2 queued on 3 cores, together a third of the time: 1 + (1/3 x 2 + 2/3 x
    # 1) against 5/3
    assert queued_slowdown(5, 3) == pytest.approx((1 + 1 / 3 * 2 + 2 / 3) / (5 / 3))


def test_only_one_block_per_worker_up_to_the_balance_interval_is_slowed():
    ms = 1e6
    assert placement_slowdown(2, 2, 4, 1 * ms, 2.0) == pytest.approx(1.25)
    # more shards than the recorded pool: a free worker takes the blocks left
    assert placement_slowdown(3, 2, 4, 1 * ms, 2.0) == 1.0
    # blocks of 8 ms against the 2 ms interval of 2 CPUs: a quarter of the slowdown
    assert placement_slowdown(2, 2, 4, 8 * ms, 2.0) == pytest.approx(1 + 0.25 / 4)
    # the cores left to the pools are whole cores: 1.6 is 2, 1.4 is 1 (nothing to queue on)
    assert placement_slowdown(2, 2, 4, 1 * ms, 1.6) == pytest.approx(1.25)
    assert placement_slowdown(2, 2, 4, 1 * ms, 1.4) == 1.0
