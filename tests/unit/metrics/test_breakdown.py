"""Breakdown and pool figures on a hand-built run (``builders.hand_built_run``) whose answers
are worked out by hand."""

from __future__ import annotations

import numpy as np

from builders import MS, hand_built_run
from conftest import SAMPLE_RUN
from tftrace.analysis.metrics.breakdown import breakdown, indicators, span_breakdowns
from tftrace.analysis.metrics.concurrency import concurrency_series, pool_concurrency
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import load


def test_breakdown_by_hand():
    shares = breakdown(hand_built_run(), (0, 100 * MS)).set_index("category")["ns"] / MS
    assert shares.to_dict() == {
        "intra-op parallel": 20,  # 30-50
        "op, intra idle": 20,  # 20-30 and 50-60
        "waiting for a thread": 0,  # 30-40 is queued, but Eigen work runs then
        "dispatch & executor": 10,  # 10-20
        "python / host": 20,  # 0-10 and 60-70 on a CPU
        "idle": 30,  # 70-100
    }


def test_pool_figures_by_hand():
    run = hand_built_run()
    eigen = pool_concurrency(run, Pool.INTRA_OP, (0, 100 * MS))
    assert eigen.busy_thread_ns == 30 * MS  # 20 + 10
    assert eigen.mean == 0.3 and eigen.peak == 2
    assert eigen.level_ns == (80 * MS, 10 * MS, 10 * MS)  # 1 busy: 30-40; 2 busy: 40-50
    assert eigen.utilisation == 30 / (2 * 100)
    assert eigen.core_class == "idle"  # 0.3 busy on average: under half a core
    compute = pool_concurrency(run, Pool.INTER_OP, (0, 100 * MS))
    assert compute.mean == 0.4 and compute.size_configured == 1
    series = concurrency_series(run, Pool.INTRA_OP, 25 * MS, (0, 100 * MS))
    assert series["busy_threads"].tolist() == [0.0, 30 / 25, 0.0, 0.0]  # 25-50: 20 + 10 ms


def test_queue_delay_by_hand():
    from tftrace.analysis.metrics.queue_delay import queue_delay_stats

    stats = queue_delay_stats(hand_built_run()).set_index("pool")
    assert stats.loc["intra-op", "closures"] == 2
    assert stats.loc["intra-op", "max_us"] == 10_000  # the second closure waited 30 -> 40 ms


def test_spans_by_hand_match_a_breakdown_of_each():
    run = hand_built_run()
    starts = np.array([0, 5, 25, 30, 65, 0]) * MS
    ends = np.array([100, 35, 45, 30, 100, 10]) * MS  # one empty span, one edge to edge
    got = span_breakdowns(run, starts, ends)
    assert got[1].tolist() == [5 * MS, 10 * MS, 0, 10 * MS, 5 * MS, 0]  # 5-35 by the cases above
    for row, s, e in zip(got, starts, ends, strict=True):
        assert row.sum() == e - s
        if e > s:
            assert row.tolist() == breakdown(run, (int(s), int(e)))["ns"].tolist()


def test_per_step_breakdown_equals_a_breakdown_per_step():
    """The steps' shares come from one timeline of the whole trace; the same figures as a
    breakdown computed over each step on its own, on a real trace."""
    run = load(SAMPLE_RUN)
    steps = find_steps(run).table
    assert len(steps) >= 3
    signals = indicators(run)
    for _, step in steps.iterrows():
        alone = breakdown(run, (int(step["start_ns"]), int(step["end_ns"])), signals)
        assert np.allclose(step[alone["category"]].to_numpy(float), alone["share"], atol=1e-12)
