"""Verification's judgement on hand-built figures: what confirms a finding that expects a
speedup and one that expects threads to be wasted, and which verdicts noise leaves open."""

from __future__ import annotations

import pytest

from tftrace.analysis.findings.finding import Expect, Status
from tftrace.analysis.sweep.verify_judge import compare, judge, open_to_noise

NOW = [1.00, 1.02, 0.98]
HALF = [0.50, 0.52, 0.49]  # disjoint and 2x faster
SAME = [0.99, 1.03, 1.01]  # overlaps NOW
SLOW = [1.50, 1.52, 1.49]  # disjoint and slower
SLOWISH = [1.10, 1.12, 0.97]  # overlaps NOW, typically 10 % slower


def _judge(expect: Expect, now: list[float], then: list[float]) -> tuple[Status, str]:
    return judge(expect, now, then, "intra 2 · inter 1", "intra 1 · inter 1")


@pytest.mark.parametrize(
    ("expect", "then", "status", "words"),
    [
        (Expect.FASTER, HALF, Status.CONFIRMED, "ran faster than intra 1 · inter 1: 2.00x"),
        (Expect.FASTER, SAME, Status.NOT_CONFIRMED, "within noise"),
        (Expect.FASTER, SLOW, Status.NOT_CONFIRMED, "ran slower"),
        (Expect.NOT_SLOWER, SAME, Status.CONFIRMED, "within noise"),
        (Expect.NOT_SLOWER, HALF, Status.CONFIRMED, "ran faster"),
        (Expect.NOT_SLOWER, SLOW, Status.NOT_CONFIRMED, "ran slower"),
        (Expect.NOT_SLOWER, SLOWISH, Status.NOT_CONFIRMED, "typically intra 2 · inter 1 is slower"),
        (Expect.FASTER, SLOWISH, Status.NOT_CONFIRMED, "within noise"),
    ],
)
def test_judge(expect: Expect, then: list[float], status: Status, words: str):
    got, reason = _judge(expect, NOW, then)
    assert got is status
    assert words in reason


def test_two_runs_are_too_few_to_judge():
    status, reason = _judge(Expect.FASTER, [1.0, 1.0], [0.5, 0.5])
    assert status is Status.INCONCLUSIVE
    assert "too few" in reason and "2.00x" in reason


def test_one_disturbed_run_of_seven_does_not_hide_a_speedup():
    # The two-branch workload's advice measured this way on a shared machine: one advised run
    # twice as long as the others (a burst of CPU steal) made the ranges overlap.
    now = [0.046, 0.047, 0.045, 0.040, 0.039, 0.044, 0.046]
    then = [0.032, 0.033, 0.027, 0.065, 0.032, 0.031, 0.030]
    status, reason = _judge(Expect.FASTER, now, then)
    assert status is Status.CONFIRMED, reason
    speedup, lo, hi, runs = compare(now, then)
    assert 1.3 < speedup < 1.5  # the typical ratio, not pulled down by the one slow run
    assert lo < 1 < hi and runs == 7


def test_noise_alone_confirms_no_speedup():
    # Seven draws of the same spread, shuffled between the two settings: no claim of "faster".
    times = [1.00, 1.04, 0.97, 1.02, 0.99, 1.05, 0.96, 1.01, 0.98, 1.03, 1.00, 0.95, 1.06, 0.99]
    status, _ = _judge(Expect.FASTER, times[0::2], times[1::2])
    assert status is Status.NOT_CONFIRMED


def test_a_not_slower_claim_typically_slower_within_noise_is_left_open():
    # SLOWISH: the ranges overlap, the typical ratio is 10 % slower: more runs decide it
    assert open_to_noise(Expect.NOT_SLOWER, NOW, SLOWISH)
    status, reason = _judge(Expect.NOT_SLOWER, NOW, SLOWISH)
    assert status is Status.NOT_CONFIRMED and "within noise, but typically" in reason


@pytest.mark.parametrize("then", [SAME, HALF, SLOW])
def test_verdicts_beyond_doubt_are_not_left_open(then: list[float]):
    # as fast, faster, slower beyond noise: nothing more to run
    assert not open_to_noise(Expect.NOT_SLOWER, NOW, then)


def test_a_claim_of_faster_is_never_left_open():
    # within noise is an answer to "faster": not confirmed, whatever the typical ratio
    assert not open_to_noise(Expect.FASTER, NOW, SLOWISH)
