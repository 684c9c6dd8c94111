"""The recording-overhead benchmark's stopping rule on hand-built rounds: a ratio's 95 %
confidence interval, and "precise" once it is narrower than the target's margin."""

from __future__ import annotations

import math

from conftest import load_benchmark

b = load_benchmark("record_overhead")
COMP = b.Comparison("(b)", "sampler+pyspy", "plain", 1.03)


def _results(ratios: list[float]) -> dict:
    plain = [b.Measurement(10.0, 11.0) for _ in ratios]
    other = [b.Measurement(10.0 * r, 11.0) for r in ratios]
    return {"plain": plain, "sampler+pyspy": other}


def test_the_interval_is_made_of_the_rounds_own_ratios():
    ratios = [1.01, 1.03, 1.02, 0.99, 1.05, 1.00, 1.02]
    lo, hi = b.ratio_ci([10 * r for r in ratios], [10.0] * len(ratios))
    # Seven rounds: the 95 % interval of the median runs from the smallest to the largest.
    assert math.isclose(lo, 0.99) and math.isclose(hi, 1.05)


def test_precise_once_the_interval_is_narrower_than_the_margin():
    assert not b.precise(_results([1.01, 1.02, 1.00]), COMP)  # too few rounds for an interval
    assert not b.precise(_results([1.01, 1.03, 1.02, 0.99, 1.05, 1.00, 1.02]), COMP)  # 0.06 wide
    steady = [1.010, 1.012, 1.011, 1.013, 1.010, 1.014, 1.012, 1.011]
    assert b.precise(_results(steady), COMP)  # 0.004 wide against a 0.03 margin
