"""Steps as units: the main thread's, then one per closure, each its segments in order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import pytest

from builders import MS, RECORD, START, STOP, call, stepped_run, two_closures_step
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict.background import Background
from tftrace.analysis.predict.items import thread_items
from tftrace.analysis.predict.replay import replay
from tftrace.analysis.predict.step_work import (
    BEGIN,
    CPU,
    END,
    HOST,
    JOIN,
    MARK,
    OP,
    SPAWN,
    WAITS,
    request_work,
    step_works,
)

MAIN, INTER = Pool.PYTHON_MAIN, Pool.INTER_OP


def kinds(unit):
    return [s.kind for s in unit.segments]


def test_the_two_closures_step():
    run = stepped_run([MAIN, INTER], two_closures_step, steps=2)
    steps = find_steps(run).table
    items = thread_items(run, 0, 60 * MS, 0, 2)
    works = step_works(items, steps, 0)
    assert [w.step for w in works] == [1, 2]
    assert [w.recorded_ns for w in works] == [21 * MS, 21 * MS]
    main, a, b = works[1].units
    # main: host until its Record, the closure, the wait for it and what it scheduled, host
    assert kinds(main) == [WAITS, SPAWN, JOIN, WAITS]
    assert [s.why for s in main.segments if s.kind == WAITS] == [HOST, HOST]
    assert main.segments[0].ns == pytest.approx(0.5 * MS)
    assert main.segments[2].units == (1, 2)
    assert main.segments[3].ns == pytest.approx(0.5 * MS)  # after B ended, as recorded
    # A: the executor's time, the Record of B, the executor again, its op
    assert kinds(a) == [CPU, SPAWN, CPU, OP]
    assert a.segments[1].units == (2,)
    assert a.segments[3].op.serial == pytest.approx(9.8 * MS)
    assert kinds(b) == [OP]
    assert a.release_ns is None and b.release_ns is None and a.thread == b.thread == 1


def test_a_closure_without_its_record_is_released_by_the_call_that_waits_for_it():
    def step(k, t0):
        rows = two_closures_step(k, t0)
        return [r for r in rows if not (r[1] == "ThreadpoolListener::Record" and r[0] == 1)]

    run = stepped_run([MAIN, INTER], step, steps=1)
    items = thread_items(run, 0, 21 * MS, 0, 2)
    one = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [21 * MS]})
    (work,) = step_works(items, one, 0)
    main, _, b = work.units
    # B started inside the call (its input came from elsewhere): the call releases it as
    # long after its first Record (0.5 ms) as it started (10.6 ms), and waits for it too
    assert b.release_ns is None
    (released,) = [s for s in main.segments if s.kind == SPAWN and s.units == (2,)]
    assert released.ns == pytest.approx(10.1 * MS)
    (join,) = [s for s in main.segments if s.kind == JOIN]
    assert join.units == (1, 2)


def test_a_servers_requests_are_marked_and_replayed_as_a_closed_loop():
    """Two requests of one thread, each the two-closures call (21 ms at inter-op 1, B waiting
    for A's thread), 9 ms apart: at inter-op 2, B runs beside A and each request takes
    about 11 ms; the gap between them is kept."""
    run = stepped_run([MAIN, INTER], two_closures_step, steps=2)
    items = thread_items(run, 0, 51 * MS, (0,), 2)
    requests = pd.DataFrame(
        {
            "request": [1, 2],
            "thread": [0, 0],
            "start_ns": [0, 30 * MS],
            "end_ns": [21 * MS, 51 * MS],
        }
    )
    work = request_work(items, requests, 0)
    main = work.units[0]
    marks = [(s.why, s.units) for s in main.segments if s.kind == MARK]
    assert marks == [(BEGIN, (1,)), (END, (1,)), (BEGIN, (2,)), (END, (2,))]
    assert [u.main for u in work.units] == [True, False, False, False, False]
    recorded = replay(work, 1, 1, 2, 1)
    assert recorded.latencies() == pytest.approx({1: 21 * MS, 2: 21 * MS}, rel=0.02)
    assert recorded.marks[(2, BEGIN)] == pytest.approx(30 * MS, rel=0.02)
    side_by_side = replay(work, 1, 2, 2, 1)
    assert side_by_side.latencies() == pytest.approx({1: 11 * MS, 2: 11 * MS}, rel=0.05)
    # the next request follows the last by its recorded gap (9 ms), not at its recorded time
    assert side_by_side.marks[(2, BEGIN)] == pytest.approx(20 * MS, rel=0.05)


def numpy_beside_a_product(k: int, t0: float) -> list[Any]:
    """The main thread schedules closures A and B at 0.5 ms; A (thread 1) runs a
    ``tf.numpy_function`` from 1 to 11 ms, B (thread 2) a product over the same 10 ms."""
    a, b = 100 + 10 * k, 101 + 10 * k
    op = EventKind.OP.value
    rows = [call(t0, 12)]
    for thread, flow, name in ((1, a, "EagerPyFunc:EagerPyFunc"), (2, b, "MatMul:MatMul")):
        rows += [
            (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, flow, None),
            (thread, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, flow),
            (thread, name, op, t0 + 1, t0 + 11, None, None),
            (thread, "ThreadpoolListener::StopRegion", STOP, t0 + 11.5, t0 + 11.5, None, None),
        ]
    return rows


def test_python_beside_a_blas_pool_is_undone_of_the_cores_it_shared():
    run = stepped_run([MAIN, INTER, INTER], numpy_beside_a_product, steps=2, inter=2)
    steps = find_steps(run).table

    def python_ns(beside: float) -> float:
        # recorded on one core: the two closures had half of it each
        items = thread_items(run, 0, 60 * MS, 0, 1)
        items = replace(items, background=Background(beside_python=beside))
        numpy = step_works(items, steps, 0)[1].units[1]
        (kept,) = [s for s in numpy.segments if s.kind == WAITS]
        return kept.ns

    assert python_ns(0.0) == pytest.approx(10 * MS)  # kept as recorded
    # a BLAS pool beside the Python on a whole core: its part is the recorded time at the
    # share of a core it got, which the replay gives again where it shares the cores
    assert python_ns(1.0) == pytest.approx(5 * MS)
    assert python_ns(0.5) == pytest.approx(7.5 * MS)
