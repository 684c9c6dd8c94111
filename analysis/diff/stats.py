"""Step time of two runs, from their per-step samples: medians, spreads, speedup, and whether
the difference is real.

Two tests must agree before a difference counts: a two-sided Mann-Whitney U test on the step
times (p < ``ALPHA``) and a bootstrap 95 % interval of the ratio of medians (A / B) that
excludes 1. With fewer than ``MIN_STEPS`` steps on either side there is no verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

MIN_STEPS = 5  # per side: fewer give no verdict
ALPHA = 0.01  # the rank test's level
RESAMPLES = 2000  # bootstrap resamples of each side
SEED = 0  # the same samples always give the same interval
_CHUNK_VALUES = 2_000_000  # resampled values held at once (the memory of one bootstrap pass)

FASTER, SLOWER, SAME, TOO_FEW = "faster", "slower", "no significant difference", "too few steps"


@dataclass(frozen=True)
class Spread:
    """One side's step times (ms): how many, median, quartiles and the 10th/90th percentile."""

    steps: int
    median_ms: float
    p10_ms: float
    p25_ms: float
    p75_ms: float
    p90_ms: float

    @property
    def iqr_ms(self) -> float:
        return self.p75_ms - self.p25_ms

    @classmethod
    def of(cls, ms: np.ndarray) -> Spread:
        if len(ms) == 0:
            nan = float("nan")
            return cls(0, nan, nan, nan, nan, nan)
        p10, p25, p50, p75, p90 = np.percentile(ms, [10, 25, 50, 75, 90])
        return cls(len(ms), float(p50), float(p10), float(p25), float(p75), float(p90))

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "median_ms": _num(self.median_ms),
            "iqr_ms": _num(self.iqr_ms),
            "p10_ms": _num(self.p10_ms),
            "p25_ms": _num(self.p25_ms),
            "p75_ms": _num(self.p75_ms),
            "p90_ms": _num(self.p90_ms),
        }


@dataclass(frozen=True)
class StepTimeDiff:
    """Step time of A against B. ``speedup`` = median A / median B (above 1: B is faster);
    ``p_value`` of the two-sided U test; ``interval`` the bootstrap 95 % interval of the
    speedup; ``verdict`` one of "faster", "slower" (B against A), "no significant difference"
    or "too few steps" (then ``p_value`` and ``interval`` are None); ``reason`` says why."""

    a: Spread
    b: Spread
    speedup: float | None
    p_value: float | None
    interval: tuple[float, float] | None
    verdict: str
    reason: str
    per_step_verdict: str | None = None  # where ``verdict`` overrules the per-step test

    @property
    def significant(self) -> bool:
        return self.verdict in (FASTER, SLOWER)

    def with_reason(self, reason: str) -> StepTimeDiff:
        return replace(self, reason=reason)

    def overruled(self, verdict: str, reason: str) -> StepTimeDiff:
        """This difference with another verdict; ``per_step_verdict`` keeps the test's."""
        return replace(self, verdict=verdict, reason=reason, per_step_verdict=self.verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "speedup": _num(self.speedup),
            "p_value": _num(self.p_value),
            "interval": [_num(v) for v in self.interval] if self.interval else None,
            "verdict": self.verdict,
            "reason": self.reason,
            "per_step_verdict": self.per_step_verdict,
            "alpha": ALPHA,
            "resamples": RESAMPLES,
        }


