"""The replay on hand-made units: the inter-op queue, processor sharing, an op's parts on
the Eigen pool or inline, joins that give their thread back, late closures, host time."""

from __future__ import annotations

import pytest

from tftrace.analysis.predict.items import INPUT
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
    OpWork,
    Segment,
    StepWork,
    Unit,
)
from tftrace.analysis.predict.wakeup import Wakeup

MS = 1e6


def spawn(*units: int) -> list[Segment]:
    return [Segment(SPAWN, units=(u,)) for u in units]


def fan_out(*work_ms: float) -> StepWork:
    """The main thread schedules one closure per ``work_ms`` (each that much CPU work) and
    waits for them all, with 1 ms of host time before and after."""
    closures = tuple(range(1, len(work_ms) + 1))
    main = Unit(
        0,
        True,
        (
            Segment(WAITS, 1 * MS, HOST),
            *spawn(*closures),
            Segment(JOIN, units=closures),
            Segment(WAITS, 1 * MS, HOST),
        ),
    )
    units = [Unit(1, False, (Segment(CPU, ms * MS),)) for ms in work_ms]
    return StepWork(1, 0, (main, *units))


def test_closures_queue_for_the_inter_op_threads():
    two = fan_out(10, 10)
    assert replay(two, 1, 1, 2, 1).span_ns == pytest.approx(22 * MS)
    assert replay(two, 1, 2, 2, 1).span_ns == pytest.approx(12 * MS)
    # host time is what only the main thread's recorded waits held
    assert replay(two, 1, 2, 2, 1).host_ns == pytest.approx(2 * MS)


def test_busy_threads_beyond_the_cores_share_them():
    # three closures of 10 ms on 2 cores: 30 ms of work at 2 cores' pace
    assert replay(fan_out(10, 10, 10), 1, 3, 2, 1).span_ns == pytest.approx(17 * MS)
    # with 3 cores each has its own
    assert replay(fan_out(10, 10, 10), 1, 3, 3, 1).span_ns == pytest.approx(12 * MS)


def one_op(op: OpWork) -> StepWork:
    main = Unit(0, True, (Segment(OP, op=op),))
    return StepWork(1, 0, (main,))


def test_an_op_spreads_its_parallel_part_over_the_pool_and_its_caller():
    op = OpWork(serial=2 * MS, handoff=0.5 * MS, parallel=12 * MS, shards=4, inline=11 * MS)
    # intra 1: inline, its shards' work alone (no hand-off, no split)
    assert replay(one_op(op), 1, 1, 8, 2).span_ns == pytest.approx(11 * MS)
    # intra 2 on 8 cores: the caller and 2 workers: 2 + 0.5 + 12 / 3
    assert replay(one_op(op), 2, 1, 8, 2).span_ns == pytest.approx(6.5 * MS)
    # intra 2 on 2 cores: 3 lanes share 2 cores: 2 + 0.5 + 12 / 2
    assert replay(one_op(op), 2, 1, 2, 2).span_ns == pytest.approx(8.5 * MS)


def test_the_eigen_workers_spin_between_ops_and_crowd_the_cores():
    # two ops, 12 ms over the caller and 2 workers each (6 ms on 2 cores), 4 ms of work
    # between them on the op's thread: 16 ms without spin
    op = OpWork(serial=0, handoff=0, parallel=12 * MS, shards=2, inline=12 * MS)
    main = Unit(0, True, (Segment(OP, op=op), Segment(CPU, 4 * MS), Segment(OP, op=op)))
    step = StepWork(1, 0, (main,))
    assert replay(step, 2, 1, 2, 2).span_ns == pytest.approx(16 * MS)
    # the two workers spin 2 ms once out of work: 3 threads on 2 cores, the work between the
    # ops does 4/3 ms in those 2 ms and the rest at full pace: 6 + 2 + 8/3 + 6
    assert replay(step, 2, 1, 2, 2, spin_ns=2 * MS).span_ns == pytest.approx((16 + 2 / 3) * MS)
    # with a core each, the spin takes nothing from it
    assert replay(step, 2, 1, 3, 2, spin_ns=2 * MS).span_ns == replay(step, 2, 1, 3, 2).span_ns
    # at intra-op 1 there is no pool to spin: 12 + 4 + 12
    assert replay(step, 1, 1, 2, 2, spin_ns=2 * MS).span_ns == pytest.approx(28 * MS)


