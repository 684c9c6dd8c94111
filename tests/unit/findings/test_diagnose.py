"""The findings' premises on hand-built runs whose answers are worked out by hand: cores free
during small ops, Python ops left out, the input map's measured parallelism, shares of the
window within [0, 1], and causes before their consequences."""

from __future__ import annotations

import re
from dataclasses import replace

import pandas as pd
import pytest

from builders import MS, EventRow, events_table, hand_built_run, make_run, threads_table
from tftrace.analysis.analyze import analyze
from tftrace.analysis.findings import Finding, Severity, diagnose
from tftrace.analysis.findings.diagnose import RULES, check_shares, with_causes
from tftrace.analysis.findings.evidence import parallelism_while_busy
from tftrace.analysis.findings.pool_rules import ops_too_small_to_split
from tftrace.analysis.findings.workload_rules import input_pipeline
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.render.html_sections import finding as finding_html
from tftrace.analysis.render.terminal import render_text

OP, CALL, ANNOTATION = EventKind.OP.value, EventKind.CALL.value, EventKind.ANNOTATION.value
EXECUTOR = EventKind.EXECUTOR.value
RECORD, START, STOP = (
    EventKind.RECORD.value,
    EventKind.REGION_START.value,
    EventKind.REGION_STOP.value,
)
TWO_CORES = {
    "host": {"cpu_affinity": [0, 1]},
    "pools": {"intra_op": {"size": 2}, "inter_op": {"size": 2}},
}


def _run(pools: list[Pool], rows: list[EventRow]) -> Run:
    """Rows in ms; a main-thread annotation at 99-100 ms makes the window 0-100 ms."""
    rows = [*rows, (0, "marker", ANNOTATION, 99, 100, None, None)]
    return make_run(
        threads_table(pools, 100 * MS),
        events_table((th, n, k, s * MS, e * MS, p, c) for th, n, k, s, e, p, c in rows),
        manifest=TWO_CORES,
    )


def _chain(thread: int, worker: int | None, first_id: int, ops: int = 10) -> list[EventRow]:
    """``ops`` MatMuls of 10 ms back to back on ``thread``, each handing one closure as long as
    itself to the Eigen ``worker`` (None: run inline, no closure)."""
    rows: list[EventRow] = []
    for i in range(ops):
        s, e, flow = 10 * i, 10 * i + 10, first_id + i
        rows.append((thread, "MatMul:MatMul", OP, s, e, None, None))
        if worker is not None:
            rows += [
                (thread, "ThreadpoolListener::Record", RECORD, s, s, flow, None),
                (worker, "ThreadpoolListener::StartRegion", START, s, s, None, flow),
                (worker, "ThreadpoolListener::StopRegion", STOP, e, e, None, None),
            ]
    return rows


MAIN, INTER, INTRA, DATA = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP, Pool.TF_DATA


def test_two_chains_on_two_cores_are_not_too_small_to_split():
    """Two chains side by side, each op with one Eigen worker: the old measure summed the ops'
    time of both chains (200 % of the window); both cores worked all along, so no finding."""
    run = _run([MAIN, INTER, INTER, INTRA, INTRA], _chain(1, 3, 100) + _chain(2, 4, 200))
    analysis = analyze(run, window="all")
    assert analysis.top_ops.set_index("op_type").loc["MatMul", "parallelism"] == 1.0
    assert ops_too_small_to_split(run, analysis) == []


def _inline_chain() -> Run:
    """Six 10 ms ops 0-60 ms on one inter-op thread, inside the closure the executor ran there,
    none handing work to the Eigen workers."""
    executor: list[EventRow] = [
        (0, "ThreadpoolListener::Record", RECORD, 0, 0, 1, None),
        (1, "ThreadpoolListener::StartRegion", START, 0, 0, None, 1),
        (1, "ThreadpoolListener::StopRegion", STOP, 60, 60, None, None),
    ]
    return _run([MAIN, INTER, INTRA, INTRA], executor + _chain(1, None, 100, ops=6))


