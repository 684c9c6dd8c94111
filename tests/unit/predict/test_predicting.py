"""``predict`` on hand-built runs: known answers worked out by hand, the calibration, what
binds each setting, the bases, and the one-line refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from builders import (
    MS,
    RECORD,
    START,
    STOP,
    call,
    cpu_samples_table,
    hand_built_run,
    make_run,
    py_function_step,
    sharded_step,
    stepped_run,
    two_closures_step,
    two_sharded_step,
)
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict import predict
from tftrace.analysis.predict.predicting import CHAIN, CORES, EIGEN, HOST_TIME, INTER_OP, _basis
from tftrace.errors import TftraceError
from tftrace.tracer.manifest_reader import Manifest

MAIN, INTER, EIGEN_WORKER = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP


def test_two_independent_closures_at_inter_1_run_side_by_side_at_inter_2():
    """Recorded at inter-op 1: a 21 ms step, closure B (9.9 ms) queued behind A (0.1 + 0.1 +
    9.8 ms). The replay of the recording: 0.5 host, A 10 ms, B 9.9, 0.5 host = 20.9 ms; at
    inter-op 2, B starts 0.1 ms after A: 0.5 + 10 + 0.5 = 11 ms. Speedup 20.9 / 11."""
    p = predict(stepped_run([MAIN, INTER], two_closures_step), inter=(1, 2, 4))
    assert (p.recorded_intra, p.recorded_inter, p.cores) == (1, 1, 2)
    assert p.steps == p.window_steps == 2  # steps 2-3, after the warm-up
    assert p.recorded_ms == pytest.approx(21)
    assert p.replayed_ms == pytest.approx(20.9)
    assert p.residual == pytest.approx(20.9 / 21 - 1)
    recorded, two, four = p.settings
    assert recorded.basis == "recorded" and recorded.step_ms == pytest.approx(21)
    assert recorded.reason == INTER_OP
    assert recorded.gains[INTER_OP] == pytest.approx(20.9 / 11 - 1)
    assert two.speedup == pytest.approx(20.9 / 11)
    assert two.step_ms == pytest.approx(21 * 11 / 20.9)
    assert two.basis == "calibrated" and two.reason == CHAIN
    assert four.speedup == pytest.approx(two.speedup)
    assert four.basis == "extrapolation: inter 4 > 2 CPUs"
    assert p.best() == two  # the first of the fastest
    assert p.setting(1, 4) == four


def test_an_op_with_two_shards_at_intra_2_is_slower_inline():
    """Recorded at intra-op 2 on 2 CPUs: the op's 10 ms kept its thread and both workers busy,
    three threads on 2 cores: each shard was 10 ms at 2/3 of a core, 6.67 ms of work. Inline
    at intra-op 1 its thread does the shards' work, 13.33 ms (what the op's own thread did
    beside them was the split's): a 12 ms step becomes 15.33 ms."""
    run = stepped_run([MAIN, INTER, EIGEN_WORKER, EIGEN_WORKER], sharded_step, intra=2)
    p = predict(run, intra=(1, 2, 4), inter=(1,))
    inline, recorded, four = p.settings
    assert recorded.basis == "recorded" and recorded.step_ms == pytest.approx(12)
    assert p.residual == pytest.approx(0, abs=1e-9)
    inline_ms = 2 + 2 * 10 * 2 / 3  # the step outside the shards (2 ms), and their work
    assert inline.step_ms == pytest.approx(inline_ms)
    assert inline.speedup == pytest.approx(12 / inline_ms)
    assert inline.reason == EIGEN and inline.gains[EIGEN] == pytest.approx(inline_ms / 12 - 1)
    assert recorded.reason == CORES  # three busy threads on two cores
    # the cores bind, however many workers; at intra-op 4 the op's 20 ms of parallel work
    # (its shards' 13.33 ms, its thread's 6.67) is 4 blocks of 5 ms, one per worker, two
    # queued on the 2 cores at random: 1.25x, of which 2 ms / 5 ms is left by the kernel's
    # balancing (``placement.py``): its 10 ms take 11
    assert four.step_ms == pytest.approx(2 + 10 * (1 + 0.25 * 2 / 5))
    assert four.basis == "extrapolation: intra 4 > 2 CPUs"


def test_intra_op_pools_beyond_the_cpus_and_the_recorded_one_are_said():
    run = stepped_run([MAIN, INTER, EIGEN_WORKER, EIGEN_WORKER], sharded_step, intra=2)
    notes = predict(run, intra=(1, 2, 4, 8), inter=(1,)).notes
    beyond = [n for n in notes if n.startswith("intra-op")]
    assert beyond == [
        "intra-op 4, 8: more Eigen workers than the 2 CPUs and than recorded (2); the trace "
        "does not show what their workers queued behind busy cores cost, and such pools ran "
        "from a third slower to a sixth faster than predicted (docs/predict.md, intra-op 4 "
        "on 2 cores): take their figures as less sure"
    ]
    within = predict(run, intra=(1, 2), inter=(1, 2, 4)).notes  # inter-op beyond: no word
    assert not [n for n in within if n.startswith("intra-op")]