def test_a_hand_off_costs_what_waking_the_pool_does_in_the_state_it_is_in():
    # two ops of 3 ms over the caller and 2 workers (1 ms each on 8 cores), ``gap`` ms of
    # work between them; the workers spin 2 ms once out of work
    op = OpWork(serial=0, handoff=0, parallel=3 * MS, shards=2, inline=3 * MS)
    wake = Wakeup(awake_ns=0.1 * MS, asleep_ns=0.5 * MS)

    def span(gap: float, wake: Wakeup | None = wake, intra: int = 2) -> float:
        main = Unit(0, True, (Segment(OP, op=op), Segment(CPU, gap * MS), Segment(OP, op=op)))
        return replay(StepWork(1, 0, (main,)), intra, 1, 8, 2, spin_ns=2 * MS, wake=wake).span_ns

    # the second op's hand-off finds the pool spinning: 0.1 + 1 + 1 + 0.1 + 1
    assert span(1) == pytest.approx(3.2 * MS)
    # asleep after 3 ms: 0.1 + 1 + 3 + 0.5 + 1
    assert span(3) == pytest.approx(5.6 * MS)
    assert span(3, wake=None) == pytest.approx(5 * MS)  # each op's recorded hand-off (0)
    assert span(3, intra=1) == pytest.approx(9 * MS)  # inline: no pool to hand to


def forks(first_ms: float, rest_ms: float, child_ms: float) -> StepWork:
    """The main thread schedules closure 1 and waits for it and its child after 1 ms of host
    time (1 ms more after): closure 1 works ``first_ms``, schedules closure 2 (``child_ms``
    of work) and works ``rest_ms`` more."""
    main = Unit(
        0,
        True,
        (
            Segment(WAITS, 1 * MS, HOST),
            *spawn(1),
            Segment(JOIN, units=(1, 2)),
            Segment(WAITS, 1 * MS, HOST),
        ),
    )
    first = Unit(1, False, (Segment(CPU, first_ms * MS), *spawn(2), Segment(CPU, rest_ms * MS)))
    return StepWork(1, 0, (main, first, Unit(1, False, (Segment(CPU, child_ms * MS),))))


def test_an_idle_inter_op_thread_takes_a_closure_once_woken():
    asleep = Wakeup(awake_ns=0.1 * MS, asleep_ns=5 * MS)

    def span(step: StepWork, inter: int, wake: Wakeup | None = asleep) -> float:
        return replay(step, 1, inter, 2, 1, inter_wake=wake).span_ns

    long_child = forks(1, 20, 10)
    # taken at once, the child runs beside the rest of closure 1: 1 + 1 + 20 + 1
    assert span(long_child, 2, wake=None) == pytest.approx(23 * MS)
    # woken: closure 1 starts at 6 ms, the child at 12 ms on the other thread, 6 + 1 + 20 + 1
    assert span(long_child, 2) == pytest.approx(28 * MS)
    # on one thread the child waits for closure 1: 6 + 1 + 20 + 10 + 1
    assert span(long_child, 1) == pytest.approx(38 * MS)
    # a short closure 1 ends before the other thread is up, and its own thread takes the
    # child back (6 + 1 + 1 + 0.5 + 1), as it would on one thread
    short = forks(1, 1, 0.5)
    assert span(short, 2) == pytest.approx(9.5 * MS)
    assert span(short, 1) == pytest.approx(9.5 * MS)
    assert span(short, 2, wake=None) == pytest.approx(4 * MS)


