"""Hand-made ``Run`` tables for unit tests: short rows in, schema-valid DataFrames out.

``hand_built_run`` is the one small run whose figures are worked out by hand (breakdown, pools,
queue delay, plot data); ``make_run`` puts any tables and manifest facts together into a Run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.regions import pair_regions
from tftrace.analysis.model.run import Origin, Run
from tftrace.analysis.model.schema import EVENTS, PYTHON, SAMPLES, THREADS, empty, validate
from tftrace.analysis.model.vocabulary import op_type_of_kernel
from tftrace.tracer.manifest_reader import Manifest

MS = 1_000_000

# (thread, name, kind, start ns, end ns, p, c): one trace event; an op's name is "Name:Type"
EventRow = tuple[int, str, str, int, int, int | None, int | None]


def threads_table(pools: Sequence[Pool], last_seen_ns: int) -> pd.DataFrame:
    """Thread k has OS tid 100 + k and trace line k, in ``pools[k]``, seen from 0 on."""
    n = len(pools)
    df = pd.DataFrame(
        {
            "thread": np.arange(n, dtype=np.int32),
            "tid": pd.array(range(100, 100 + n), dtype="Int64"),
            "os_name": pd.Categorical(["python"] * n),
            "line_id": pd.array(range(n), dtype="Int64"),
            "line_name": pd.Categorical([f"line{i}" for i in range(n)]),
            "tf_name": pd.Categorical([None] * n),
            "python_name": pd.Categorical([None] * n),
            "pool": pd.Categorical([p.value for p in pools], categories=[p.value for p in Pool]),
            "evidence": pd.Series(["by hand"] * n, dtype=object),
            "first_seen_ns": pd.array([0] * n, dtype="Int64"),
            "last_seen_ns": pd.array([last_seen_ns] * n, dtype="Int64"),
        }
    )
    return validate(df, THREADS)


def events_table(rows: Iterable[EventRow]) -> pd.DataFrame:
    """An events table, one ``EventRow`` per event; no flow types (pt, ct)."""
    rows = list(rows)
    n = len(rows)
    op = [r[1].split(":") if r[2] == EventKind.OP.value else [None, None] for r in rows]
    df = pd.DataFrame(
        {
            "thread": np.array([r[0] for r in rows], dtype=np.int32),
            "name": pd.Categorical([r[1] for r in rows]),
            "op_name": pd.Categorical([o[0] for o in op]),
            "op_type": pd.Categorical([o[1] and op_type_of_kernel(o[1]) for o in op]),
            "op_kernel": pd.Categorical([o[1] for o in op]),
            "kind": pd.Categorical([r[2] for r in rows], categories=[k.value for k in EventKind]),
            "start_ns": np.array([r[3] for r in rows], dtype=np.int64),
            "end_ns": np.array([r[4] for r in rows], dtype=np.int64),
            "p": pd.array([r[5] for r in rows], dtype="Int64"),
            "c": pd.array([r[6] for r in rows], dtype="Int64"),
            "pt": pd.array([None] * n, dtype="Int64"),
            "ct": pd.array([None] * n, dtype="Int64"),
            "step_num": pd.array([None] * n, dtype="Int64"),
        }
    )
    return validate(df, EVENTS)


def cpu_samples_table(thread: int, tid: int, t_ns: np.ndarray, cpu_ns: np.ndarray) -> pd.DataFrame:
    """One thread's OS samples: running ("R") at each ``t_ns`` with cumulative ``cpu_ns``."""
    n = len(t_ns)
    df = pd.DataFrame(
        {
            "thread": np.full(n, thread, dtype=np.int32),
            "tid": np.full(n, tid, dtype=np.int64),
            "t_ns": t_ns,
            "state": pd.Categorical(["R"] * n),
            "cpu_ns": cpu_ns,
            "wait_ns": np.zeros(n, dtype=np.int64),
            "utime": np.zeros(n, dtype=np.int64),
            "stime": np.zeros(n, dtype=np.int64),
            "slices": np.zeros(n, dtype=np.int64),
            "cpu": np.zeros(n, dtype=np.int32),
        }
    )
    return validate(df, SAMPLES)


