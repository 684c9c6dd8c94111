"""Workloads' step times put on one scale and rank-correlated together, on hand-built times
with answers worked by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import load_benchmark

pr = load_benchmark("pooled_rank")


def test_over_the_grid_times_are_over_their_geometric_mean():
    times = pd.Series([1.0, 2.0, 4.0, 8.0], index=["a", "b", "c", "d"])
    mean = 2**1.5  # (1 * 2 * 4 * 8) ** (1 / 4)
    assert pr.on_scale(times, "a").tolist() == pytest.approx([t / mean for t in times])
    # one setting twice as slow moves the others by the fourth root of 2, not by 2
    slow_a = pr.on_scale(times.mul([2, 1, 1, 1]), "a")
    assert slow_a["b"] == pytest.approx(pr.on_scale(times, "a")["b"] / 2**0.25)


def test_over_the_recorded_setting_times_are_over_its_time():
    times = pd.Series([2.0, 1.0, 4.0], index=["rec", "b", "c"])
    assert pr.on_scale(times, "rec", pr.RECORDED).tolist() == [1.0, 0.5, 2.0]
    assert pr.on_scale(times, "gone", pr.RECORDED) is None


def test_no_scale_for_a_time_not_above_zero_or_no_times():
    assert pr.on_scale(pd.Series([1.0, 0.0]), 0) is None
    assert pr.on_scale(pd.Series([], dtype=float), 0) is None


def test_pooled_over_the_grid_by_hand():
    # w1's "a" ran 1.6x slower in y: over the grid x ranks w1 a, b, c at 1, 4, 6 and w2's
    # at 2, 3, 5; y ranks them 2, 3, 5 and 1, 4, 6: six ranks off by one, 1 - 6 * 6 / 210
    w1 = pd.DataFrame({"x": [1, 2, 4], "y": [1.6, 2, 4]}, index=["a", "b", "c"])
    w2 = pd.DataFrame({"x": [1, 1.5, 3], "y": [1, 1.5, 3]}, index=["a", "b", "c"])
    rho = pr.pooled_spearman([(w1, "a"), (w2, "a")], "x", "y")
    assert rho == pytest.approx(1 - 6 * 6 / 210)


def test_the_same_shape_at_any_size_pools_as_one():
    # y off from x by a constant factor, a second workload ten times slower
    w = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.2, 2.4, 3.6]}, index=["a", "b", "c"])
    for over in (pr.GRID, pr.RECORDED):
        rho = pr.pooled_spearman([(w, "a"), (w * 10, "a")], "x", "y", over)
        assert rho == pytest.approx(1.0)
    reversed_y = w.assign(y=w["y"].to_numpy()[::-1])
    assert pr.pooled_spearman([(reversed_y, "a")], "x", "y") == pytest.approx(-1.0)


@pytest.mark.filterwarnings("ignore:An input array is constant")
def test_too_few_points_or_no_spread_say_nothing():
    two = pd.DataFrame({"x": [1.0, 2.0], "y": [1.0, 2.0]}, index=["a", "b"])
    assert pr.pooled_spearman([(two, "a")], "x", "y") is None
    flat = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [5.0] * 3}, index=["a", "b", "c"])
    assert pr.pooled_spearman([(flat, "a")], "x", "y") is None
    assert pr.pooled_spearman([], "x", "y") is None