def test_one_chain_of_inline_ops_leaves_a_core_free():
    """Ops 0-60 ms inline on one thread, Eigen idle, 2 cores: a core was free 60 % of the time."""
    run = _inline_chain()
    (found,) = ops_too_small_to_split(run, analyze(run, window="all"))
    assert found.evidence["cores_free_share"] == 0.6
    assert found.evidence["mean_parallelism"] == 0.0
    assert "ran 60% of the time while fewer than 2 threads worked" in found.message


def test_no_thread_pool_events_no_verdict_on_splitting():
    """Without thread-pool events (TF <= 2.16) the Eigen workers' work is invisible: the same
    inline chain gives no finding rather than a guess."""
    run = _run([MAIN, INTER, INTRA, INTRA], _chain(1, None, 100, ops=6))
    assert ops_too_small_to_split(run, analyze(run, window="all")) == []


def test_ops_a_py_function_ran_are_python_not_too_small():
    """A py_function 0-80 ms whose Python ran two eager AddV2 ops (5-20, 30-45): 30 % of the
    window in small ops with a core free, but Python's, so python-bound, not ops-too-small."""
    rows: list[EventRow] = [
        (0, "ThreadpoolListener::Record", RECORD, 0, 0, 1, None),
        (1, "ThreadpoolListener::StartRegion", START, 0, 0, None, 1),
        (1, "ThreadpoolListener::StopRegion", STOP, 80, 80, None, None),
        (1, "EagerPyFunc:EagerPyFunc", OP, 0, 80, None, None),
        (1, "TFE_Py_FastPathExecute_C", CALL, 5, 20, None, None),
        (1, "EagerLocalExecute: AddV2", CALL, 5, 20, None, None),
        (1, "TFE_Py_FastPathExecute_C", CALL, 30, 45, None, None),
        (1, "EagerLocalExecute: AddV2", CALL, 30, 45, None, None),
    ]
    run = _run([MAIN, INTER, INTRA, INTRA], rows)
    found = {f.id: f for f in diagnose(run, analyze(run, window="all"))}
    assert "ops-too-small-to-split" not in found
    assert found["python-bound"].evidence["python_share"] == 0.5


def _pipeline(parallel: bool) -> Run:
    """The main thread waits in IteratorGetNext 0-90 ms; two tf.data threads run the map's ops
    side by side (0-90 each) or one after the other (0-45, 45-90)."""
    spans = [(0, 90), (0, 90)] if parallel else [(0, 45), (45, 90)]
    rows: list[EventRow] = [
        (0, "IteratorGetNextOp::DoCompute", ANNOTATION, 0, 90, None, None),
        *((1 + k, "MatMul:MatMul", OP, s, e, None, None) for k, (s, e) in enumerate(spans)),
    ]
    return _run([MAIN, DATA, DATA, INTRA, INTRA], rows)


@pytest.mark.parametrize("parallel", [True, False])
def test_input_pipeline_says_the_measured_parallelism(parallel: bool):
    run = _pipeline(parallel)
    (found,) = input_pipeline(run, analyze(run, window="all"))
    assert found.evidence["waiting_for_input_share"] == 0.9
    if parallel:
        assert found.evidence["tf_data_parallelism"] == 2.0
        assert "2.00 threads at a time while it worked (its map runs in parallel)" in found.message
        assert "one element at a time" not in found.message
    else:
        assert found.evidence["tf_data_parallelism"] == 1.0
        assert "1.00 threads at a time while it worked (its map runs one element at a time)" in (
            found.message
        )
        assert "num_parallel_calls=tf.data.AUTOTUNE" in found.action


