"""Where the kernel puts more Eigen workers than cores: the slowdown of an op whose blocks
are one per worker, worked out by hand."""

from __future__ import annotations

import math

import pytest

from tftrace.analysis.predict.placement import (
    EXACT_UP_TO,
    expected_most,
    placement_slowdown,
    queued_slowdown,
)


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


def test_one_worker_beyond_many_cores_doubles_one_cores_load():
    # 17 workers on 16 cores: the one queued makes a core hold 2 blocks, against 17/16
    assert queued_slowdown(17, 16) == pytest.approx(2 / (17 / 16))


def test_the_approximations_meet_the_exact_sum_where_they_take_over():
    # beyond EXACT_UP_TO queued workers: normal loads with many a core, Poisson with few
    for cores in (130, 400, 3000):
        exact = expected_most(EXACT_UP_TO, cores)
        assert expected_most(EXACT_UP_TO + 1, cores) == pytest.approx(exact, rel=0.01)
    # 2 cores, 2000 queued: the exact sum (1017.839, by the binomial) against the normal
    assert expected_most(2000, 2) == pytest.approx(1017.839, rel=1e-4)
    assert expected_most(EXACT_UP_TO + 2, 2) == pytest.approx(
        (EXACT_UP_TO + 2) / 2 + ((EXACT_UP_TO + 2) / 2) ** 0.5 / math.sqrt(math.pi), rel=1e-4
    )


def test_a_host_claiming_thousands_of_cores_is_answered_at_once():
    # a manifest may say anything: the sum is bounded by the approximations, not the counts
    assert 1.0 < queued_slowdown(8192, 5000) < 5.0
    assert 1.0 <= queued_slowdown(2**63, 5000) < 1.001
    assert 1.0 <= queued_slowdown(10**7, 10**6) < 5.0
