"""An input pipeline's producers on hand-made units: elements started by the runner as many
at a time as recorded, the number in flight, and the steps' wait at the producers' pace."""

from __future__ import annotations

import numpy as np
import pytest

from tftrace.analysis.predict.background import Background
from tftrace.analysis.predict.items import INPUT
from tftrace.analysis.predict.pipeline import (
    INPUT_BOUND,
    InputPace,
    Pipeline,
    in_flight,
    input_wait,
    runner_segments,
)
from tftrace.analysis.predict.replay import replay
from tftrace.analysis.predict.step_work import (
    HOST,
    JOIN,
    OP,
    SPAWN,
    WAITS,
    OpWork,
    Segment,
    StepWork,
    Unit,
)

MS = 1e6


def producers(elements: int, at_once: int) -> StepWork:
    """``elements`` elements, each one closure holding one op of 2 ms of work split in two
    shards (1 ms on each of 2 workers), started by the runner ``at_once`` at a time."""
    split = OpWork(serial=0.0, handoff=0.0, parallel=2 * MS, shards=2, inline=2 * MS)
    tree = [(k, (k,)) for k in range(1, elements + 1)]
    runner = Unit(-1, True, runner_segments(tree, at_once))
    units = [Unit(1, False, (Segment(OP, op=split),)) for _ in tree]
    return StepWork(0, 0, (runner, *units))


def test_the_runner_starts_the_next_element_when_one_of_those_in_flight_ends():
    segments = runner_segments([(1, (1, 2)), (3, (3,)), (4, (4,))], 2)
    kinds = [(s.kind, s.units) for s in segments]
    assert kinds == [
        (SPAWN, (1,)),
        (SPAWN, (3,)),
        (JOIN, (1, 2)),  # the first element and the closure it scheduled
        (SPAWN, (4,)),
        (JOIN, (3, 4)),
    ]


def test_one_element_at_a_time_runs_inline_one_after_another_at_intra_1():
    # two tf.data threads, two cores: one element at a time still makes them in turn
    one = producers(4, 1)
    assert replay(one, 2, 2, 2, 2).span_ns == pytest.approx(4 * MS)  # 1 ms each, split
    assert replay(one, 1, 2, 2, 2).span_ns == pytest.approx(8 * MS)  # 2 ms each, inline
    # two at a time at intra-op 1: one on each core
    assert replay(producers(4, 2), 1, 2, 2, 2).span_ns == pytest.approx(4 * MS)


def test_elements_in_flight_are_their_mean_number_while_any_is():
    ms = np.array([0, 10, 20, 30]) * MS
    assert in_flight(ms, ms + 10 * MS) == 1  # one after another
    assert in_flight(np.r_[ms, ms], np.r_[ms, ms] + 10 * MS) == 2  # two at a time
    assert in_flight(np.zeros(0), np.zeros(0)) == 1


def test_the_wait_for_input_is_the_main_threads_input_waits():
    main = Unit(
        0,
        True,
        (
            Segment(WAITS, 3 * MS, INPUT),
            Segment(WAITS, 1 * MS, HOST),
            Segment(WAITS, 2 * MS, INPUT),
        ),
    )
    other = Unit(1, False, (Segment(WAITS, 5 * MS, INPUT),))
    assert input_wait((StepWork(0, 0, (main, other)),)) == pytest.approx(5 * MS)


def pipe(steps_ms: float, input_ms: float) -> Pipeline:
    """Four elements one at a time (``producers``) over steps of ``steps_ms`` that waited
    ``input_ms`` for them; the ops' own threads idle while their shards run."""
    return Pipeline(producers(4, 1), 0.0, Background(), 2, 1, 4, steps_ms * MS, input_ms * MS)


def test_input_bound_steps_go_at_the_producers_pace():
    # the steps waited 9 of their 10 ms: the producers set the pace
    pace = InputPace(pipe(10, 9), 2, 2, recorded_ns=10 * MS, input_ns=9 * MS)
    assert pace(2) == 0.0  # the recorded setting predicts itself
    assert pace(1) == pytest.approx(10 * MS)  # producers twice as long: steps too
    # twice the cores do not speed one element at a time split two ways
    assert pace(2, more_cores=2) == pytest.approx(0.0)
    # faster producers take off at most the wait: then the consumer's own work binds
    fast = InputPace(pipe(10, 9), 2, 1, recorded_ns=10 * MS, input_ns=3 * MS)
    assert fast(2) == pytest.approx(-3 * MS)


def test_steps_that_barely_wait_keep_their_wait():
    below = INPUT_BOUND * 0.9
    pace = InputPace(pipe(10, 10 * below), 2, 2, recorded_ns=10 * MS, input_ns=10 * below * MS)
    assert not pace.pipe.bound
    assert pace(1) == 0.0