def test_a_spinning_inter_op_thread_is_up_sooner_than_a_sleeping_one():
    # closures 1 (1 ms) and 2 (2 ms, then closure 3, then 4 ms) start together at 6 ms on
    # two threads, both woken; the first thread is free from 7 ms and idle 1 ms when
    # closure 3 (5 ms) is queued at 8 ms
    wake = Wakeup(awake_ns=0.1 * MS, asleep_ns=5 * MS)
    main = Unit(
        0,
        True,
        (
            Segment(WAITS, 1 * MS, HOST),
            *spawn(1, 2),
            Segment(JOIN, units=(1, 2, 3)),
            Segment(WAITS, 1 * MS, HOST),
        ),
    )
    second = Unit(1, False, (Segment(CPU, 2 * MS), *spawn(3), Segment(CPU, 4 * MS)))
    units = (main, Unit(1, False, (Segment(CPU, 1 * MS),)), second)
    step = StepWork(1, 0, (*units, Unit(1, False, (Segment(CPU, 5 * MS),))))

    def span(spin_ms: float) -> float:
        return replay(step, 1, 2, 2, 1, spin_ns=spin_ms * MS, inter_wake=wake).span_ns

    # spinning (for 2 ms): up at 8.1 ms, closure 3 ends at 13.1 (closure 2 at 12): 13.1 + 1
    assert span(2) == pytest.approx(14.1 * MS)
    # asleep after 0.5 ms: it would be up at 13 ms, but closure 2's thread, free at 12 ms,
    # takes closure 3 back first: 12 + 5 + 1
    assert span(0.5) == pytest.approx(18 * MS)


def test_only_the_one_spinning_inter_op_thread_is_up_sooner():
    # closures of 1 ms, 2 ms and one of 4.5 ms that then queues a 5 ms closure and works 4 ms
    # more, all woken at 1 ms: up at 6 ms. The first thread out of work spins from 7 ms; the
    # second, idle from 8 ms while the first spins, sleeps at once (Eigen's pool leaves one
    # thread spinning); the 5 ms closure is queued at 10.5 ms
    wake = Wakeup(awake_ns=0.1 * MS, asleep_ns=5 * MS)
    main = Unit(
        0,
        True,
        (
            Segment(WAITS, 1 * MS, HOST),
            *spawn(1, 2, 3),
            Segment(JOIN, units=(1, 2, 3, 4)),
            Segment(WAITS, 1 * MS, HOST),
        ),
    )
    queues = Unit(1, False, (Segment(CPU, 4.5 * MS), *spawn(4), Segment(CPU, 4 * MS)))
    closures = (Unit(1, False, (Segment(CPU, 1 * MS),)), Unit(1, False, (Segment(CPU, 2 * MS),)))
    step = StepWork(1, 0, (main, *closures, queues, Unit(1, False, (Segment(CPU, 5 * MS),))))

    def span(spin_ms: float) -> float:
        return replay(step, 1, 3, 8, 1, spin_ns=spin_ms * MS, inter_wake=wake).span_ns

    # a spin of 5 ms: the first thread still spins at 10.5 ms, is up at 10.6: 15.6 + 1
    assert span(5) == pytest.approx(16.6 * MS)
    # a spin of 3 ms: the first has slept since 10 ms and the second never spun, though idle
    # for less than the spin; the queuing thread, free at 14.5 ms, takes its closure back
    # before one wakes at 15.5: 14.5 + 5 + 1
    assert span(3) == pytest.approx(20.5 * MS)


def test_an_idle_inter_op_thread_spins_before_it_sleeps_and_crowds_the_cores():
    # closures of 1 ms and 3 ms start together at 1 ms on two inter-op threads
    step = fan_out(1, 3)

    def span(cores: float, spin_ms: float, inter: int = 2) -> float:
        return replay(step, 1, inter, cores, 1, spin_ns=spin_ms * MS).span_ns

    # one core: each at half of it, the first ends at 3 ms; its thread then spins 1 ms beside
    # the second (half a core each), which has 2 ms left: 0.5 done by 4 ms, 1.5 more, + 1
    assert span(1, 1) == pytest.approx(6.5 * MS)
    assert span(1, 0) == pytest.approx(6 * MS)
    # a core each: the spin takes nothing from the second
    assert span(2, 1) == span(2, 0) == pytest.approx(5 * MS)
    # Eigen's pool leaves one thread spinning: with two idle, the third shares with one
    assert replay(fan_out(1, 1, 4), 1, 3, 1, 1, spin_ns=1 * MS).span_ns == pytest.approx(
        replay(fan_out(1, 1, 4), 1, 3, 1, 1, spin_ns=0).span_ns + 0.5 * MS
    )


