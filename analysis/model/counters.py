"""Cumulative counters read now and then (CPU ns, throttled periods): their growth over a
window, linear between readings."""

from __future__ import annotations

import numpy as np


def growth(t: np.ndarray, value: np.ndarray, lo: int, hi: int, zero_at: int | None = None) -> float:
    """Growth of a cumulative counter over [lo, hi], linear between readings (``t`` sorted).

    Outside the readings the counter is taken as flat: before the first, it held what the
    first reading says (what it grew by before is unknown), unless ``zero_at`` says when it
    was 0 (a process born then): from there to the first reading it grew linearly. After
    the last reading it grows no more. NaN without readings.
    """
    if len(t) == 0:
        return float("nan")
    t, value = from_birth(t, value, zero_at)
    return float(np.interp(hi, t, value) - np.interp(lo, t, value))


def from_birth(
    t: np.ndarray, value: np.ndarray, zero_at: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The readings with a reading of 0 at ``zero_at`` (a process born then) put first, where
    it comes before them; unchanged otherwise."""
    if zero_at is not None and len(t) and zero_at < t[0]:
        return np.r_[zero_at, t], np.r_[0, value]
    return t, value


def interval_growth(t: np.ndarray, value: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """A cumulative counter's growth over each interval of ``grid`` (len(grid) - 1 values),
    linear between readings; nothing before the first reading or after the last."""
    if len(t) == 0 or len(grid) < 2:
        return np.zeros(max(len(grid) - 1, 0))
    at = np.interp(grid, t, value.astype(np.float64))
    return np.maximum(np.diff(at), 0.0)


def without_resets(value: np.ndarray) -> np.ndarray:
    """A counter that fell back (a pid taken by a new process, whose count starts again) made
    monotonic: each fall adds the count before it to all that follows."""
    if len(value) < 2:
        return value
    fell = np.r_[0, np.where(np.diff(value) < 0, value[:-1], 0)]
    return value + np.cumsum(fell) if fell.any() else value
