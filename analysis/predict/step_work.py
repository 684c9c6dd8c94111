"""What the trace holds per step, as units of work the replay can run again.

A step is the main thread's span of it (its ``Steps`` row) and the inter-op closures that
start inside it. Each is a ``Unit``: the main thread's, then one per closure, each a list of
``Segment`` in the order its thread ran them:

- ``CPU``: work on the unit's thread (ns of a core): an inter-op thread's time between ops
  (the executor's own);
- ``OP``: an op, with its serial, hand-off and parallel parts (``items.py``);
- ``WAIT``: time kept as recorded, taking no core: the main thread outside ops (Python,
  dispatch; ``why`` HOST), a ``tf.py_function`` (PYTHON), an iterator's get-next (INPUT);
- ``SPAWN``: the Record of a closure: the closure becomes runnable here (the executor's
  order: what it waited for has ended by then);
- ``JOIN``: the thread waits for the closures it scheduled from inside a wait op (a
  tf.function call) and every closure they scheduled: the replay resumes it when the last
  ends, then runs the rest of the wait op as recorded.

A closure whose Record is not in the step (scheduled from elsewhere) is released at its
recorded start, counted from the step's start (``release_ns``).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.predict.items import INPUT, PYTHON, WAIT, WORK, Items

CPU, OP, WAITS, SPAWN, JOIN = "cpu", "op", "wait", "spawn", "join"
HOST = "host"  # why a WAIT is kept: the main thread outside ops (PYTHON, INPUT: items.py)


@dataclass(frozen=True)
class OpWork:
    """An op's parts: ``serial`` and ``parallel`` ns of work, ``handoff`` ns of wall time."""

    serial: float
    handoff: float
    parallel: float
    shards: int


@dataclass(frozen=True)
class Segment:
    kind: str
    ns: float = 0.0  # CPU: work; WAIT: wall time
    why: str = ""  # WAIT: HOST, PYTHON or INPUT
    op: OpWork | None = None
    units: tuple[int, ...] = ()  # SPAWN: the closure; JOIN: the closures waited for


@dataclass(frozen=True)
class Unit:
    thread: int
    main: bool
    segments: tuple[Segment, ...]
    release_ns: float | None = None  # a closure without its Record in the step


@dataclass(frozen=True)
class StepWork:
    step: int
    recorded_ns: int
    units: tuple[Unit, ...]  # units[0]: the main thread's


def step_works(items: Items, steps: pd.DataFrame, main: int) -> tuple[StepWork, ...]:
    """Every step of ``steps`` (rows of a ``Steps`` table) as units."""
    by_thread = {int(t): _ThreadItems.of(g) for t, g in items.items.groupby("thread", sort=False)}
    closures = items.closures
    c_start = closures["start_ns"].to_numpy()
    out = []
    for step, s, e in steps[["step", "start_ns", "end_ns"]].itertuples(index=False):
        rows = np.flatnonzero((c_start >= s) & (c_start < e))
        out.append(
            _one_step(items, by_thread, closures.iloc[rows], int(step), int(s), int(e), main)
        )
    return tuple(out)


def _one_step(
    items: Items,
    by_thread: dict[int, _ThreadItems],
    closures: pd.DataFrame,
    step: int,
    s: int,
    e: int,
    main: int,
) -> StepWork:
    spans = [(main, s, e)] + [
        (int(t), int(a), int(b))
        for t, a, b in closures[["thread", "start_ns", "end_ns"]].itertuples(index=False)
    ]
    scheduled = closures["scheduled_ns"].to_numpy()
    by = closures["scheduled_by"].to_numpy()
    parent = np.full(len(spans), -1)
    on_thread: dict[int, list[int]] = defaultdict(list)  # units by thread, in start order
    for k in sorted(range(len(spans)), key=lambda k: spans[k][1]):
        on_thread[spans[k][0]].append(k)
    starts = {t: [spans[k][1] for k in units] for t, units in on_thread.items()}
    for k in range(1, len(spans)):
        parent[k] = _parent(spans, on_thread, starts, int(by[k - 1]), int(scheduled[k - 1]))
    children: dict[int, list[int]] = defaultdict(list)
    for k in range(1, len(spans)):
        if parent[k] >= 0:
            children[int(parent[k])].append(k)
    reach = _reach(spans, children)
    units = []
    for k, (thread, a, b) in enumerate(spans):
        kids = [(int(scheduled[c - 1]), c) for c in children.get(k, [])]
        segments = _segments(items, by_thread.get(thread), a, b, k == 0, kids, reach, children)
        release = None if k == 0 or parent[k] >= 0 else float(a - s)
        units.append(Unit(thread, k == 0, tuple(segments), release))
    return StepWork(step, e - s, tuple(units))