def test_an_op_splits_no_finer_than_its_shards_allow():
    # one shard recorded at intra 2: at intra 2 its thread and that shard (2 lanes, not 3);
    # the pool splits it finer as it grows: 1 + 1 x intra / 2 lanes
    op = OpWork(serial=0, handoff=0, parallel=12 * MS, shards=1, inline=12 * MS)
    assert replay(one_op(op), 2, 1, 8, 2).span_ns == pytest.approx(6 * MS)
    assert replay(one_op(op), 4, 1, 8, 2).span_ns == pytest.approx(4 * MS)
    assert replay(one_op(op), 8, 1, 8, 2).span_ns == pytest.approx(12 / 5 * MS)


def test_ops_in_their_parallel_part_share_the_eigen_pool():
    # two closures, each one op of 12 ms parallel work, on intra 2, 8 cores: each gets one
    # worker beside its own thread: 12 / 2
    op = OpWork(serial=0, handoff=0, parallel=12 * MS, shards=8, inline=12 * MS)
    main = Unit(0, True, (*spawn(1, 2), Segment(JOIN, units=(1, 2))))
    units = [Unit(1, False, (Segment(OP, op=op),)), Unit(2, False, (Segment(OP, op=op),))]
    step = StepWork(1, 0, (main, *units))
    assert replay(step, 2, 2, 8, 2).span_ns == pytest.approx(6 * MS)


def test_an_op_with_a_block_per_worker_waits_for_the_core_its_blocks_queued_on():
    # two shards recorded at intra 2: one block per worker. At intra 4 on 2 cores its 4 ms
    # of parallel work is 4 blocks of 1 ms (under the kernel's 2 ms balance interval): the
    # caller and 4 workers would end in 2 ms at the cores' pace, and take 1.25x that, the
    # most loaded core's queue (``placement.py``)
    op = OpWork(serial=0, handoff=0, parallel=4 * MS, shards=2, inline=4 * MS)
    assert replay(one_op(op), 2, 1, 2, 2).span_ns == pytest.approx(2 * MS)
    assert replay(one_op(op), 4, 1, 2, 2).span_ns == pytest.approx(2.5 * MS)
    # on 4 cores the 4 workers fit (5 lanes at the 4 cores' pace); with more shards than
    # workers a free worker takes the blocks left
    assert replay(one_op(op), 4, 1, 4, 2).span_ns == pytest.approx(1 * MS)
    many = OpWork(serial=0, handoff=0, parallel=4 * MS, shards=4, inline=4 * MS)
    assert replay(one_op(many), 4, 1, 2, 2).span_ns == pytest.approx(2 * MS)
    # blocks of 10 ms, five times the balance interval: a fifth of the slowdown, 1.05x
    long = OpWork(serial=0, handoff=0, parallel=40 * MS, shards=2, inline=40 * MS)
    assert replay(one_op(long), 4, 1, 2, 2).span_ns == pytest.approx(21 * MS)


def test_the_cores_a_queued_op_leaves_idle_go_to_the_other_threads():
    # beside a closure of 10 ms of work: the op's 5 lanes and the closure, 6 threads on 2
    # cores; the op gets 1 / 1.25 of its 5/6 of the cores (4/3 of a core), the closure the
    # 2/3 of a core left, twice its due: the op's 4 ms end after 3 ms, the closure's 10 ms
    # after 3 + (10 - 2) = 11 ms
    op = OpWork(serial=0, handoff=0, parallel=4 * MS, shards=2, inline=4 * MS)
    main = Unit(0, True, (*spawn(1, 2), Segment(JOIN, units=(1, 2))))
    units = [Unit(1, False, (Segment(OP, op=op),)), Unit(2, False, (Segment(CPU, 10 * MS),))]
    step = StepWork(1, 0, (main, *units))
    assert replay(step, 4, 2, 2, 2).span_ns == pytest.approx(11 * MS)
    # two ops split at once fill each other's idle cores: no slowdown
    two = StepWork(1, 0, (main, units[0], Unit(2, False, (Segment(OP, op=op),))))
    assert replay(two, 4, 2, 2, 2).span_ns == pytest.approx(4 * MS)


