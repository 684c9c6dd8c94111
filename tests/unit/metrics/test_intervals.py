"""Interval arithmetic against answers worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tftrace.analysis.metrics.intervals import clip, concurrency, union


def a(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_union_merges_overlaps_and_nesting():
    s, e = union(a(10, 0, 5, 30, 31), a(20, 6, 8, 40, 35))
    assert s.tolist() == [0, 10, 30] and e.tolist() == [8, 20, 40]


def test_union_of_nothing():
    s, e = union(a(), a())
    assert len(s) == len(e) == 0


def test_clip():
    s, e = clip(a(0, 50, 90), a(20, 60, 200), 10, 100)
    assert s.tolist() == [10, 50, 90] and e.tolist() == [20, 60, 100]


def test_concurrency_of_two_threads():
    # thread A busy [0, 60); thread B busy [20, 40) and [50, 100); window [0, 100)
    f = concurrency([a(0), a(20, 50)], [a(60), a(40, 100)], 0, 100)
    # 0-20: 1, 20-40: 2, 40-50: 1, 50-60: 2, 60-100: 1
    assert f.time_at_level(3).tolist() == [0, 70, 30]
    assert f.integral_at(np.array([100]))[0] == 130  # busy thread-time: 60 + 20 + 50
    assert f.integral_at(np.array([30]))[0] == 40  # 20 at level 1 + 10 at level 2


def test_concurrency_counts_a_thread_once_however_its_events_nest():
    f = concurrency([a(0, 10, 20)], [a(100, 30, 40)], 0, 100)
    assert f.values.max() == 1 and f.integral_at(np.array([100]))[0] == 100


def test_idle_window():
    f = concurrency([a()], [a()], 0, 100)
    assert f.time_at_level(2).tolist() == [100, 0]


@pytest.mark.parametrize("seed", range(5))
def test_concurrency_matches_a_brute_force_count(seed: int):
    rng = np.random.default_rng(seed)
    starts, ends = [], []
    for _ in range(4):
        s = rng.integers(0, 1000, 30)
        starts.append(s)
        ends.append(s + rng.integers(1, 80, 30))
    f = concurrency(starts, ends, 100, 900)
    grid = np.arange(100, 900)
    brute = sum(
        (((s[:, None] <= grid) & (grid < e[:, None])).any(axis=0)).astype(int)
        for s, e in zip(starts, ends, strict=True)
    )
    assert f.integral_at(np.array([900]))[0] == brute.sum()
    levels = f.time_at_level(5)
    assert levels.tolist() == [int((brute == k).sum()) for k in range(5)]
