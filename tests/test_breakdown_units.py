"""Breakdown and pool figures on a hand-built run whose answers are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.concurrency import concurrency_series, pool_concurrency
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.regions import pair_regions
from tftrace.analysis.model.run import Origin, Run
from tftrace.analysis.model.schema import EVENTS, PYTHON, SAMPLES, THREADS, empty, validate

# threads: 0 main, 1 tf_Compute, 2 and 3 Eigen workers
POOLS = [Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP, Pool.INTRA_OP]
MS = 1_000_000


def threads() -> pd.DataFrame:
    df = empty(THREADS)
    n = len(POOLS)
    df = pd.DataFrame(
        {
            "thread": np.arange(n, dtype=np.int32),
            "tid": pd.array(range(100, 100 + n), dtype="Int64"),
            "os_name": pd.Categorical(["python"] * n),
            "line_id": pd.array(range(n), dtype="Int64"),
            "line_name": pd.Categorical([f"line{i}" for i in range(n)]),
            "tf_name": pd.Categorical([None] * n),
            "python_name": pd.Categorical([None] * n),
            "pool": pd.Categorical([p.value for p in POOLS], categories=[p.value for p in Pool]),
            "evidence": pd.Series(["by hand"] * n, dtype=object),
            "first_seen_ns": pd.array([0] * n, dtype="Int64"),
            "last_seen_ns": pd.array([100 * MS] * n, dtype="Int64"),
        }
    )
    return validate(df, THREADS)


def events(rows: list[tuple[int, str, str, int, int, int | None, int | None]]) -> pd.DataFrame:
    """(thread, name, kind, start ms, end ms, p, c)"""
    n = len(rows)
    op = [r[1].split(":") if r[2] == EventKind.OP.value else [None, None] for r in rows]
    df = pd.DataFrame(
        {
            "thread": np.array([r[0] for r in rows], dtype=np.int32),
            "name": pd.Categorical([r[1] for r in rows]),
            "op_name": pd.Categorical([o[0] for o in op]),
            "op_type": pd.Categorical([o[1] for o in op]),
            "kind": pd.Categorical([r[2] for r in rows], categories=[k.value for k in EventKind]),
            "start_ns": np.array([r[3] * MS for r in rows], dtype=np.int64),
            "end_ns": np.array([r[4] * MS for r in rows], dtype=np.int64),
            "p": pd.array([r[5] for r in rows], dtype="Int64"),
            "c": pd.array([r[6] for r in rows], dtype="Int64"),
            "pt": pd.array([None] * n, dtype="Int64"),
            "ct": pd.array([None] * n, dtype="Int64"),
        }
    )
    return validate(df, EVENTS)


def hand_built_run() -> Run:
    """0-10 ms: main thread in Python (on CPU); 10-20: eager dispatch; 20-60: an op on
    tf_Compute, whose Eigen work (two closures) runs 30-50 on both workers, the second closure
    queued from 30 to 40; 60-70: the main thread in Python again; 70-100: nothing."""
    op, call = EventKind.OP.value, EventKind.CALL.value
    rec, start, stop = (
        EventKind.RECORD.value,
        EventKind.REGION_START.value,
        EventKind.REGION_STOP.value,
    )
    ev = events(
        [
            (0, "EagerExecute", call, 10, 20, None, None),
            (1, "MatMul:_MklMatMul", op, 20, 60, None, None),
            (1, "ThreadpoolListener::Record", rec, 30, 30, 7, None),
            (1, "ThreadpoolListener::Record", rec, 30, 30, 8, None),
            (2, "ThreadpoolListener::StartRegion", start, 30, 30, None, 7),
            (2, "ThreadpoolListener::StopRegion", stop, 50, 50, None, None),
            (3, "ThreadpoolListener::StartRegion", start, 40, 40, None, 8),
            (3, "ThreadpoolListener::StopRegion", stop, 50, 50, None, None),
            (0, "tf.constant", EventKind.ANNOTATION.value, 99, 100, None, None),
        ]
    )
    # The main thread's CPU counter, sampled every 10 ms: on a CPU during 0-10 and 60-70.
    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    cpu = np.array([0, 10, 10, 10, 10, 10, 10, 20, 20, 20, 20], dtype=np.int64) * MS
    samples = pd.DataFrame(
        {
            "thread": np.zeros(len(t), dtype=np.int32),
            "tid": np.full(len(t), 100, dtype=np.int64),
            "t_ns": t,
            "state": pd.Categorical(["R"] * len(t)),
            "cpu_ns": cpu,
            "wait_ns": np.zeros(len(t), dtype=np.int64),
            "utime": np.zeros(len(t), dtype=np.int64),
            "stime": np.zeros(len(t), dtype=np.int64),
            "slices": np.zeros(len(t), dtype=np.int64),
            "cpu": np.zeros(len(t), dtype=np.int32),
        }
    )
    manifest = {
        "host": {"cpu_affinity": [0, 1]},
        "pools": {"intra_op": {"size": 2}, "inter_op": {"size": 1}},
    }
    return Run(
        Path("."),
        None,
        manifest,
        Origin(0, 0),
        threads(),
        ev,
        pair_regions(ev),
        validate(samples, SAMPLES),
        empty(PYTHON),
    )


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