def test_a_closure_that_waits_gives_its_thread_back():
    # inter 1: closure 1 schedules closure 2 and waits for it (a function call op): 2 must
    # get the only thread, then 1 needs it again for its last 1 ms
    main = Unit(0, True, (*spawn(1), Segment(JOIN, units=(1, 2))))
    caller = Unit(
        1,
        False,
        (Segment(CPU, 1 * MS), *spawn(2), Segment(JOIN, units=(2,)), Segment(CPU, 1 * MS)),
    )
    callee = Unit(1, False, (Segment(CPU, 5 * MS),))
    assert replay(StepWork(1, 0, (main, caller, callee)), 1, 1, 2, 1).span_ns == pytest.approx(
        7 * MS
    )


def request(r: int, root: int) -> Unit:
    """Request ``r`` on its own thread: it schedules closure ``root`` (which schedules
    ``root + 1``) and waits for both."""
    begin, end = Segment(MARK, why=BEGIN, units=(r,)), Segment(MARK, why=END, units=(r,))
    return Unit(0, True, (begin, *spawn(root), Segment(JOIN, units=(root, root + 1)), end))


def test_a_closure_scheduled_on_an_inter_op_thread_runs_there_next():
    # two requests, one inter-op thread, each request two closures of 10 ms one after the
    # other: the thread runs the closure it scheduled itself before the other request's
    # (Eigen's pool pushes it to the front of that thread's queue), so the first request
    # ends at 20 ms, not at 30 ms behind the second request's first closure
    def chain(root: int) -> tuple[Unit, Unit]:
        return (
            Unit(1, False, (Segment(CPU, 10 * MS), *spawn(root + 1))),
            Unit(1, False, (Segment(CPU, 10 * MS),)),
        )

    units = (request(0, 2), request(1, 4), *chain(2), *chain(4))
    done = replay(StepWork(1, 0, units), 1, 1, 2, 1)
    assert done.latencies() == {0: pytest.approx(20 * MS), 1: pytest.approx(40 * MS)}
    # with a thread free, the other request's closures run beside
    assert replay(StepWork(1, 0, units), 1, 2, 2, 1).latencies() == {
        0: pytest.approx(20 * MS),
        1: pytest.approx(20 * MS),
    }


def test_a_closure_scheduled_elsewhere_starts_when_it_did():
    main = Unit(0, True, (Segment(WAITS, 2 * MS, HOST),))
    late = Unit(1, False, (Segment(CPU, 3 * MS),), release_ns=4 * MS)
    done = replay(StepWork(1, 0, (main, late)), 1, 1, 2, 1)
    assert done.span_ns == pytest.approx(7 * MS)
    assert done.host_ns == pytest.approx(2 * MS)  # the wait for the release is not host time


def python_threads(*loads: float, ms: float = 10) -> StepWork:
    """One main unit per ``loads``: ``ms`` of Python outside any op, on a CPU ``load`` of it."""
    units = tuple(Unit(0, True, (Segment(WAITS, ms * MS, HOST, load=load),)) for load in loads)
    return StepWork(1, 0, units)


