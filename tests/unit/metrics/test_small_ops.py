"""Ops too small to split, one measure (metrics/small_ops.py) for the headline's cause and the
ops-too-small-to-split rule: which op types count, the instants they ran with cores free, and
the same figures in both on hand-built runs whose answers are worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from builders import MS, EventRow, events_table, hand_built_run, make_run, threads_table
from tftrace.analysis.analyze import Analysis, analyze
from tftrace.analysis.findings.finding import Finding
from tftrace.analysis.findings.pool_rules import SMALL_OPS_ACTION, ops_too_small_to_split
from tftrace.analysis.metrics.small_ops import small_op_types
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

OP, ANNOTATION = EventKind.OP.value, EventKind.ANNOTATION.value
RECORD, START, STOP = (
    EventKind.RECORD.value,
    EventKind.REGION_START.value,
    EventKind.REGION_STOP.value,
)
MAIN, INTER, INTRA, DATA = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP, Pool.TF_DATA
TWO_CORES = {
    "host": {"cpu_affinity": [0, 1]},
    "pools": {"intra_op": {"size": 2}, "inter_op": {"size": 2}},
}


def _run(pools: list[Pool], rows: list[EventRow], manifest: dict | None = None) -> Run:
    """Rows in ms; a main-thread annotation at 99-100 ms makes the window 0-100 ms. A bare
    trace's busy cores (no OS sampler): idle core-time is the cores less the threads at work."""
    rows = [*rows, (0, "marker", ANNOTATION, 99, 100, None, None)]
    return make_run(
        threads_table(pools, 100 * MS),
        events_table((th, n, k, s * MS, e * MS, p, c) for th, n, k, s, e, p, c in rows),
        manifest=TWO_CORES if manifest is None else manifest,
    )


def _closure(thread: int, at: int, until: int, flow: int) -> list[EventRow]:
    """A closure ``thread`` runs from ``at`` to ``until`` (its own Record: thread-pool events)."""
    return [
        (thread, "ThreadpoolListener::Record", RECORD, at, at, flow, None),
        (thread, "ThreadpoolListener::StartRegion", START, at, at, None, flow),
        (thread, "ThreadpoolListener::StopRegion", STOP, until, until, None, None),
    ]


def _ops(thread: int, op: str, start: int, count: int, ms: int = 10) -> list[EventRow]:
    """``count`` ops ``op`` ("Name:Type") of ``ms`` back to back on ``thread`` from ``start``."""
    return [
        (thread, op, OP, start + ms * i, start + ms * (i + 1), None, None) for i in range(count)
    ]


def _inline_chain(op: str = "MatMul:MatMul") -> Run:
    """Six 10 ms ops 0-60 ms inline on an inter-op thread (in the closure the executor ran
    there), no Eigen work: one thread at work of 2 cores, a core free 60 % of the window."""
    return _run([MAIN, INTER, INTRA, INTRA], _closure(1, 0, 60, 1) + _ops(1, op, 0, 6))


def _core_s(analysis: Analysis, cause: str) -> float:
    assert analysis.core_use is not None and analysis.core_use.causes is not None
    return float(analysis.core_use.causes.set_index("cause").loc[cause, "core_s"])


def _rule(run: Run, analysis: Analysis) -> Finding | None:
    found = ops_too_small_to_split(run, analysis)
    return found[0] if found else None


def test_op_kinds_that_are_never_too_small_to_split():
    """Waits (every tf.function half, IteratorGetNext), Python run as an op and bookkeeping
    are left out whatever parallelism they show; a type Eigen split (>= 1.2) is not small."""
    kinds = [
        "__inference_step_1",
        "__forward_step_2",
        "__backward_step_3",
        "IteratorGetNext",
        "EagerPyFunc",
        "PyFunc",
        "ReadVariableOp",
        "Const",
        "MatMul",
        "Conv2D",
    ]
    types = pd.DataFrame(
        {
            "op_type": kinds,
            "count": 1,
            "total_ms": 1.0,
            "parallelism": [0.0] * 9 + [1.5],
        }
    )
    assert small_op_types(types)["op_type"].tolist() == ["MatMul"]


def test_an_inline_chain_is_one_figure_in_the_headline_and_the_rule():
    """0-60 ms one small op at a time on one of 2 cores: the headline gives 60 ms x 1 idle core
    to "ops too small to split"; the rule says 60 % of the window and the same 0.06 core-s."""
    run = _inline_chain()
    analysis = analyze(run, window="all")
    small = analysis.core_use.small_ops
    assert small is not None and small.ns == 60 * MS
    assert _core_s(analysis, "too_small") == pytest.approx(0.060)
    assert _core_s(analysis, "chain") == 0.0
    found = _rule(run, analysis)
    assert found is not None
    assert found.evidence["cores_free_share"] == 0.6
    assert found.evidence["idle_core_s"] == pytest.approx(_core_s(analysis, "too_small"))
    assert analysis.core_use.main_cause() == "too_small"


