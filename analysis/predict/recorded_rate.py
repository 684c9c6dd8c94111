"""The share of a core each busy thread had while the run was recorded, to turn a recorded
span into work: the replay's processor sharing, undone.

Busy threads beyond the cores share them: with ``n`` threads busy on ``C`` cores each runs
at ``min(1, C / n)`` of a core. A span [a, b] of a thread busy throughout is then
``∫ min(1, C / n(t)) dt`` of work: ``Rate.work(a, b)``. "Busy" is what the replay counts: the
inter-op threads inside a closure, the Eigen workers inside a region and the main thread
inside an op (``items.py`` builds the intervals); a main (or request) thread's Python outside
its ops counts for the share of a core it used (``python``), as the replay's waits hold it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tftrace.analysis.metrics.intervals import concurrency, sorted_unique
from tftrace.analysis.predict.background import left_to


@dataclass(frozen=True)
class Rate:
    """``work(a, b)``: the core-time a thread busy over [a, b] had; ``times`` and ``cumulative``
    are the integral's breakpoints (outside them a thread had a whole core)."""

    times: np.ndarray
    cumulative: np.ndarray

    def at(self, t: np.ndarray | float) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        lo, hi = float(self.times[0]), float(self.times[-1])
        inside = np.interp(np.clip(t, lo, hi), self.times, self.cumulative)
        return inside + np.minimum(t - lo, 0) + np.maximum(t - hi, 0)

    def shared(self, below: float = 0.95) -> float:
        """The share of the span in which busy threads had less than ``below`` of a core each."""
        widths = np.diff(self.times)
        if widths.sum() <= 0:
            return 0.0
        less = np.diff(self.cumulative) < widths * below
        return float(widths[less].sum() / widths.sum())

    def work(self, a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
        """Core-time of each span [a, b] (ns, float), 0 where b <= a."""
        return np.maximum(self.at(b) - self.at(a), 0.0)


def recorded_rate(
    busy: list[tuple[np.ndarray, np.ndarray]],
    cores: float,
    lo: int,
    hi: int,
    lighter: tuple[np.ndarray, np.ndarray, float] | None = None,
    background: float = 0.0,
    python: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] = (),
) -> Rate:
    """The rate of each thread's busy intervals (``busy``: one (start, end) pair of arrays per
    thread) on ``cores`` cores over [lo, hi]. ``lighter``: (start, end, share): spans, each
    inside one thread's busy intervals, in which that thread wanted only ``share`` of a core
    (an op's thread while its shards ran). ``background``: cores held throughout by what the
    replay does not run; ``python``: (starts, ends, loads) of a thread's spans outside its
    ops, each wanting ``load`` of a core (its Python)."""
    if hi <= lo:
        return Rate(np.array([lo, lo + 1], dtype=np.float64), np.array([0.0, 1.0]))
    open_ = concurrency([s for s, _ in busy], [e for _, e in busy], lo, hi)
    times, demand = open_.times, open_.values.astype(np.float64)
    if lighter is not None and len(lighter[0]):
        s, e, share = lighter
        times, demand = _added(times, demand, s, e, np.full(len(s), share - 1.0), lo, hi)
    for s, e, load in python:
        if len(s):
            times, demand = _added(times, demand, s, e, load, lo, hi)
    demand = np.maximum(demand, 0.0)
    rate = np.minimum(1.0, left_to(cores, background) / np.maximum(demand, 1e-9))
    widths = np.diff(times).astype(np.float64)
    cumulative = np.r_[0.0, np.cumsum(widths * rate)]
    return Rate(times.astype(np.float64), cumulative)


def _added(
    times: np.ndarray,
    demand: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    weight: np.ndarray,
    lo: int,
    hi: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``demand`` (a step function at ``times``) with ``weight`` added over each [s, e]."""
    s, e = np.clip(s, lo, hi), np.clip(e, lo, hi)
    edges = sorted_unique(np.concatenate([times, s, e]))
    at = edges[:-1]
    demand = demand[np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(demand) - 1)]
    more = np.zeros(len(edges))
    np.add.at(more, np.searchsorted(edges, s), weight)
    np.add.at(more, np.searchsorted(edges, e), -weight)
    return edges, demand + np.cumsum(more)[:-1]