def python_table(rows: Iterable[tuple[int, int, int, str]]) -> pd.DataFrame:
    """py-spy's intervals, one ``(thread, start ns, end ns, stack)`` per row; the stack is
    ``;``-separated ``"function (file:line)"`` frames, outermost first; tid = 100 + thread."""
    rows = list(rows)
    df = pd.DataFrame(
        {
            "thread": np.array([r[0] for r in rows], dtype=np.int32),
            "tid": np.array([100 + r[0] for r in rows], dtype=np.int64),
            "start_ns": np.array([r[1] for r in rows], dtype=np.int64),
            "end_ns": np.array([r[2] for r in rows], dtype=np.int64),
            "stack": pd.Categorical([r[3] for r in rows]),
            "leaf": pd.Categorical([r[3].split(";")[-1] for r in rows]),
        }
    )
    return validate(df, PYTHON)


def make_run(
    threads: pd.DataFrame | None = None,
    events: pd.DataFrame | None = None,
    *,
    samples: pd.DataFrame | None = None,
    python: pd.DataFrame | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> Run:
    """A Run of the given tables at origin 0: regions paired from the events, the other tables
    empty, and ``manifest`` read as manifest.json would be (None: a bare trace's)."""
    events = empty(EVENTS) if events is None else events
    return Run(
        Path("."),
        None,
        Manifest.from_json(manifest or {}),
        Origin(0, 0),
        empty(THREADS) if threads is None else threads,
        events,
        pair_regions(events),
        empty(SAMPLES) if samples is None else samples,
        empty(PYTHON) if python is None else python,
    )


def hand_built_run() -> Run:
    """0-10 ms: main thread in Python (on CPU); 10-20: eager dispatch; 20-60: an op on
    tf_Compute, whose Eigen work (two closures) runs 30-50 on both workers, the second closure
    queued from 30 to 40; 60-70: the main thread in Python again; 70-100: nothing.

    Threads: 0 main, 1 tf_Compute, 2 and 3 Eigen workers; 2 CPUs, intra-op 2, inter-op 1."""
    op, call = EventKind.OP.value, EventKind.CALL.value
    rec, start, stop = (
        EventKind.RECORD.value,
        EventKind.REGION_START.value,
        EventKind.REGION_STOP.value,
    )
    rows: list[EventRow] = [
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
    # The main thread's CPU counter, sampled every 10 ms: on a CPU during 0-10 and 60-70.
    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    cpu = np.array([0, 10, 10, 10, 10, 10, 10, 20, 20, 20, 20], dtype=np.int64) * MS
    return make_run(
        threads_table([Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP, Pool.INTRA_OP], 100 * MS),
        events_table((th, n, k, s * MS, e * MS, p, c) for th, n, k, s, e, p, c in rows),
        samples=cpu_samples_table(0, 100, t, cpu),
        manifest={
            "host": {"cpu_affinity": [0, 1]},
            "pools": {"intra_op": {"size": 2}, "inter_op": {"size": 1}},
        },
    )


# -- runs for the replay of tftrace predict (tests/unit/predict) --------------------------------

RECORD, START, STOP = (
    EventKind.RECORD.value,
    EventKind.REGION_START.value,
    EventKind.REGION_STOP.value,
)


def stepped_run(
    pools: Sequence[Pool],
    step: Any,
    *,
    steps: int = 3,
    period_ms: float = 30,
    intra: int = 1,
    inter: int = 1,
    cpus: int = 2,
) -> Run:
    """``steps`` steps, each the events ``step(k, t0)`` (ms from the step's start ``t0``,
    flow ids unique per ``k``) every ``period_ms``: the main thread (thread 0) inside the
    call of the tf.function ``step`` from 0 to the step's end; pools sized ``intra`` and
    ``inter`` on ``cpus`` CPUs."""
    rows: list[EventRow] = []
    for k in range(steps):
        t0 = k * period_ms
        rows += [
            (th, n, kd, round(s * MS), round(e * MS), p, c) for th, n, kd, s, e, p, c in step(k, t0)
        ]
    return make_run(
        threads_table(list(pools), round(steps * period_ms * MS)),
        events_table(sorted(rows, key=lambda r: (r[3], r[0]))),
        manifest={
            "host": {"cpu_affinity": list(range(cpus))},
            "pools": {"intra_op": {"size": intra}, "inter_op": {"size": inter}},
        },
    )


def call(t0: float, end: float) -> EventRow:
    """The main thread's call of the tf.function ``step`` (a wait op), t0..t0 + end ms."""
    name = "EagerLocalExecute: __inference_step_7"
    return (0, name, EventKind.CALL.value, t0, t0 + end, None, None)  # type: ignore[return-value]


def two_closures_step(k: int, t0: float) -> list[Any]:
    """The main thread schedules closure A at 0.5 ms; A (on thread 1) schedules closure B at
    0.6 and runs a 9.8 ms op until 10.5; B runs a 9.9 ms op from 10.6 to 20.5 (inter-op 1: it
    waited for A's thread); the call returns at 21 ms."""
    a, b = 100 + 10 * k, 101 + 10 * k
    op = EventKind.OP.value
    return [
        call(t0, 21),
        (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, a, None),
        (1, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, a),
        (1, "ThreadpoolListener::Record", RECORD, t0 + 0.6, t0 + 0.6, b, None),
        (1, "MatMul:MatMul", op, t0 + 0.7, t0 + 10.5, None, None),
        (1, "ThreadpoolListener::StopRegion", STOP, t0 + 10.5, t0 + 10.5, None, None),
        (1, "ThreadpoolListener::StartRegion", START, t0 + 10.6, t0 + 10.6, None, b),
        (1, "MatMul_1:MatMul", op, t0 + 10.6, t0 + 20.5, None, None),
        (1, "ThreadpoolListener::StopRegion", STOP, t0 + 20.5, t0 + 20.5, None, None),
    ]


def sharded_step(k: int, t0: float) -> list[Any]:
    """The main thread schedules closure A at 0.5 ms; A (thread 1) runs an op from 1 to 11 ms
    whose two shards (Records at 1 ms) run 1-11 on both Eigen workers (threads 2 and 3):
    three threads busy on 2 CPUs; A ends at 11.5, the call at 12."""
    a, s1, s2 = 100 + 10 * k, 101 + 10 * k, 102 + 10 * k
    return [
        call(t0, 12),
        (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, a, None),
        (1, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, a),
        (1, "MatMul:MatMul", EventKind.OP.value, t0 + 1, t0 + 11, None, None),
        (1, "ThreadpoolListener::Record", RECORD, t0 + 1, t0 + 1, s1, None),
        (1, "ThreadpoolListener::Record", RECORD, t0 + 1, t0 + 1, s2, None),
        (2, "ThreadpoolListener::StartRegion", START, t0 + 1, t0 + 1, None, s1),
        (2, "ThreadpoolListener::StopRegion", STOP, t0 + 11, t0 + 11, None, None),
        (3, "ThreadpoolListener::StartRegion", START, t0 + 1, t0 + 1, None, s2),
        (3, "ThreadpoolListener::StopRegion", STOP, t0 + 11, t0 + 11, None, None),
        (1, "ThreadpoolListener::StopRegion", STOP, t0 + 11.5, t0 + 11.5, None, None),
    ]


def half_covered_step(k: int, t0: float) -> list[Any]:
    """``sharded_step`` with its shards ending at 6 ms: the op's 6-11 ms is covered by none."""
    rows = sharded_step(k, t0)
    stop = [th in (2, 3) and n.endswith("StopRegion") for th, n, *_ in rows]
    return [(*r[:3], t0 + 6, t0 + 6, *r[5:]) if s else r for r, s in zip(rows, stop, strict=True)]


def py_function_step(k: int, t0: float) -> list[Any]:
    """The main thread schedules closure A at 0.5 ms; A (thread 1) runs a tf.py_function op
    from 1 to 19 ms; the call returns at 20."""
    a = 100 + 10 * k
    return [
        call(t0, 20),
        (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, a, None),
        (1, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, a),
        (1, "EagerPyFunc:EagerPyFunc", EventKind.OP.value, t0 + 1, t0 + 19, None, None),
        (1, "ThreadpoolListener::StopRegion", STOP, t0 + 19.5, t0 + 19.5, None, None),
    ]


def two_sharded_step(k: int, t0: float) -> list[Any]:
    """The main thread schedules closures A (thread 1) and B (thread 2) at 0.5 ms; each runs
    an op from 1 to 11 ms with one shard on its own Eigen worker (threads 3 and 4), 1-11: two
    ops split over the pool at once; the call returns at 12."""
    a, b, s1, s2 = 100 + 10 * k, 101 + 10 * k, 102 + 10 * k, 103 + 10 * k
    rows: list[Any] = [call(t0, 12)]
    for thread, closure, shard, worker in ((1, a, s1, 3), (2, b, s2, 4)):
        rows += [
            (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, closure, None),
            (thread, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, closure),
            (thread, f"MatMul_{thread}:MatMul", EventKind.OP.value, t0 + 1, t0 + 11, None, None),
            (thread, "ThreadpoolListener::Record", RECORD, t0 + 1, t0 + 1, shard, None),
            (worker, "ThreadpoolListener::StartRegion", START, t0 + 1, t0 + 1, None, shard),
            (worker, "ThreadpoolListener::StopRegion", STOP, t0 + 11, t0 + 11, None, None),
            (thread, "ThreadpoolListener::StopRegion", STOP, t0 + 11.5, t0 + 11.5, None, None),
        ]
    return rows


def one_closure_call(k: int, t0: float) -> list[Any]:
    """The main thread's call of ``step`` from 0 to 11 ms: it schedules closure A at 0.5 ms,
    which runs a 10 ms op on thread 1 until 10.5."""
    a = 100 + 10 * k
    return [
        call(t0, 11),
        (0, "ThreadpoolListener::Record", RECORD, t0 + 0.5, t0 + 0.5, a, None),
        (1, "ThreadpoolListener::StartRegion", START, t0 + 0.5, t0 + 0.5, None, a),
        (1, "MatMul:MatMul", EventKind.OP.value, t0 + 0.5, t0 + 10.5, None, None),
        (1, "ThreadpoolListener::StopRegion", STOP, t0 + 10.5, t0 + 10.5, None, None),
    ]


def served_run(calls: int = 10, period_ms: float = 16, offset_ms: float = 5) -> Run:
    """A server of two request threads, the main thread (0) and a Python thread (2), each
    calling ``step`` every ``period_ms`` (thread 2 ``offset_ms`` later), each call
    ``one_closure_call`` with its closure on its own inter-op thread (1 for thread 0's calls,
    3 for thread 2's): calls of the two threads in flight together; intra-op 1, inter-op 2,
    2 CPUs. At inter-op 1 the closures (10 ms each) take turns on one thread: 100 requests/s
    at most, against 125 recorded, and each thread's cycle is two closures (20 ms), its
    call 15 ms of it (its 5 ms gap kept)."""
    rows: list[EventRow] = []
    for k in range(calls):
        for caller, worker, shift in ((0, 1, 0.0), (2, 3, offset_ms)):
            moved = {0: caller, 1: worker}
            flows = 1000 * caller
            for th, n, kd, s, e, p, c in one_closure_call(k, k * period_ms + shift):
                rows.append(
                    (
                        moved[th],
                        n,
                        kd,
                        round(s * MS),
                        round(e * MS),
                        None if p is None else p + flows,
                        None if c is None else c + flows,
                    )
                )
    pools = [Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.PYTHON_OTHER, Pool.INTER_OP]
    return make_run(
        threads_table(pools, round((calls * period_ms + offset_ms) * MS)),
        events_table(sorted(rows, key=lambda r: (r[3], r[0]))),
        manifest={
            "host": {"cpu_affinity": [0, 1]},
            "pools": {"intra_op": {"size": 1}, "inter_op": {"size": 2}},
        },
    )
