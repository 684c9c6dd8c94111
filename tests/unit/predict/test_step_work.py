"""Steps as units: the main thread's, then one per closure, each its segments in order."""

from __future__ import annotations

import pandas as pd
import pytest

from builders import MS, stepped_run, two_closures_step
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict.items import thread_items
from tftrace.analysis.predict.step_work import CPU, HOST, JOIN, OP, SPAWN, WAITS, step_works

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


def test_a_closure_without_its_record_is_released_at_its_recorded_start():
    def step(k, t0):
        rows = two_closures_step(k, t0)
        return [r for r in rows if not (r[1] == "ThreadpoolListener::Record" and r[0] == 1)]

    run = stepped_run([MAIN, INTER], step, steps=1)
    items = thread_items(run, 0, 21 * MS, 0, 2)
    one = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [21 * MS]})
    (work,) = step_works(items, one, 0)
    main, _, b = work.units
    assert b.release_ns == pytest.approx(10.6 * MS)
    assert main.segments[2].units == (1,)  # the join waits for A only: B is not its own
