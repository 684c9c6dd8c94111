"""The recording-overhead benchmark's statistics on hand-built data: a ratio's 95 %
confidence interval, and "precise" once it is narrower than the target's margin; the
workload's paired-chunk helpers."""

from __future__ import annotations

import math
import os
import subprocess

import pytest

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


# The workload's paired-chunk mode: chunks on and off in ABBA order.

w = load_benchmark("workloads/overhead_workload")  # its TensorFlow import waits for main()


def test_chunks_go_off_on_on_off_so_that_a_linear_drift_cancels():
    states = [w.chunk_is_on(i) for i in range(8)]
    assert states == [False, True, True, False, False, True, True, False]
    # Every pair (chunks 2i and 2i+1) holds one chunk of each state.
    assert all(states[2 * i] != states[2 * i + 1] for i in range(4))
    # Under a drift of +1 % per chunk, the on and the off chunks of each block of four add
    # up to the same.
    drift = [1 + 0.01 * i for i in range(8)]
    on_time = sum(t for t, on in zip(drift, states, strict=True) if on)
    assert math.isclose(on_time, sum(drift) / 2)


def test_the_workload_finds_children_by_parent_and_name():
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert w.children_named(os.getpid(), "sleep") == [child.pid]
        assert w.children_named(os.getpid(), "py-spy") == []
    finally:
        child.kill()
        child.wait()


def test_toggling_the_recorder_needs_tftrace_record_as_the_parent():
    with pytest.raises(SystemExit, match="not `tftrace record`"):
        w.toggle_targets("recorder")
    assert w.toggle_targets("none") == []