def test_the_headline_and_the_rule_agree_with_the_os_sampler():
    """The hand-built run: a small op (0.75 workers) alone 20-30 and 50-60 ms of the 10-100 ms
    window: the rule's 22 % and the headline's 0.04 core-s (the kernel's idle cores there)."""
    run = hand_built_run()
    analysis = analyze(run)
    found = _rule(run, analysis)
    assert found is not None
    assert found.evidence["cores_free_share"] == pytest.approx(20 / 90, abs=1e-4)
    assert found.evidence["idle_core_s"] == pytest.approx(_core_s(analysis, "too_small"))
    assert _core_s(analysis, "too_small") == pytest.approx(0.040)


def test_one_action_for_the_headline_and_the_rule():
    """The inline chain: underused-cores names "ops too small to split" as the main cause and
    gives the rule's own action."""
    run = _inline_chain()
    found = {f.id: f for f in analyze(run, window="all").findings}
    assert found["ops-too-small-to-split"].action == SMALL_OPS_ACTION
    assert "ops too small to split" in found["underused-cores"].message
    assert found["underused-cores"].action == SMALL_OPS_ACTION


def test_two_chains_side_by_side_are_too_small_in_neither():
    """Two chains of small ops, each op with one Eigen worker, on 2 cores: every core at work
    by the trace, so no instant is too small to split (the old headline said so of any two
    threads in ops at once); what idle core-time there is goes to the chain."""
    rows: list[EventRow] = []
    for thread, worker, flow in ((1, 3, 100), (2, 4, 200)):
        rows += _ops(thread, "MatMul:MatMul", 0, 9)
        for i in range(9):
            s = 10 * i
            rows += [
                (thread, "ThreadpoolListener::Record", RECORD, s, s, flow + i, None),
                (worker, "ThreadpoolListener::StartRegion", START, s, s, None, flow + i),
                (worker, "ThreadpoolListener::StopRegion", STOP, s + 10, s + 10, None, None),
            ]
    run = _run([MAIN, INTER, INTER, INTRA, INTRA], rows)
    analysis = analyze(run, window="all")
    assert analysis.core_use.small_ops is not None
    assert analysis.core_use.small_ops.ns == 0
    assert _core_s(analysis, "too_small") == 0.0
    assert _rule(run, analysis) is None


def test_small_ops_while_the_main_thread_waits_for_input_are_input():
    """A tf.data thread runs small ops 0-60 ms while the main thread waits in IteratorGetNext
    0-90: the headline's input waits come first, so neither says "too small to split" (a
    sequential map's intra 1 ran 9 % slower: the input pipeline is the cause)."""
    rows: list[EventRow] = [
        (0, "IteratorGetNextOp::DoCompute", ANNOTATION, 0, 90, None, None),
        *_closure(1, 0, 60, 1),
        *_ops(1, "MatMul:MatMul", 0, 6),
    ]
    run = _run([MAIN, DATA, INTRA, INTRA], rows)
    analysis = analyze(run, window="all")
    small = analysis.core_use.small_ops
    assert small is not None and small.free.integral_at(small.free.times[-1:])[0] == 60 * MS
    assert small.ns == 0 and _core_s(analysis, "too_small") == 0.0
    assert _core_s(analysis, "input") > 0
    assert _rule(run, analysis) is None


def test_bookkeeping_ops_are_not_too_small():
    """The inline chain of Identity ops: nothing to split, so a chain, not too small."""
    run = _inline_chain("Identity:Identity")
    analysis = analyze(run, window="all")
    assert analysis.core_use.small_ops.types.empty
    assert _core_s(analysis, "too_small") == 0.0
    assert _core_s(analysis, "chain") == pytest.approx(0.060)
    assert _rule(run, analysis) is None


@pytest.mark.parametrize(
    "manifest",
    [
        {"host": {"cpu_affinity": [0, 1]}, "pools": {"intra_op": {"size": 1}}},  # nothing to split
        {"host": {"cpu_affinity": [0]}, "pools": {"intra_op": {"size": 2}}},  # one core
    ],
)
def test_no_pool_or_no_cores_to_split_into(manifest: dict):
    run = _run(
        [MAIN, INTER, INTRA, INTRA],
        _closure(1, 0, 60, 1) + _ops(1, "MatMul:MatMul", 0, 6),
        manifest,
    )
    analysis = analyze(run, window="all")
    assert analysis.core_use.small_ops is None
    if analysis.core_use.causes is not None:
        assert _core_s(analysis, "too_small") == 0.0
    assert _rule(run, analysis) is None


def test_without_thread_pool_events_neither_says_too_small():
    """The inline chain without its closure's events (TF <= 2.16): the Eigen workers' work is
    invisible, so no verdict on splitting; the headline gives the time to the chain."""
    run = _run([MAIN, INTER, INTRA, INTRA], _ops(1, "MatMul:MatMul", 0, 6))
    analysis = analyze(run, window="all")
    assert analysis.core_use.small_ops is None
    assert _core_s(analysis, "too_small") == 0.0
    assert _core_s(analysis, "chain") == pytest.approx(0.060)
    assert _rule(run, analysis) is None
