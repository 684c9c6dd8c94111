"""The analysed window, the warm-up and the windowed metrics on hand-built runs whose answers are
worked out by hand (steps, spans, warm-up categories, clipped ops and queue delays)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from builders import MS, EventRow, events_table, hand_built_run, make_run, threads_table
from tftrace import TftraceError
from tftrace.analysis.analyze import analyze
from tftrace.analysis.metrics.intervals import first_match_ns
from tftrace.analysis.metrics.ops import top_op_types
from tftrace.analysis.metrics.queue_delay import queue_delay_stats
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.metrics.warmup import WARMUP_CATEGORIES, measure_warmup
from tftrace.analysis.metrics.window import (
    WindowSpec,
    in_recording,
    parse_window,
    resolve_window,
)
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.tracer.manifest_reader import Manifest

NOTE, CALL, OTHER = EventKind.ANNOTATION.value, EventKind.CALL.value, EventKind.OTHER.value


def steps_run() -> Run:
    """Main thread 0 calls tf.function ``train`` three times: 10-40 ms (it traces: 11-25 graph
    building with a variable created 12-14; the call 26-39, running 35-39), 50-60 and 70-80.
    Thread 1 fetches one input element in each of the last two steps."""
    rows: list[EventRow] = [
        (0, "train", NOTE, 10, 40, None, None),
        (0, "tf.function-graph_building", NOTE, 11, 25, None, None),
        (0, "EagerLocalExecute: VarHandleOp", CALL, 12, 14, None, None),
        (0, "EagerLocalExecute: __inference_train_5", CALL, 26, 39, None, None),
        (0, "KernelAndDeviceFunc::Run", CALL, 35, 39, None, None),
        (0, "train", NOTE, 50, 60, None, None),
        (0, "EagerLocalExecute: __inference_train_5", CALL, 51, 59, None, None),
        (1, "IteratorGetNextOp::DoCompute", OTHER, 52, 53, None, None),
        (0, "train", NOTE, 70, 80, None, None),
        (0, "EagerLocalExecute: __inference_train_5", CALL, 71, 79, None, None),
        (1, "IteratorGetNextOp::DoCompute", OTHER, 72, 73, None, None),
    ]
    return make_run(
        threads_table([Pool.PYTHON_MAIN, Pool.INTER_OP], 100 * MS),
        events_table((th, n, k, s * MS, e * MS, p, c) for th, n, k, s, e, p, c in rows),
    )


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("steady", WindowSpec("steady")),
        (None, WindowSpec("steady")),
        ("ALL", WindowSpec("all")),
        ("2:50", WindowSpec("steps", 2, 50)),
        ("2:", WindowSpec("steps", 2, None)),
        (":3", WindowSpec("steps", None, 3)),
        ((2, 5), WindowSpec("steps", 2, 5)),
        ("1.5:3.0", WindowSpec("times", 1.5, 3.0)),
        ("2s:4s", WindowSpec("times", 2.0, 4.0)),
        ("12.5:", WindowSpec("times", 12.5, None)),
    ],
)
def test_parse_window(text, spec):
    assert parse_window(text) == spec


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("soon", "not one of steady, all"),
        ("5:2", "ends before it starts"),
        ("0:3", "numbered from 1"),
        (":", "not one of"),
        ("2.5", "not one of"),
        ((1.5, 2), "two step numbers"),
    ],
)
def test_bad_window_is_one_line(text, says):
    with pytest.raises(TftraceError, match=says) as error:
        parse_window(text)
    assert "\n" not in str(error.value)


def test_steps_are_the_function_calls_numbered_from_one():
    steps = find_steps(steps_run())
    assert steps.source == "tf.function train"  # TF's annotation of the call, tracing included
    assert steps.table["step"].tolist() == [1, 2, 3]
    assert steps.table["duration_ns"].tolist() == [30 * MS, 10 * MS, 10 * MS]
    assert steps.table["batches"].tolist() == [0, 1, 1]
    assert steps.stats()["batches_per_step"] == 1


def test_steady_window_starts_after_the_first_step():
    run = steps_run()
    steps = find_steps(run)
    span, basis = resolve_window(run, steps, parse_window("steady"))
    assert span == (40 * MS, 80 * MS)
    assert basis == "steady: steps 2-3 of 3 (tf.function train), after 1 warm-up step"
    assert steps.within(span).table["step"].tolist() == [2, 3]
    span, basis = resolve_window(run, steps, parse_window("steady", warmup_steps=2))
    assert span == (60 * MS, 80 * MS) and basis.startswith("steady: step 3 of 3")
    span, basis = resolve_window(run, steps, parse_window("steady", warmup_steps=0))
    assert span == (10 * MS, 80 * MS) and "no warm-up" in basis
    span, basis = resolve_window(run, steps, parse_window("steady", warmup_steps=3))
    assert span == (10 * MS, 80 * MS) and basis.startswith("all: steps 1-3 of 3")


def test_a_run_recorded_from_step_a_had_its_warmup_before_the_trace():
    plain = steps_run()
    recording = {"how": "record", "steps": [10, 13]}  # tftrace record --steps 10:13
    run = dataclasses.replace(plain, manifest=Manifest.from_json({"recording": recording}))
    spec = in_recording(parse_window("steady"), run)
    span, basis = resolve_window(run, find_steps(run), spec)
    assert span == (10 * MS, 80 * MS)
    assert basis == (
        "steady: steps 1-3 of 3 (tf.function train), the warm-up was before step 10, "
        "where the recording began"
    )
    assert analyze(run).warmup is None
    # a longer warm-up reaches into the trace; a run recorded from step 0 keeps its own
    assert in_recording(parse_window("steady", warmup_steps=12), run).warmup_steps == 2
    assert in_recording(parse_window("steady"), plain) == parse_window("steady")


def test_other_windows():
    run = steps_run()
    steps = find_steps(run)
    assert resolve_window(run, steps, parse_window("all")) == (
        (10 * MS, 80 * MS),
        "all: the whole trace",
    )
    assert resolve_window(run, steps, parse_window("2:2"))[0] == (50 * MS, 60 * MS)
    assert resolve_window(run, steps, parse_window(":2"))[0] == (10 * MS, 60 * MS)
    span, basis = resolve_window(run, steps, parse_window("0.045:1.0"))
    assert span == (45 * MS, 80 * MS) and basis == "times 0.045-0.080 s, clipped to the trace"
    with pytest.raises(TftraceError, match=r"the run has steps 1-3 of 3 \(tf.function train\)"):
        resolve_window(run, steps, parse_window("2:4"))
    with pytest.raises(TftraceError, match=r"the trace spans 0.010s:0.080s"):
        resolve_window(run, steps, parse_window("1.0:2.0"))


def test_no_steps_means_the_whole_trace_and_says_so():
    run = hand_built_run()
    steps = find_steps(run)
    span, basis = resolve_window(run, steps, parse_window("steady"))
    assert span == (10 * MS, 100 * MS) and basis.startswith("all: no steps found")
    with pytest.raises(TftraceError, match="no steps"):
        resolve_window(run, steps, parse_window("1:2"))
    assert measure_warmup(run, steps) is None


def test_warmup_by_hand():
    run = steps_run()
    warmup = measure_warmup(run, find_steps(run))
    assert warmup is not None and warmup.span == (10 * MS, 40 * MS) and warmup.steps == 1
    ns = warmup.breakdown.set_index("category")["ns"] / MS
    # variable 12-14; tracing 11-25 less it; run 35-39; the call 26-39 less the run; the rest
    assert ns.to_dict() == dict(zip(WARMUP_CATEGORIES, [2, 12, 4, 9, 3], strict=True))
    assert warmup.breakdown["share"].sum() == pytest.approx(1)


def test_first_match_ns():
    a = (np.array([0, 50]), np.array([20, 60]))
    b = (np.array([10]), np.array([70]))
    assert first_match_ns([a, b], 0, 100).tolist() == [30, 40, 30]
    assert first_match_ns([b, a], 5, 55).tolist() == [45, 5, 0]
    assert first_match_ns([a], 10, 10).tolist() == [0, 0]


def test_analysis_covers_the_window():
    run = hand_built_run()  # the MatMul runs 20-60 ms, its second closure queued 30-40
    analysis = analyze(run, window="0.040:0.100")
    assert analysis.window == (40 * MS, 100 * MS) and analysis.window_basis.startswith("times")
    ops = analysis.top_ops.set_index("op_type")
    assert ops.loc["MatMul", "total_ms"] == pytest.approx(20)  # 40-60 of 20-60
    assert ops.loc["MatMul", "parallelism"] == pytest.approx(
        top_op_types(run).set_index("op_type").loc["MatMul", "parallelism"]
    )
    # closures count where they started: the second (queued 30-40 ms) is in, the first is not
    assert analysis.queue_delay.set_index("pool").loc["intra-op", "closures"] == 1
    assert analysis.queue_delay.set_index("pool").loc["intra-op", "max_us"] == 10_000
    assert queue_delay_stats(run, (30 * MS, 41 * MS))["closures"].sum() == 2
    assert analysis.breakdown["ns"].sum() == 60 * MS
    document = analysis.to_json()
    assert document["window"]["basis"] == analysis.window_basis
    assert document["window"]["mode"] == "times" and document["warmup"] is None
