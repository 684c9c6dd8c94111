"""Each thread's items on hand-built runs: outermost ops, an op's serial, hand-off and
parallel parts from its shards, Python and waits kept apart, closures with their Record."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from builders import (
    MS,
    cpu_samples_table,
    half_covered_step,
    py_function_step,
    sharded_step,
    stepped_run,
    two_closures_step,
)
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.predict.items import PYTHON, WAIT, WORK, outermost, thread_items

MAIN, INTER, EIGEN = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP


def test_outermost_keeps_what_no_earlier_interval_of_its_thread_holds():
    thread = np.array([0, 0, 0, 1, 0])
    start = np.array([0, 2, 10, 3, 10])
    end = np.array([10, 5, 12, 4, 11])
    assert outermost(thread, start, end).tolist() == [True, False, True, True, False]


def test_an_op_with_two_shards_on_two_cores_shared_by_three_threads():
    """The op (1-11 ms) and both shards (1-11) keep three threads busy on 2 cores: each had
    2/3 of a core. Parallel work: 2 shards x 10 x 2/3 and the caller's 10 x 2/3 = 20 ms; no
    serial part, no hand-off (the shards started as they were scheduled)."""
    run = stepped_run([MAIN, INTER, EIGEN, EIGEN], sharded_step, steps=1, intra=2)
    items = thread_items(run, 0, 12 * MS, 0, 2)
    (op,) = items.items[items.items["what"] == WORK].itertuples()
    assert (op.thread, op.start_ns, op.end_ns, op.shards) == (1, 1 * MS, 11 * MS, 2)
    assert op.parallel == pytest.approx(20 * MS)
    assert op.serial == pytest.approx(0, abs=1)
    assert op.handoff == 0
    (wait,) = items.items[items.items["what"] == WAIT].itertuples()
    assert (wait.thread, wait.start_ns, wait.end_ns) == (0, 0, 12 * MS)  # the call: a wait
    assert items.closures[["thread", "start_ns", "scheduled_by"]].values.tolist() == [
        [1, int(0.5 * MS), 0]
    ]


def test_ops_without_shards_are_serial_and_python_is_apart():
    run = stepped_run([MAIN, INTER], two_closures_step, steps=1)
    items = thread_items(run, 0, 21 * MS, 0, 2).items
    work = items[items["what"] == WORK]
    assert work["serial"].tolist() == pytest.approx([9.8 * MS, 9.9 * MS])
    assert work["parallel"].tolist() == [0, 0] and work["shards"].tolist() == [0, 0]
    run = stepped_run([MAIN, INTER], py_function_step, steps=1)
    items = thread_items(run, 0, 20 * MS, 0, 2).items
    assert items["what"].tolist() == [WAIT, PYTHON]


def test_the_callers_share_of_a_core_comes_from_the_os_sampler():
    """Eleven steps of the sharded op (110 ms covered by shards): the sampler shows its
    thread idle throughout, so it waited beside its workers; the two workers alone were busy
    on 2 cores, each with a whole one: 20 ms of work, none the caller's."""
    run = stepped_run([MAIN, INTER, EIGEN, EIGEN], sharded_step, steps=12, intra=2)
    t = np.arange(0, 361, 1, dtype=np.int64) * MS
    idle = dataclasses.replace(run, samples=cpu_samples_table(1, 101, t, np.zeros_like(t)))
    items = thread_items(idle, 30 * MS, 360 * MS, 0, 2)
    assert (items.caller_share, items.caller_measured) == (0.0, True)
    work = items.items[items.items["what"] == WORK]
    assert work["parallel"].tolist() == pytest.approx([20 * MS] * 11)
    # without samples the caller is taken as working a whole core: 3 threads on 2 cores
    assert thread_items(run, 30 * MS, 360 * MS, 0, 2).caller_measured is False
    # busy throughout by the sampler: a whole core
    busy = dataclasses.replace(run, samples=cpu_samples_table(1, 101, t, t))
    assert thread_items(busy, 30 * MS, 360 * MS, 0, 2).caller_share == pytest.approx(1.0)
    # too little time covered to say: 1 step, 10 ms
    few = thread_items(idle, 30 * MS, 60 * MS, 0, 2)
    assert (few.caller_share, few.caller_measured) == (1.0, False)
    # ... unless measured over a wider span (a server's window around its replayed stretch):
    # the stretch's items, their callers' share from all 11 steps' 110 ms
    wider = thread_items(idle, 30 * MS, 60 * MS, 0, 2, callers_over=(30 * MS, 360 * MS))
    assert (wider.caller_share, wider.caller_measured) == (0.0, True)
    assert len(wider.items[wider.items["what"] == WORK]) == 1  # the stretch's op alone
    assert wider.items[wider.items["what"] == WORK]["parallel"].tolist() == pytest.approx([20 * MS])


def on_cpu_while_busy(run: Run, step_ms: int, busy_ms: tuple[float, float], rate: float) -> Run:
    """``run`` with OS samples of its thread 1 every ms: on a CPU ``rate`` of each ms inside
    ``busy_ms`` of every step of ``step_ms`` (its closure), off it outside."""
    t = np.arange(0, step_ms * 12 + 1, 1, dtype=np.int64) * MS
    phase = t % (step_ms * MS)
    busy = (phase >= busy_ms[0] * MS) & (phase < busy_ms[1] * MS)
    cpu = np.r_[0, np.cumsum(np.where(busy[:-1], rate * MS, 0))].astype(np.int64)
    return dataclasses.replace(run, samples=cpu_samples_table(1, 101, t, cpu))


def test_an_op_not_split_is_its_threads_cpu_by_the_kernels_count():
    """The inter-op thread (busy 0.5-20.5 ms of each step) on a CPU 60 % of its busy time,
    by the OS sampler: each op is its time at that rate, not an even share of the cores
    (one busy thread on 2 cores: all of its time)."""
    run = stepped_run([MAIN, INTER], two_closures_step, steps=3)
    sampled = on_cpu_while_busy(run, 21, (0.5, 20.5), 0.6)
    work = thread_items(sampled, 21 * MS, 42 * MS, 0, 2).items
    work = work[work["what"] == WORK]
    assert work["serial"].tolist() == pytest.approx([0.6 * 9.8 * MS, 0.6 * 9.9 * MS], rel=0.02)


def test_a_split_ops_uncovered_time_off_a_cpu_is_the_pools_cost():
    """The op (1-11 ms) had shards only until 6 ms. The sampler shows its thread on a CPU
    for 40 % of its busy time: of the 5 ms no shard covered, 2 ms are serial work and 3 ms
    the thread waited on the pool, which joins the hand-off (paid only where the op splits).
    Without samples all 5 ms stay serial."""
    run = stepped_run([MAIN, INTER, EIGEN, EIGEN], half_covered_step, steps=12, intra=2)
    plain = thread_items(run, 30 * MS, 360 * MS, 0, 2).items
    assert plain.loc[plain["what"] == WORK, "serial"].tolist() == pytest.approx([5 * MS] * 11)
    sampled = on_cpu_while_busy(run, 30, (0.5, 11.5), 0.4)
    work = thread_items(sampled, 30 * MS, 360 * MS, 0, 2).items
    work = work[work["what"] == WORK]
    assert work["serial"].tolist() == pytest.approx([2 * MS] * 11, rel=0.02)
    assert work["handoff"].tolist() == pytest.approx([3 * MS] * 11, rel=0.02)