def _parent(
    spans: list[tuple[int, int, int]],
    on_thread: dict[int, list[int]],
    starts: dict[int, list[int]],
    by: int,
    at: int,
) -> int:
    """The unit whose thread wrote the Record (``by``) at ``at`` inside its span; -1: none."""
    units = on_thread.get(by, [])
    i = bisect.bisect_right(starts.get(by, []), at) - 1
    if i >= 0 and spans[units[i]][2] >= at:
        return units[i]
    return -1


def _reach(spans: list[tuple[int, int, int]], children: dict[int, list[int]]) -> np.ndarray:
    """When each unit and every closure it scheduled, down the tree, had ended (recorded)."""
    reach = np.array([b for _, _, b in spans], dtype=np.int64)
    for k in sorted(range(len(spans)), key=lambda k: -spans[k][1]):  # children start later
        for c in children.get(k, []):
            reach[k] = max(reach[k], reach[c])
    return reach


def _descendants(kids: list[int], children: dict[int, list[int]]) -> tuple[int, ...]:
    seen, todo = [], list(kids)
    while todo:
        k = todo.pop()
        seen.append(k)
        todo.extend(children.get(k, []))
    return tuple(sorted(seen))


@dataclass(frozen=True)
class _Mark:
    """Something a unit's thread did at a recorded time: an op, a wait, a Record, a join."""

    start: int
    end: int
    segment: Segment
    spawns: tuple[int, ...] = ()  # JOIN: the closures scheduled before it


@dataclass(frozen=True)
class _ThreadItems:
    """One thread's items (``Items.items`` rows, by start) and the longest of them."""

    start: np.ndarray
    end: np.ndarray
    rows: list[tuple[Any, ...]]
    longest: int

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _ThreadItems:
        frame = frame.sort_values("start_ns")
        start, end = frame["start_ns"].to_numpy(), frame["end_ns"].to_numpy()
        rows = list(frame.itertuples(index=False))
        return cls(start, end, rows, int((end - start).max(initial=0)))

    def overlapping(self, a: int, b: int) -> list[Any]:
        lo = int(np.searchsorted(self.start, a - self.longest, side="left"))
        hi = int(np.searchsorted(self.start, b, side="left"))
        return [self.rows[i] for i in range(lo, hi) if self.end[i] > a]


def _segments(
    items: Items,
    mine: _ThreadItems | None,
    a: int,
    b: int,
    main: bool,
    kids: list[tuple[int, int]],
    reach: np.ndarray,
    children: dict[int, list[int]],
) -> list[Segment]:
    """One unit's segments: its items in [a, b], the closures it scheduled, the gaps between."""
    marks: list[_Mark] = []
    placed: set[int] = set()
    for row in mine.overlapping(a, b) if mine is not None else ():
        start, end = int(row.start_ns), int(row.end_ns)
        inside = sorted((t, c) for t, c in kids if start <= t <= end and c not in placed)
        if inside and row.what in (WAIT, WORK, INPUT):  # it waits for what it scheduled
            spawned = tuple(c for _, c in inside)
            placed.update(spawned)
            first = inside[0][0]
            until = min(max(int(reach[list(spawned)].max()), first), end)
            join = Segment(JOIN, units=_descendants(list(spawned), children))
            marks.append(_Mark(first, until, join, spawned))
        elif row.what == WORK:
            work = OpWork(float(row.serial), float(row.handoff), float(row.parallel), row.shards)
            marks.append(_Mark(start, end, Segment(OP, op=work)))
        elif row.what in (PYTHON, INPUT):
            marks.append(_Mark(start, end, Segment(WAITS, float(end - start), str(row.what))))
    marks.extend(_Mark(t, t, Segment(SPAWN, units=(c,))) for t, c in kids if c not in placed)
    marks.sort(key=lambda m: (m.start, m.end))
    out: list[Segment] = []
    cursor = a
    for mark in marks:
        if mark.segment.kind != SPAWN and mark.end <= cursor:
            continue  # inside a span already placed (the thread was waiting)
        out += _gap(items, cursor, max(mark.start, cursor), main)
        out += [Segment(SPAWN, units=(c,)) for c in mark.spawns]
        segment = mark.segment
        if segment.kind == WAITS and mark.start < cursor:  # cut where it overlaps the last
            segment = Segment(WAITS, float(mark.end - cursor), segment.why)
        out.append(segment)
        cursor = max(cursor, mark.end)
    out += _gap(items, cursor, b, main)
    return out


def _gap(items: Items, a: int, b: int, main: bool) -> list[Segment]:
    if b <= a:
        return []
    if main:
        return [Segment(WAITS, float(b - a), HOST)]
    return [Segment(CPU, float(items.rate.work(a, b)))]
