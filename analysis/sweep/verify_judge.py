"""How one advised setting's timed runs are judged against the run's own: the verdict on a
finding's claim (faster, or not slower) and the sentence that gives its figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tftrace.analysis.findings.finding import Expect, Status
from tftrace.analysis.sweep.stats import ALPHA, MIN_GAIN, MIN_REPEATS, p_faster, pairwise_speedup
from tftrace.analysis.sweep.timing import Objective, as_objective

# "Not slower": not slower beyond noise, and typically (the pairwise median) no more than 5 %
# slower, so that noise too large to judge does not confirm a setting whose runs are slower.
NOT_SLOWER_TOLERANCE = 0.05


def compare(now: Sequence[float], then: Sequence[float]) -> tuple[float, float, float, int]:
    """``then``'s speedup over ``now`` (their per-run times): the median of the pairwise
    ratios, its worst and best case from the two ranges, and the runs each has (the fewer)."""
    speedup = pairwise_speedup(now, then)
    lo, hi = min(now) / max(then), max(now) / min(then)
    return speedup, float(lo), float(hi), min(len(now), len(then))


@dataclass(frozen=True)
class _Words:
    """How a verdict on one measure is said: better, worse, how much worse, the figure."""

    better: str
    worse: str
    typically_worse: str
    measure: str  # put before the figures: "" for the time per step


_WORDS = {
    None: _Words("ran faster than", "ran slower than", "is slower", ""),
    Objective.THROUGHPUT: _Words(
        "served more requests per second than",
        "served fewer requests per second than",
        "serves fewer requests per second",
        "requests/s ",
    ),
    Objective.P50: _Words(
        "had a lower p50 latency than",
        "had a higher p50 latency than",
        "has a higher p50 latency",
        "p50 latency ",
    ),
    Objective.P99: _Words(
        "had a lower p99 latency than",
        "had a higher p99 latency than",
        "has a higher p99 latency",
        "p99 latency ",
    ),
}


def open_to_noise(expect: Expect, now: Sequence[float], then: Sequence[float]) -> bool:
    """A "not slower" claim whose runs (``then``, against ``now``) neither confirm nor refute
    it: not slower beyond noise, but typically more than ``NOT_SLOWER_TOLERANCE`` slower."""
    if expect is not Expect.NOT_SLOWER or min(len(now), len(then)) < MIN_REPEATS:
        return False  # too few runs are judged inconclusive, not left open
    speedup = pairwise_speedup(now, then)
    slower = p_faster(now, then) <= ALPHA and speedup <= 1 - MIN_GAIN
    return not slower and speedup < 1 - NOT_SLOWER_TOLERANCE


def judge(
    expect: Expect,
    now: Sequence[float],
    then: Sequence[float],
    name: str,
    base: str,
    objective: Objective | str | None = None,
) -> tuple[Status, str]:
    """The advised setting's per-run figures (``then``, called ``name``) against the run's
    own (``now``, called ``base``), lower is better: the status and a sentence with the
    figures, which name the ``objective`` (None: the time per step)."""
    goal = None if objective is None else as_objective(objective)
    words = _WORDS[goal]
    speedup, lo, hi, runs = compare(now, then)
    # the ratio of seconds per request is the ratio of requests/s; a latency's is "x lower"
    lower = " lower" if goal in (Objective.P50, Objective.P99) else ""
    figures = f"{words.measure}{speedup:.2f}x{lower} ({lo:.2f}-{hi:.2f}x over {runs} runs each)"
    if runs < MIN_REPEATS:
        return Status.INCONCLUSIVE, (
            f"{runs} run(s) per setting are too few to judge noise (need {MIN_REPEATS}): "
            f"{name} vs {base}: {figures}"
        )
    if p_faster(then, now) <= ALPHA and speedup >= 1 + MIN_GAIN:
        verdict = Status.CONFIRMED
        said = f"{name} {words.better} {base}: {figures}"
    elif p_faster(now, then) <= ALPHA and speedup <= 1 - MIN_GAIN:
        verdict = Status.NOT_CONFIRMED
        said = f"{name} {words.worse} {base}: {figures}"
    elif open_to_noise(expect, now, then):
        verdict = Status.NOT_CONFIRMED
        said = (
            f"{name} and {base} are within noise, but typically {name} {words.typically_worse}: "
            f"{figures}"
        )
    else:
        verdict = Status.CONFIRMED if expect is Expect.NOT_SLOWER else Status.NOT_CONFIRMED
        said = f"{name} and {base} are within noise: {figures}"
    return verdict, said
