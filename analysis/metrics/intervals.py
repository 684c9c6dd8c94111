"""Interval arithmetic on int64 ns arrays: unions, concurrency step functions, integrals.

The building block of every "how many threads were busy" figure. A set of intervals
becomes a step function c(t) (how many are open at t); integrating it exactly gives
busy time, the time spent at each level, and averages over any bins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def sorted_unique(t: np.ndarray) -> np.ndarray:
    """The distinct values of ``t``, sorted (np.unique's hashing is several times slower on the
    millions of int64 edges of a long trace than a sort and a mask)."""
    t = np.sort(t, kind="stable")
    keep = np.ones(len(t), dtype=bool)
    np.not_equal(t[1:], t[:-1], out=keep[1:])
    return t[keep]


def level_changes(t: np.ndarray, d: np.ndarray) -> StepFunction:
    """The step function whose value changes by ``d[i]`` at ``t[i]`` (several changes at one
    time add up), starting at 0 before the first time."""
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    last = np.ones(len(t), dtype=bool)
    np.not_equal(t[1:], t[:-1], out=last[:-1])
    level = np.cumsum(d)[last]
    return StepFunction(t[last].astype(np.int64), level[:-1].astype(np.int64))


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping or touching intervals of ONE thread into disjoint ones, sorted."""
    if len(start) == 0:
        return start.astype(np.int64), end.astype(np.int64)
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    # A new run starts where an interval begins after everything before it has ended.
    new = np.r_[True, s[1:] > reach[:-1]]
    run = np.cumsum(new) - 1
    run_end = np.full(int(run[-1]) + 1, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(run_end, run, e)
    return s[new].astype(np.int64), run_end


def clip(start: np.ndarray, end: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    s, e = np.maximum(start, lo), np.minimum(end, hi)
    keep = e > s
    return s[keep], e[keep]


@dataclass(frozen=True)
class StepFunction:
    """c(t) = value[i] for times[i] <= t < times[i + 1], over [times[0], times[-1]]."""

    times: np.ndarray  # int64, increasing, len n + 1
    values: np.ndarray  # int64, len n

    def integral_at(self, t: np.ndarray) -> np.ndarray:
        """∫ c from times[0] to each t (exact: c is piecewise constant)."""
        cumulative = np.r_[0, np.cumsum(np.diff(self.times) * self.values)].astype(np.float64)
        return np.interp(t, self.times, cumulative)

    def time_at_level(self, levels: int) -> np.ndarray:
        """ns spent at each level 0..levels-1 (higher levels folded into the last)."""
        widths = np.diff(self.times)
        return np.bincount(np.minimum(self.values, levels - 1), weights=widths, minlength=levels)


def concurrency(starts: list[np.ndarray], ends: list[np.ndarray], lo: int, hi: int) -> StepFunction:
    """How many of the given threads are busy at each moment of [lo, hi].

    One (start, end) pair of arrays per thread; each thread's own intervals are merged
    first, so a thread counts once however its events nest.
    """
    merged = (union(*clip(s, e, lo, hi)) for s, e in zip(starts, ends, strict=True))
    return count_open(merged, lo, hi)


def boundaries(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The boundaries of merged intervals in time order: start, end, start, end, ..."""
    bounds = np.empty(2 * len(start), dtype=np.int64)
    bounds[0::2], bounds[1::2] = start, end
    return bounds


def count_open(merged: Iterable[tuple[np.ndarray, np.ndarray]], lo: int, hi: int) -> StepFunction:
    """How many of the interval sets are open at each moment of [lo, hi], for sets already
    merged (``union``) and inside [lo, hi]: each set's boundaries alternate open, close."""
    times, deltas = [np.array([lo, hi], dtype=np.int64)], [np.zeros(2, dtype=np.int64)]
    for s, e in merged:
        bounds = boundaries(s, e)
        step = np.ones(len(bounds), dtype=np.int64)
        step[1::2] = -1
        times.append(bounds)
        deltas.append(step)
    return level_changes(np.concatenate(times), np.concatenate(deltas))


def first_match_ns(sets: list[tuple[np.ndarray, np.ndarray]], lo: int, hi: int) -> np.ndarray:
    """ns of [lo, hi] in each of the interval sets, an instant counted in the first set open
    at it; one more entry at the end holds the rest. The entries add up to ``hi - lo``."""
    if hi <= lo:
        return np.zeros(len(sets) + 1, dtype=np.int64)
    merged = [union(*clip(s, e, lo, hi)) for s, e in sets]
    edges = sorted_unique(
        np.concatenate([np.array([lo, hi], dtype=np.int64), *(np.r_[s, e] for s, e in merged)])
    )
    at, width = edges[:-1], np.diff(edges)
    owner = np.full(len(at), len(sets))
    for k in reversed(range(len(sets))):  # the first set last, so it wins
        s, e = merged[k]
        if not len(s):
            continue
        i = np.searchsorted(s, at, side="right") - 1
        owner[(i >= 0) & (e[np.clip(i, 0, None)] > at)] = k
    return np.bincount(owner, weights=width, minlength=len(sets) + 1).astype(np.int64)
