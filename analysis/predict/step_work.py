"""What the trace holds per step, as units of work the replay can run again.

A step is the main thread's span of it (its ``Steps`` row) and the inter-op closures that
start inside it. Each is a ``Unit``: the main thread's, then one per closure, each a list of
``Segment`` in the order its thread ran them:

- ``CPU``: work on the unit's thread (ns of a core): an inter-op thread's time between ops
  (the executor's own);
- ``OP``: an op, with its serial, hand-off and parallel parts (``items.py``);
- ``WAITS``: time kept as recorded, wanting only the share of a core its thread used then
  (``load``): the main thread outside ops (Python, dispatch; ``why`` HOST), a
  ``tf.py_function`` (PYTHON), an iterator's get-next (INPUT);
- ``SPAWN``: the Record of a closure: the closure becomes runnable here (the executor's
  order: what it waited for has ended by then);
- ``JOIN``: the thread waits for the closures it scheduled from inside a wait op (a
  tf.function call) and every closure they scheduled: the replay resumes it when the last
  ends, then runs the rest of the wait op as recorded.
- ``MARK``: takes no time; the replay notes when the thread reaches it (a request's start
  or end: ``why`` BEGIN or END, ``units`` the request).

A closure whose Record is not in the step (scheduled from elsewhere) is released at its
recorded start: after the start of the call that waits for it by as long as it was recorded
to (a ``SPAWN`` with a delay), or, where no call in the step waits for it, counted from the
step's start (``release_ns``). The first keeps a sped-up call from waiting for the recorded
clock: a server's stretch is one long step, and a request near its end would otherwise wait
for its closures until the time they started in the recording.

A server's window is one ``StepWork`` with a main unit per request thread, each from the
window's start to its last request's end: its requests (marked) and the Python between them,
kept as recorded (``request_work``). Each thread's next request follows its last by the
recorded gap, as a closed loop of clients does.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.predict.items import INPUT, PYTHON, WAIT, WORK, Items

CPU, OP, WAITS, SPAWN, JOIN, MARK = "cpu", "op", "wait", "spawn", "join", "mark"
BEGIN, END = "begin", "end"  # a MARK's edge of its request
GAP = "gap"  # a CPU segment whose work is not worked out yet (``ns``: its index)
HOST = "host"  # why a WAITS segment is kept: the main thread outside ops (PYTHON, INPUT: items.py)


@dataclass(frozen=True)
class OpWork:
    """An op's parts: ``serial`` and ``parallel`` ns of work, ``handoff`` ns of wall time."""

    serial: float
    handoff: float
    parallel: float
    shards: int
    inline: float  # a split op's work run inline (intra-op 1): its shards' work (``items.py``)


@dataclass(frozen=True)
class Segment:
    kind: str
    ns: float = 0.0  # CPU: work; WAITS: wall time (its part on a CPU undone of the sharing)
    why: str = ""  # WAITS: HOST, PYTHON or INPUT
    op: OpWork | None = None
    units: tuple[int, ...] = ()  # SPAWN: the closure; JOIN: the closures waited for
    load: float = 0.0  # WAITS: the share of a core the thread used meanwhile (its Python)


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
    units: tuple[Unit, ...]  # the main threads' first (units[0]: a loop's main thread)


def step_works(items: Items, steps: pd.DataFrame, main: int) -> tuple[StepWork, ...]:
    """Every step of ``steps`` (rows of a ``Steps`` table) as units."""
    by_thread = _by_thread(items)
    closures = items.closures
    c_start = closures["start_ns"].to_numpy()
    out = []
    for step, s, e in steps[["step", "start_ns", "end_ns"]].itertuples(index=False):
        rows = np.flatnonzero((c_start >= s) & (c_start < e))
        units = _units(items, by_thread, closures.iloc[rows], [(main, int(s), int(e))], {}, int(s))
        out.append(StepWork(int(step), int(e - s), units))
    return tuple(out)


def request_work(items: Items, requests: pd.DataFrame, origin: int) -> StepWork:
    """A server's requests (rows with ``thread``, ``start_ns``, ``end_ns``, ``request``) as
    one unit of work from ``origin``: a main unit per request thread, to its last request's
    end, with each request marked (``BEGIN`` and ``END``)."""
    by_thread = _by_thread(items)
    mains, marks = [], {}
    for thread, mine in requests.groupby("thread", sort=True):
        mains.append((int(thread), origin, int(mine["end_ns"].max())))
        marks[int(thread)] = [
            (int(a), int(b), int(r))
            for a, b, r in mine[["start_ns", "end_ns", "request"]].itertuples(index=False)
        ]
    end = max(b for _, _, b in mains)
    closures = items.closures
    c_start = closures["start_ns"].to_numpy()
    rows = np.flatnonzero((c_start >= origin) & (c_start < end))
    units = _units(items, by_thread, closures.iloc[rows], mains, marks, origin)
    return StepWork(0, end - origin, units)