def test_python_on_several_threads_shares_the_interpreter_lock():
    # two threads each on a CPU all of 10 ms: one core's worth of Python at a time, 20 ms
    assert replay(python_threads(1.0, 1.0), 1, 1, 4, 1).span_ns == pytest.approx(20 * MS)
    # half a core each: they fit in one core's worth side by side
    assert replay(python_threads(0.5, 0.5), 1, 1, 4, 1).span_ns == pytest.approx(10 * MS)
    # three at half a core: 1.5 cores of Python, so each one's CPU half moves at 1 / 1.5
    # of its pace and its waiting half as recorded: 10 ms at 0.5 + 0.5 / 1.5
    threads = python_threads(0.5, 0.5, 0.5)
    assert replay(threads, 1, 1, 4, 1).span_ns == pytest.approx(10 * MS / (0.5 + 0.5 / 1.5))


def test_the_interpreter_locks_python_runs_first_while_a_core_is_left():
    # 20 ms of Python on a CPU all along beside two closures of 10 ms of work on 2 cores:
    # the Python keeps a core (its waiters, woken at each hand-off of the lock, are as
    # runnable as it), the closures share the other: all end at 20 ms. Shared evenly, the
    # closures would end at 15 ms and the Python at 25
    main = Unit(0, True, (*spawn(1, 2), Segment(WAITS, 20 * MS, HOST, load=1.0)))
    units = [Unit(k, False, (Segment(CPU, 10 * MS),)) for k in (1, 2)]
    step = StepWork(1, 0, (main, *units))
    assert replay(step, 1, 2, 2, 1).span_ns == pytest.approx(20 * MS)
    # on one core it leaves none: the three share it evenly, the closures end at 30 ms and
    # the Python's last 10 ms run alone
    assert replay(step, 1, 2, 1, 1).span_ns == pytest.approx(40 * MS)


def test_an_input_wait_does_not_hold_the_interpreter_lock():
    units = tuple(Unit(0, True, (Segment(WAITS, 10 * MS, INPUT, load=1.0),)) for _ in range(2))
    assert replay(StepWork(1, 0, units), 1, 1, 4, 1).span_ns == pytest.approx(10 * MS)


def test_a_closure_a_call_releases_late_follows_the_call_not_the_recorded_clock():
    # 3 ms of Python, then a call that releases a 1 ms closure 5 ms after it starts and waits
    main = Unit(
        0,
        True,
        (
            Segment(WAITS, 3 * MS, HOST),
            Segment(SPAWN, 5 * MS, units=(1,)),
            Segment(JOIN, units=(1,)),
        ),
    )
    step = StepWork(1, 0, (main, Unit(1, False, (Segment(CPU, 1 * MS),))))
    assert replay(step, 1, 1, 2, 1).span_ns == pytest.approx(9 * MS)
    # the Python before the call twice as fast: the closure comes 1.5 ms sooner with it
    faster = Unit(0, True, (Segment(WAITS, 1.5 * MS, HOST), *main.segments[1:]))
    step = StepWork(1, 0, (faster, step.units[1]))
    assert replay(step, 1, 1, 2, 1).span_ns == pytest.approx(7.5 * MS)


def test_a_blas_pool_works_beside_the_python_that_calls_it():
    # 10 ms of Python on a CPU all along, a BLAS pool a core beside it, and a closure of
    # 12 ms of work on 3 cores: a core each, the Python ends with its pool at 10 ms
    main = Unit(0, True, (*spawn(1), Segment(WAITS, 10 * MS, HOST, load=1.0)))
    step = StepWork(1, 0, (main, Unit(1, False, (Segment(CPU, 12 * MS),))))
    assert replay(step, 1, 1, 3, 1, beside_python=1.0).span_ns == pytest.approx(12 * MS)
    alone = replay(step, 1, 1, 2, 1)
    assert alone.span_ns == pytest.approx(12 * MS)  # no pool beside: a core each on 2
    # on 2 cores the Python has its core, the pool and the closure share the other: the
    # Python ends with its pool at 20 ms, the closure's last 2 ms run alone
    beside = replay(step, 1, 1, 2, 1, beside_python=1.0)
    assert beside.span_ns == pytest.approx(22 * MS)
    # the product splits over the pool: its part waiting for a core is crowding
    assert beside.crowded_ns == pytest.approx(20 * MS)
    assert alone.crowded_ns == 0.0
