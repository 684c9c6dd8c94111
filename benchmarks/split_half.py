"""How well the sweeps' measurements rank the settings against themselves: the ceiling of the
prediction benchmark's rank correlation.

A prediction is scored against measured medians, and those medians are noisy. How noisy, in
the benchmark's own terms: each workload's timed runs are split by round into two halves (the
sweep interleaves the settings, so a round times each of them once), each half gives every
setting its median, and the two halves' medians, each workload's put on the pooled scale
(``pooled_rank``), are rank-correlated over the corpus as a prediction is. Every split of the
rounds into two near-equal halves is taken and the correlations averaged (not one arbitrary
split).
The Spearman-Brown formula carries a half's correlation to all the runs (``2 r / (1 + r)``: the
correlation two independent sweeps of as many runs would show), and its square root is the
most a prediction free of error could reach against these medians (classical test theory: a
measurement correlates with its own expected value by the root of its reliability). A pooled
target above that ceiling is out of reach of any model on that set of runs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
from pooled_rank import GRID, pooled_spearman

# Beyond this many rounds, the splits taken are the first this many of them in order (35 for
# 7 rounds: C(7, 3)); each split is a rank correlation over the whole corpus.
MAX_SPLITS = 70


@dataclass(frozen=True)
class Reliability:
    """``half``: the mean rank correlation between halves of the runs; ``full``: carried to all
    the runs (Spearman-Brown); ``ceiling``: its square root; ``splits``: the splits averaged;
    ``points``: the settings pooled."""

    half: float
    full: float
    ceiling: float
    splits: int
    points: int
    rounds: int = 0  # the runs a setting the sweeps timed

    def rounds_for(self, ceiling: float) -> int | None:
        """The runs a setting for the ceiling to reach ``ceiling``, by the Spearman-Brown
        formula from this many (None where the halves agree on nothing)."""
        if self.full <= 0 or self.rounds <= 0:
            return None
        want = ceiling**2
        if self.full >= want:
            return self.rounds
        if want >= 1:
            return None
        times = want * (1 - self.full) / (self.full * (1 - want))
        return math.ceil(times * self.rounds - 1e-9)


def reliability(
    runs: Mapping[str, pd.DataFrame],
    recorded: Mapping[str, tuple[int, int]],
    over: str = GRID,
) -> Reliability | None:
    """The halves' agreement over ``runs`` (per workload: one row a timed run, columns
    ``intra``, ``inter``, ``round``, ``time_s``; only the settings to be scored), each workload's
    medians put on the scale ``over`` (``pooled_rank``: GRID or RECORDED, over its
    ``recorded`` setting). None where fewer than 4 rounds or 3 settings are there to split, or
    the halves agree on nothing (no spread)."""
    usable = {
        name: frame
        for name, frame in runs.items()
        if not frame.empty and name in recorded and _has(frame, recorded[name])
    }
    rounds = sorted({int(r) for frame in usable.values() for r in frame["round"]})
    if len(rounds) < 4:
        return None
    splits = _halves(rounds)
    rhos = []
    for chosen in splits:
        halves = [(_medians(frame, chosen), recorded[name]) for name, frame in usable.items()]
        rho = pooled_spearman(halves, "a", "b", over)
        if rho is not None:
            rhos.append(rho)
    if not rhos:
        return None
    half = sum(rhos) / len(rhos)
    full = 2 * half / (1 + half) if half > -1 else -1.0
    points = sum(frame.groupby(["intra", "inter"]).ngroups for frame in usable.values())
    return Reliability(half, full, math.sqrt(max(full, 0.0)), len(rhos), points, len(rounds))


@dataclass(frozen=True)
class BestAgreement:
    """How often the fastest setting by one half of a workload's runs ran within ``within``
    of the fastest by the other half: ``hits`` workloads of ``workloads``, the mean over
    every split, each taken both ways. A prediction that knew one half's medians exactly
    scores this against the other: the best-setting figure's own noise (halves of 3-4 runs
    a setting are noisier than all 7, so it is a floor of what all the runs allow)."""

    hits: float
    workloads: int
    within: float
    splits: int


def best_agreement(runs: Mapping[str, pd.DataFrame], within: float) -> BestAgreement | None:
    """``BestAgreement`` over ``runs`` (as ``reliability`` takes them); None with fewer than 4
    rounds, or no workload of two settings."""
    usable = {name: frame for name, frame in runs.items() if not frame.empty}
    rounds = sorted({int(r) for frame in usable.values() for r in frame["round"]})
    if len(rounds) < 4:
        return None
    splits = _halves(rounds)
    hits, workloads = 0.0, 0
    for frame in usable.values():
        tries = agreed = 0
        for chosen in splits:
            medians = _medians(frame, chosen)
            if len(medians) < 2:
                continue
            for mine, other in (("a", "b"), ("b", "a")):
                pick = medians[mine].idxmin()
                tries += 1
                agreed += bool(medians.at[pick, other] <= (1 + within) * medians[other].min())
        if tries:
            workloads += 1
            hits += agreed / tries
    if not workloads:
        return None
    return BestAgreement(hits, workloads, within, len(splits))


def _has(frame: pd.DataFrame, setting: tuple[int, int]) -> bool:
    return bool(((frame["intra"] == setting[0]) & (frame["inter"] == setting[1])).any())


def _halves(rounds: Sequence[int]) -> list[set[int]]:
    """The first ``MAX_SPLITS`` sets of half the rounds (rounded down), each split once: where
    the halves are of one size, only the sets that hold the first round (a split and its
    mirror are the same split)."""
    size = len(rounds) // 2
    combos = [set(c) for c in itertools.combinations(rounds, size)]
    if 2 * size == len(rounds):
        combos = [c for c in combos if rounds[0] in c]
    return combos[:MAX_SPLITS]


def _medians(frame: pd.DataFrame, first: set[int]) -> pd.DataFrame:
    """Each setting's median time in the rounds ``first`` (column ``a``) and in the rest
    (``b``), indexed by (intra, inter): the settings timed in both."""
    chosen = frame["round"].isin(first)
    med = [frame[part].groupby(["intra", "inter"])["time_s"].median() for part in (chosen, ~chosen)]
    return pd.concat([med[0].rename("a"), med[1].rename("b")], axis=1).dropna()