def test_a_python_step_is_unchanged_by_every_setting():
    p = predict(stepped_run([MAIN, INTER], py_function_step))
    assert [(s.intra, s.inter) for s in p.settings] == [(1, 1), (1, 2), (1, 4)]  # the ladder
    for s in p.settings:
        assert s.step_ms == pytest.approx(20) and s.reason == HOST_TIME
        assert s.host_share == pytest.approx(19 / 20)  # all but the executor's 0.5 + 0.5
    assert p.notes == (
        "intra-op 1 only: the run was recorded at intra-op 1, so its ops hold no shards to "
        "spread over more workers; record it at intra-op 2 or more",
    )


def test_more_cpus_given_move_the_ladder_and_the_extrapolations():
    p = predict(stepped_run([MAIN, INTER], two_closures_step), cpus=4)
    assert [s.inter for s in p.settings] == [1, 2, 4, 8]
    assert [s.basis for s in p.settings][2:] == ["calibrated", "extrapolation: inter 8 > 4 CPUs"]


def test_intra_above_the_recorded_is_an_extrapolation_within_the_cpus():
    run = stepped_run([MAIN, INTER, EIGEN_WORKER, EIGEN_WORKER], sharded_step, intra=2, cpus=8)
    p = predict(run, intra=(2, 4), inter=(1,))
    assert [s.basis for s in p.settings] == ["recorded", "extrapolation: intra 4 > recorded 2"]
    # 8 cores: no sharing, so 30 ms of work (its thread and both workers, 10 ms each) over 3
    # lanes; at intra-op 4 over 5 (the caller and 4 workers): 10 ms -> 6
    assert p.settings[1].step_ms == pytest.approx(12 - 10 + 6)


@pytest.mark.parametrize(
    ("setting", "two_paces", "basis"),
    [
        ((2, 2), True, "recorded"),
        ((1, 2), False, "calibrated"),
        ((1, 2), True, "less sure: two paces"),
        ((2, 4), True, "extrapolation: inter 4 > 2 CPUs; two paces"),
        ((4, 1), False, "extrapolation: intra 4 > 2 CPUs"),
    ],
)
def test_a_server_at_two_paces_is_less_sure_at_every_other_setting(setting, two_paces, basis):
    """Recorded at 2/2 on 2 CPUs: a server whose requests ran at two paces has every other
    setting's figure said to be less sure (the setting moves the time spent at each pace);
    an extrapolation keeps its own why too."""
    assert _basis(*setting, 2, 2, 2.0, two_paces) == basis


def test_many_steps_are_sampled_and_said():
    p = predict(stepped_run([MAIN, INTER], two_closures_step, steps=30), inter=(1,))
    assert (p.steps, p.window_steps) == (20, 29)
    assert "20 of the window's 29 steps replayed, evenly spread" in p.notes


@pytest.mark.parametrize(
    ("run", "options", "says"),
    [
        (make_run(), {}, "holds no trace to replay"),
        (hand_built_run(), {}, "no steps to replay"),
        (
            stepped_run([MAIN, INTER], two_closures_step),
            {"intra": (1, 4)},
            "recorded at intra-op 1: its ops hold no shards",
        ),
        (stepped_run([MAIN, INTER], two_closures_step), {"inter": (0,)}, ">= 1, not 0"),
        (stepped_run([MAIN, INTER], two_closures_step), {"inter": ()}, "no --inter size"),
        (stepped_run([MAIN, INTER], two_closures_step), {"cpus": 0}, "cpus must be"),
    ],
)
def test_what_cannot_be_predicted_is_one_line(run, options, says):
    with pytest.raises(TftraceError, match=says) as raised:
        predict(run, **options)
    assert "\n" not in str(raised.value)


def test_unknown_cpus_or_pool_sizes_are_one_line():
    run = stepped_run([MAIN, INTER], two_closures_step)
    bare = dataclasses.replace(run, manifest=Manifest.from_json({}))
    with pytest.raises(TftraceError, match="CPUs the process could use are unknown"):
        predict(bare)
    with pytest.raises(TftraceError, match="recorded pool sizes are unknown"):
        predict(bare, cpus=2)


def test_cpus_given_are_said():
    p = predict(stepped_run([MAIN, INTER], two_closures_step), inter=(1,), cpus=3)
    assert (p.cores, p.cores_basis) == (3, "3 CPUs given (--cpus)")