def test_one_elements_ops_on_two_threads_are_still_one_element():
    """A sequential map whose function runs two independent ops of each element on two tf.data
    threads: busy threads say 1.5 at a time, the executor runs (by run id) say 1.0."""
    rows: list[EventRow] = [(0, "IteratorGetNextOp::DoCompute", ANNOTATION, 0, 80, None, None)]
    for k in range(4):  # element k: 20k to 20k + 20 ms, run id 50 + k
        s, run_id = 20 * k, 50 + k
        rows += [
            (1, "ExecutorState::Process", EXECUTOR, s, s + 20, None, run_id),
            (1, "MatMul:MatMul", OP, s, s + 20, None, None),
            (2, "ExecutorState::Process", EXECUTOR, s, s + 10, None, run_id),
            (2, "Cast:Cast", OP, s, s + 10, None, None),
        ]
    rows.append((0, "marker", ANNOTATION, 99, 100, None, None))
    events = events_table((th, n, kd, s * MS, e * MS, p, c) for th, n, kd, s, e, p, c in rows)
    executor = (events["name"] == "ExecutorState::Process").to_numpy()
    events["ct"] = pd.array([2 if x else None for x in executor], dtype="Int64")
    threads = threads_table([MAIN, DATA, DATA, INTRA, INTRA], 100 * MS)
    run = make_run(threads, events, manifest=TWO_CORES)
    analysis = analyze(run, window="all")
    assert parallelism_while_busy(analysis, DATA) == 1.5
    (found,) = input_pipeline(run, analysis)
    assert found.evidence["tf_data_parallelism"] == 1.0
    assert found.evidence["parallelism_from"] == "function runs in flight"
    assert "1.00 elements at a time while it worked (its map runs one element at a time)" in (
        found.message
    )


HAND_BUILT = {
    "hand_built_run": hand_built_run,
    "two chains": lambda: _run(
        [MAIN, INTER, INTER, INTRA, INTRA], _chain(1, 3, 100) + _chain(2, 4, 200)
    ),
    "inline chain": _inline_chain,
    "parallel map": lambda: _pipeline(True),
    "sequential map": lambda: _pipeline(False),
}


@pytest.mark.parametrize("name", HAND_BUILT)
def test_every_share_is_of_the_window_and_at_most_one(name: str):
    """Every rule on every hand-built run: each share in its evidence lies in [0, 1] (diagnose
    checks it too), and each percentage its message prints is at most 100 %."""
    run = HAND_BUILT[name]()
    analysis = analyze(run, window="all")
    for rule in RULES:
        for f in rule(run, analysis):
            assert check_shares(f) is f
            percents = [float(p) for p in re.findall(r"(-?\d+(?:\.\d+)?)\s*%", f.message)]
            assert all(0 <= p <= 100 for p in percents), f.message


def test_a_share_above_one_is_refused():
    bad = Finding("x", Severity.HIGH, None, "150% of the time", "a", {"top_ops_share": 1.5})
    with pytest.raises(ValueError, match=r"top_ops_share = 1\.5 is not a share"):
        check_shares(bad)


def test_the_cause_comes_first_and_the_consequence_says_so():
    small = Finding("ops-too-small-to-split", Severity.HIGH, "intra-op", "small", "split", {})
    python = Finding("python-bound", Severity.MEDIUM, None, "python", "vectorise", {})
    spin = Finding("eigen-spin", Severity.LOW, "intra-op", "spin", "fewer", {})
    ordered = with_causes([small, spin, python])
    assert [f.id for f in ordered] == ["python-bound", "eigen-spin", "ops-too-small-to-split"]
    assert ordered[2].consequence_of == ("python-bound",)
    assert ordered[2].to_json()["consequence_of"] == ["python-bound"]
    assert ordered[0].consequence_of == () and ordered[1].consequence_of == ()
    assert with_causes([small])[0].consequence_of == ()  # alone, it stands on its own
    analysis = replace(analyze(hand_built_run(), window="all"), findings=tuple(ordered))
    assert "(a consequence of python-bound: act on that first)" in render_text(analysis)
    assert "a consequence of python-bound" in finding_html(ordered[2])
