"""A busy thread's share of a core, undone of the sharing: the work in a recorded span."""

from __future__ import annotations

import numpy as np
import pytest

from tftrace.analysis.predict.recorded_rate import recorded_rate


def test_work_is_the_span_where_threads_fit_the_cores_and_a_share_beyond():
    # 0-10: one thread busy; 10-20: three; 20-30: none (2 cores)
    busy = [
        (np.array([0]), np.array([20])),
        (np.array([10]), np.array([20])),
        (np.array([10]), np.array([20])),
    ]
    rate = recorded_rate(busy, 2, 0, 30)
    assert rate.work(0, 10) == pytest.approx(10)
    assert rate.work(10, 20) == pytest.approx(20 / 3)
    assert rate.work(5, 25) == pytest.approx(5 + 20 / 3 + 5)
    assert rate.work(20, 10) == 0  # an empty span
    assert rate.shared() == pytest.approx(1 / 3)  # 10-20 of 0-30
    # beyond the span it was built over, a thread had a whole core
    assert rate.work(np.array([30, -5]), np.array([40, 0])) == pytest.approx([10, 5])


def test_an_empty_span_still_measures():
    rate = recorded_rate([], 2, 5, 5)
    assert rate.work(0, 3) == pytest.approx(3)


def test_a_thread_that_wants_less_than_a_core_leaves_it_to_the_others():
    # three threads busy 0-10 on 2 cores, one of them wanting a tenth of a core over 0-10:
    # 2.1 threads' demand, each of the others with 2 / 2.1 of a core
    busy = [(np.array([0]), np.array([10]))] * 3
    rate = recorded_rate(busy, 2, 0, 10, (np.array([0]), np.array([10]), 0.1))
    assert rate.work(0, 10) == pytest.approx(10 * 2 / 2.1)
    assert rate.shared() == 0  # above 95 % of a core each