def test_a_cgroup_quota_below_the_cpus_is_the_cores():
    """Two closures at inter-op 2 on 1.5 cores: A runs alone for 0.1 ms, then A's 9.9 ms of
    work left and B's 9.9 ms share the cores at 0.75 each until 0.6 + 13.2 ms; with the main
    thread's 0.5 + 0.5 ms, 14.3 ms against the recording's replayed 20.9."""
    run = stepped_run([MAIN, INTER], two_closures_step)
    host = dataclasses.replace(run.manifest.host, cpu_quota=1.5)
    run = dataclasses.replace(run, manifest=dataclasses.replace(run.manifest, host=host))
    p = predict(run, inter=(1, 2))
    assert (p.cores, p.cores_basis) == (1.5, "the cgroup quota of 1.5 CPUs")
    assert p.setting(1, 2).speedup == pytest.approx(20.9 / 14.3)
    assert p.setting(1, 2).reason == CORES


def test_a_caller_that_waits_leaves_the_work_to_the_workers():
    """The sharded op on 8 CPUs with its thread idle by the sampler: 20 ms of work on the two
    workers (10 ms); at intra-op 4 on four of them: 5 ms, so a 12 ms step takes 7. A caller
    taken as working (no samples) would make it 30 ms over 3 lanes, then 5: 12 - 10 + 6."""
    run = stepped_run(
        [MAIN, INTER, EIGEN_WORKER, EIGEN_WORKER], sharded_step, steps=14, intra=2, cpus=8
    )
    t = np.arange(0, 14 * 30 + 1, dtype=np.int64) * MS
    idle = dataclasses.replace(run, samples=cpu_samples_table(1, 101, t, np.zeros_like(t)))
    p = predict(idle, intra=(2, 4), inter=(1,))
    assert (p.caller_share, p.caller_measured) == (0, True)
    assert p.setting(4, 1).step_ms == pytest.approx(7)
    assert "an op's own thread used 0% of a core while its shards ran" in p.notes[0]
    assert predict(run, intra=(2, 4), inter=(1,)).setting(4, 1).step_ms == pytest.approx(8)


def test_a_recording_that_splits_ops_at_once_on_shared_cores_is_said():
    """Two ops split over the pool at once, four busy threads on 2 CPUs, 10 ms of each step:
    20 ms of the replayed span, steps 2-3 (30 to 72 ms, the gap between them in it)."""
    pools = [MAIN, INTER, INTER, EIGEN_WORKER, EIGEN_WORKER]
    p = predict(stepped_run(pools, two_sharded_step, intra=2, inter=2), intra=(2,), inter=(2,))
    assert p.notes[:2] == (
        "the recording had more busy threads than cores for 48% of the replayed steps' span: "
        "the work it holds includes what that contention cost, so settings with fewer threads "
        "may be faster than predicted",
        "two ops or more were split over the Eigen pool at once for 48% of the replayed steps' "
        "span: such a recording can hold more work than the same ops run apart "
        "(docs/predict.md), so settings that run them apart may be faster than predicted",
    )


def wide_sharded_step(k: int, t0: float) -> list:
    """``sharded_step`` with its op split 10 ways: ten 2 ms shards, five on each worker."""
    a = 1000 + 100 * k
    rows = [
        call(t0, 12),
        (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, a, None),
        (1, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, a),
        (1, "MatMul:MatMul", EventKind.OP.value, t0 + 1, t0 + 11, None, None),
    ]
    for i in range(10):
        worker, at = 2 + i % 2, t0 + 1 + 2 * (i // 2)
        rows += [
            (1, "ThreadpoolListener::Record", RECORD, t0 + 1, t0 + 1, a + 1 + i, None),
            (worker, "ThreadpoolListener::StartRegion", START, at, at, None, a + 1 + i),
            (worker, "ThreadpoolListener::StopRegion", STOP, at + 2, at + 2, None, None),
        ]
    return [*rows, (1, "ThreadpoolListener::StopRegion", STOP, t0 + 11.5, t0 + 11.5, None, None)]


def test_a_recording_split_wider_than_checked_is_said():
    """Split 10 ways the inline cost is less sure (on 16 cores, 28 ways, the shards held
    several times the ops' inline work); split 2 ways it is not said."""
    pools = [MAIN, INTER, EIGEN_WORKER, EIGEN_WORKER]
    wide = predict(stepped_run(pools, wide_sharded_step, intra=2), intra=(1, 2), inter=(1,))
    said = [n for n in wide.notes if n.startswith("the recording split its ops")]
    assert said == [
        "the recording split its ops 10 ways on average: split that wide, shards can cost "
        "several times the op's work run inline (docs/predict.md, on 16 cores), and the "
        "replay runs a split op inline as its shards' work, so settings with a smaller "
        "intra-op pool may be faster than predicted"
    ]
    narrow = predict(stepped_run(pools, sharded_step, intra=2), intra=(1, 2), inter=(1,))
    assert not [n for n in narrow.notes if n.startswith("the recording split its ops")]
    # the same work either way: 20 ms of shards, run inline at intra-op 1
    assert wide.setting(1, 1).step_ms == pytest.approx(narrow.setting(1, 1).step_ms, rel=0.02)
