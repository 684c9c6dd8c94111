"""The time a recording spent beyond its replay, on cores its threads crowded while ops ran
split, charged to each setting by its own crowded time (``Replays.charge_crowding``)."""

from __future__ import annotations

import pytest

from tftrace.analysis.predict.replay import replay
from tftrace.analysis.predict.replays import Replays
from tftrace.analysis.predict.step_work import (
    CPU,
    JOIN,
    OP,
    SPAWN,
    OpWork,
    Segment,
    StepWork,
    Unit,
)

MS = 1e6


def split_beside_busy() -> StepWork:
    """The main thread schedules a split op (20 ms of shards' work, 2 shards) and a closure of
    20 ms of CPU work beside it, and waits for both."""
    main = Unit(
        0,
        True,
        (Segment(SPAWN, units=(1,)), Segment(SPAWN, units=(2,)), Segment(JOIN, units=(1, 2))),
    )
    split = Unit(1, False, (Segment(OP, op=OpWork(0.0, 0.0, 20 * MS, 2, 20 * MS)),))
    busy = Unit(2, False, (Segment(CPU, 20 * MS),))
    return StepWork(1, 0, (main, split, busy))


def replays() -> Replays:
    return Replays((split_beside_busy(),), cores=2, rec_intra=2, caller=1.0)


def test_a_split_op_beside_other_work_crowds_the_cores_only_with_a_pool():
    # intra 2: the op's thread and two workers beside the busy closure want 4 cores of 2
    assert replay(split_beside_busy(), 2, 2, 2, 2).crowded_ns > 0
    # intra 1: the op runs inline, two threads on two cores
    assert replay(split_beside_busy(), 1, 2, 2, 2).crowded_ns == 0


def test_the_unplaced_time_of_a_crowded_recording_is_charged_by_crowded_time():
    plain = replays()
    recorded = 1.25 * plain.span(2, 2)
    inline = plain.span(1, 2)
    charged = replays()
    assert charged.charge_crowding(2, 2, recorded) == pytest.approx(0.2)
    assert charged.span(2, 2) == pytest.approx(recorded)  # the recorded setting predicts itself
    assert charged.span(1, 2) == pytest.approx(inline)  # no op split, no crowding: no charge
    # a setting that crowds the cores twice as long pays twice as much
    more = replay(split_beside_busy(), 4, 2, 2, 2)
    base = replay(split_beside_busy(), 2, 2, 2, 2)
    per = (recorded - base.span_ns) / base.crowded_ns
    assert charged.span(4, 2) == pytest.approx(more.span_ns + per * more.crowded_ns)


def test_a_replay_slower_than_the_recording_is_not_charged():
    plain = replays()
    recorded = 0.9 * plain.span(2, 2)
    assert plain.charge_crowding(2, 2, recorded) == 0.0
    assert plain.span(2, 2) == pytest.approx(recorded / 0.9)


def test_a_recording_whose_cores_were_not_crowded_is_not_charged():
    # recorded at intra 1: nothing ran split, however long the recording took
    plain = replays()
    assert plain.charge_crowding(1, 2, 2 * plain.span(1, 2)) == 0.0


def server_replays() -> Replays:
    """The same step replayed as a server's, its requests made by four threads."""
    return Replays(
        (split_beside_busy(),), cores=2, rec_intra=2, caller=1.0, thread_of={r: r for r in range(4)}
    )


def test_a_servers_requests_pay_a_stall_by_the_inter_op_threads_serving_them():
    server = server_replays()
    recorded = 1.25 * server.span(2, 2)
    base = replay(split_beside_busy(), 2, 2, 2, 2)
    wider = replay(split_beside_busy(), 2, 4, 2, 2)
    assert wider.crowded_ns > 0
    assert server.charge_crowding(2, 2, recorded) > 0
    # four request threads: a stalled inter-op thread is one of min(inter, 4) serving them
    assert [server.stall_share(k) for k in (1, 2, 4, 8)] == [1.0, 0.5, 0.25, 0.25]
    assert server.span(2, 2) == pytest.approx(recorded)
    # charged at inter 2 with half of each stall, at inter 4 with a quarter
    per = (recorded - base.span_ns) / (base.crowded_ns / 2)
    assert server.span(2, 4) == pytest.approx(wider.span_ns + per * wider.crowded_ns / 4)
    loop = replays()
    loop.charge_crowding(2, 2, recorded)
    assert loop.stall_share(4) == 1.0  # a loop's step waits for the stalled op whole


def test_a_server_recorded_on_one_inter_op_thread_pays_each_stall_whole():
    # on one inter-op thread every request waited for each stall: the trace shows no overlap
    server = server_replays()
    recorded = 1.25 * server.span(2, 1)
    assert server.charge_crowding(2, 1, recorded) > 0
    assert [server.stall_share(k) for k in (1, 2, 4)] == [1.0, 1.0, 1.0]
    base = replay(split_beside_busy(), 2, 1, 2, 2)
    wider = replay(split_beside_busy(), 2, 2, 2, 2)
    per = (recorded - base.span_ns) / base.crowded_ns
    assert server.span(2, 2) == pytest.approx(wider.span_ns + per * wider.crowded_ns)


def test_a_server_at_two_paces_is_not_charged():
    # its unplaced time is the pace's (the request threads' CPU a request moved with their
    # hand-offs of the interpreter lock), not split ops stalled on crowded cores
    server = Replays(
        (split_beside_busy(),),
        cores=2,
        rec_intra=2,
        caller=1.0,
        thread_of={r: r for r in range(4)},
        two_paces=True,
    )
    recorded = 1.25 * server.span(2, 2)
    assert server.charge_crowding(2, 2, recorded) == 0.0
    # every setting keeps its replayed span: the prediction scales them all alike
    assert server.span(2, 2) == pytest.approx(replay(split_beside_busy(), 2, 2, 2, 2).span_ns)
    assert server.span(4, 2) == pytest.approx(replay(split_beside_busy(), 4, 2, 2, 2).span_ns)
