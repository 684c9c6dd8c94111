"""Breakdown and pool figures on a hand-built run (``builders.hand_built_run``) whose answers
are worked out by hand."""

from __future__ import annotations

from builders import MS, hand_built_run
from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.concurrency import concurrency_series, pool_concurrency
from tftrace.analysis.model.pools import Pool


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