def _num(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def compare_steps(
    a_ms: Sequence[float] | np.ndarray, b_ms: Sequence[float] | np.ndarray
) -> StepTimeDiff:
    """Compare the step times of A and B (ms, one value per steady step)."""
    a, b = np.asarray(a_ms, dtype=np.float64), np.asarray(b_ms, dtype=np.float64)
    spread_a, spread_b = Spread.of(a), Spread.of(b)
    speedup = (
        spread_a.median_ms / spread_b.median_ms
        if len(a) and len(b) and spread_b.median_ms > 0
        else None
    )
    if min(len(a), len(b)) < MIN_STEPS:
        why = (
            f"{TOO_FEW}: {len(a)} steady steps in A, {len(b)} in B, and a verdict needs "
            f"{MIN_STEPS} on each side"
        )
        return StepTimeDiff(spread_a, spread_b, speedup, None, None, TOO_FEW, why)
    p = rank_test(a, b)
    lo, hi = bootstrap_ratio(a, b)
    shown = f"p = {p:.2g}, 95 % interval of the speedup {lo:.3f}-{hi:.3f}"
    if p < ALPHA and not lo <= 1.0 <= hi:
        verdict = FASTER if lo > 1.0 else SLOWER
        reason = f"B is {verdict} than A ({shown})"
    else:
        verdict = SAME
        failed = []
        if p >= ALPHA:
            failed.append(f"the rank test's p = {p:.2g} is not below {ALPHA}")
        if lo <= 1.0 <= hi:
            failed.append(f"the speedup's 95 % interval {lo:.3f}-{hi:.3f} holds 1")
        reason = f"{SAME} ({' and '.join(failed)})"
    return StepTimeDiff(spread_a, spread_b, speedup, p, (lo, hi), verdict, reason)


@dataclass(frozen=True)
class SampleComparison:
    """Any per-step figure of B against A: medians, ``ratio`` (median B / median A), the U
    test's ``p_value``, the bootstrap 95 % ``interval`` of the ratio and whether both tests
    call it ``significant`` (None and False with fewer than ``MIN_STEPS`` a side)."""

    a_median: float
    b_median: float
    ratio: float
    p_value: float | None
    interval: tuple[float, float] | None

    @property
    def significant(self) -> bool:
        if self.p_value is None or self.interval is None:
            return False
        lo, hi = self.interval
        return self.p_value < ALPHA and not lo <= 1.0 <= hi

    def to_json(self) -> dict[str, Any]:
        return {
            "a_median": _num(self.a_median),
            "b_median": _num(self.b_median),
            "ratio": _num(self.ratio),
            "p_value": _num(self.p_value),
            "interval": [_num(v) for v in self.interval] if self.interval else None,
            "significant": self.significant,
        }


def compare_samples(
    a_values: Sequence[float] | np.ndarray, b_values: Sequence[float] | np.ndarray
) -> SampleComparison:
    """B against A for one per-step figure, with the two tests ``compare_steps`` uses."""
    a = np.asarray(a_values, dtype=np.float64)
    b = np.asarray(b_values, dtype=np.float64)
    med_a = float(np.median(a)) if len(a) else float("nan")
    med_b = float(np.median(b)) if len(b) else float("nan")
    ratio = med_b / med_a if med_a > 0 else float("nan")
    if min(len(a), len(b)) < MIN_STEPS:
        return SampleComparison(med_a, med_b, ratio, None, None)
    return SampleComparison(med_a, med_b, ratio, rank_test(a, b), bootstrap_ratio(b, a))


def rank_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value; 1 where the samples cannot be told apart at all
    (every value the same)."""
    from scipy.stats import mannwhitneyu

    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if np.isnan(p) else p


def bootstrap_ratio(
    a: np.ndarray, b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The 95 % percentile interval of median(A) / median(B) over ``resamples`` bootstrap
    resamples of each side (a fixed seed: the same samples give the same interval)."""
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    chunk = max(1, _CHUNK_VALUES // max(len(a), len(b)))
    for first in range(0, resamples, chunk):
        n = min(chunk, resamples - first)
        med_a = np.median(a[rng.integers(0, len(a), (n, len(a)))], axis=1)
        med_b = np.median(b[rng.integers(0, len(b), (n, len(b)))], axis=1)
        ratios[first : first + n] = med_a / np.maximum(med_b, np.finfo(float).tiny)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)