def _by_thread(items: Items) -> dict[int, _ThreadItems]:
    return {int(t): _ThreadItems.of(g) for t, g in items.items.groupby("thread", sort=False)}


def closure_work(items: Items, origin: int) -> tuple[Unit, ...]:
    """``items``' closures as units after an empty main unit (units[0], to be replaced: an
    input pipeline's runner, ``pipeline.py``); a closure whose Record is not among them is
    released at its recorded start, counted from ``origin``."""
    by_thread = _by_thread(items)
    return _units(items, by_thread, items.closures, [(-1, origin, origin)], {}, origin)


def _units(
    items: Items,
    by_thread: dict[int, _ThreadItems],
    closures: pd.DataFrame,
    mains: list[tuple[int, int, int]],
    marks: dict[int, list[tuple[int, int, int]]],
    origin: int,
) -> tuple[Unit, ...]:
    """The main units (``mains``: thread, start, end; ``marks``: each one's requests) and a
    unit per closure, each closure's parent the unit whose thread wrote its Record."""
    m = len(mains)
    spans = list(mains) + [
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
    for k in range(m, len(spans)):
        parent[k] = _parent(spans, on_thread, starts, int(by[k - m]), int(scheduled[k - m]))
    children: dict[int, list[int]] = defaultdict(list)
    for k in range(m, len(spans)):
        if parent[k] >= 0:
            children[int(parent[k])].append(k)
    reach = _reach(spans, children)
    orphans = [(spans[k][1], k) for k in range(m, len(spans)) if parent[k] < 0]
    adopted: set[int] = set()  # orphans a call releases (``_segments``)
    gaps: list[tuple[int, int]] = []  # an inter-op thread's time between items, worked out once
    built = []
    for k, (thread, a, b) in enumerate(spans):
        kids = [(int(scheduled[c - m]), c) for c in children.get(k, [])]
        requests = marks.get(thread, []) if k < m else []
        load = _loads(items, thread)
        mine = orphans if k < m else ()
        built.append(
            _segments(
                by_thread.get(thread),
                a,
                b,
                k < m,
                kids,
                reach,
                children,
                requests,
                gaps,
                load,
                mine,
                adopted,
            )
        )
    if gaps:
        ends = np.array(gaps, dtype=np.int64)
        work = items.rate.work(ends[:, 0], ends[:, 1])
        built = [[_worked(seg, work) for seg in segments] for segments in built]
    return tuple(
        Unit(thread, k < m, tuple(built[k]), _release(k, m, parent, adopted, a - origin))
        for k, (thread, a, _) in enumerate(spans)
    )


def _release(
    k: int, mains: int, parent: np.ndarray, adopted: set[int], offset: int
) -> float | None:
    """When closure ``k`` is released counted from the step's start: an orphan no call
    releases; None for the others."""
    return None if k < mains or parent[k] >= 0 or k in adopted else float(offset)


def _loads(items: Items, thread: int) -> Callable[[int, int, bool], tuple[float, float]]:
    """For a span [a, b] of ``thread`` kept as recorded: its time without the part it waited
    in the kernel's run queue (the replay's sharing of the cores puts its own wait there),
    and the share of what is left that it was on a CPU (its ``load``), by the OS sampler.

    Where a BLAS pool works beside a thread's Python (``python``: the span runs Python), the
    pool's part of the span is undone of the recording's sharing of the cores, as an op's
    work is (``recorded_rate``): the replay shares them again, at each setting, as the pool
    works (``replay.py``). Kept whole, a recording's Python was slowed twice by the cores it
    shared: blas-beside-pools (NumPy's products in a ``tf.numpy_function`` beside TF's chain
    of products, on 2 cores, recorded at 2/2) was predicted 0.89x at intra-op 2, inter-op 1,
    where the function runs alone and ran 1.07x; 0.97x so (docs/predict.md)."""
    blas = min(items.background.beside_python, 1.0)

    def load(a: int, b: int, python: bool) -> tuple[float, float]:
        on, queued = items.shares_of(thread, a, b)
        left = 1.0 - queued
        ns = float(b - a) * left
        if python and blas > 0 and b > a:
            got = float(items.rate.work(a, b)) / (b - a)
            ns *= 1.0 - blas + blas * got
        return ns, (on / left if left > 0 else 0.0)

    return load


def _worked(seg: Segment, work: np.ndarray) -> Segment:
    """A gap's placeholder (``why`` GAP, ``ns`` its index) with its work filled in."""
    return Segment(CPU, float(work[int(seg.ns)])) if seg.why == GAP else seg


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


def descendants(kids: list[int], children: dict[int, list[int]]) -> tuple[int, ...]:
    """``kids`` and every closure they scheduled, down the tree (``children``: by unit)."""
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
    delayed: tuple[tuple[int, float], ...] = ()  # JOIN: closures released so long after it


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
        return [self.rows[i] for i in lo + np.flatnonzero(self.end[lo:hi] > a)]


def _segments(
    mine: _ThreadItems | None,
    a: int,
    b: int,
    main: bool,
    kids: list[tuple[int, int]],
    reach: np.ndarray,
    children: dict[int, list[int]],
    requests: Sequence[tuple[int, int, int]],
    gaps: list[tuple[int, int]],
    load: Callable[[int, int, bool], tuple[float, float]],
    orphans: Sequence[tuple[int, int]],
    adopted: set[int],
) -> list[Segment]:
    """One unit's segments: its items in [a, b], the closures it scheduled, the gaps between,
    and the start and end of each of ``requests`` (start, end, request) marked; a call
    releases the ``orphans`` (start, closure) that start in it, those no call released yet
    (``adopted``, updated)."""
    marks: list[_Mark] = []
    for start, end, request in requests:
        marks.append(_Mark(start, start, Segment(MARK, why=BEGIN, units=(request,))))
        marks.append(_Mark(end, end, Segment(MARK, why=END, units=(request,))))
    placed: set[int] = set()
    for row in mine.overlapping(a, b) if mine is not None else ():
        start, end = int(row.start_ns), int(row.end_ns)
        inside = sorted((t, c) for t, c in kids if start <= t <= end and c not in placed)
        # a call also waits for the closures that start in it without a Record of the step
        # (scheduled from a tf.data thread as its input came), each released as long after
        # the call's first Record as it started
        late = [(t, c) for t, c in orphans if start <= t <= end] if row.what == WAIT else []
        if (inside or late) and row.what in (WAIT, WORK, INPUT):  # it waits for its work
            spawned = tuple(c for _, c in inside)
            placed.update(spawned)
            first = inside[0][0] if inside else start
            joined = [*spawned, *(c for _, c in late)]
            until = min(max(int(reach[joined].max()), first), end)
            join = Segment(JOIN, units=descendants(joined, children))
            released = tuple((c, float(max(t - first, 0))) for t, c in late if c not in adopted)
            adopted.update(c for c, _ in released)
            marks.append(_Mark(first, until, join, spawned, released))
        elif row.what == WORK:
            work = OpWork(
                float(row.serial),
                float(row.handoff),
                float(row.parallel),
                row.shards,
                float(row.inline),
            )
            marks.append(_Mark(start, end, Segment(OP, op=work)))
        elif row.what in (PYTHON, INPUT):
            ns, share = load(start, end, row.what == PYTHON)
            kept = Segment(WAITS, ns, str(row.what), load=share)
            marks.append(_Mark(start, end, kept))
    marks.extend(_Mark(t, t, Segment(SPAWN, units=(c,))) for t, c in kids if c not in placed)
    marks.sort(key=lambda m: (m.start, m.end))
    out: list[Segment] = []
    cursor = a
    for mark in marks:
        if mark.segment.kind not in (SPAWN, MARK) and mark.end <= cursor:
            out += [
                Segment(SPAWN, max(d - (cursor - mark.start), 0), units=(c,))
                for c, d in mark.delayed
            ]
            continue  # inside a span already placed (the thread was waiting)
        out += _gap(cursor, max(mark.start, cursor), main, gaps, load)
        out += [Segment(SPAWN, units=(c,)) for c in mark.spawns]
        out += [Segment(SPAWN, d, units=(c,)) for c, d in mark.delayed]
        segment = mark.segment
        if segment.kind == WAITS and mark.start < cursor:  # cut where it overlaps the last
            ns, share = load(cursor, mark.end, segment.why != INPUT)
            segment = Segment(WAITS, ns, segment.why, load=share)
        out.append(segment)
        cursor = max(cursor, mark.end)
    out += _gap(cursor, b, main, gaps, load)
    return out


def _gap(
    a: int,
    b: int,
    main: bool,
    gaps: list[tuple[int, int]],
    load: Callable[[int, int, bool], tuple[float, float]],
) -> list[Segment]:
    """The main thread's time between items is kept as recorded (Python, dispatch), at the
    CPU it used; an inter-op thread's is the executor's work: a placeholder until ``_units``
    works it out."""
    if b <= a:
        return []
    if main:
        ns, share = load(a, b, True)
        return [Segment(WAITS, ns, HOST, load=share)]
    gaps.append((a, b))
    return [Segment(CPU, float(len(gaps) - 1), GAP)]
