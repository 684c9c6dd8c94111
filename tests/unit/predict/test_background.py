"""What else held the cores beside the replayed threads, and the Python a thread ran, by the
kernel's count: measured from the OS sampler, taken off the cores the pools share."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from builders import MS, cpu_samples_table, sharded_step, stepped_run, two_closures_step
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict.background import Background, background, left_to, spin_budget
from tftrace.analysis.predict.items import thread_items
from tftrace.analysis.predict.replay import replay
from tftrace.analysis.predict.step_work import HOST, WAITS, step_works

MAIN, INTER, EIGEN, BLAS = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP, Pool.BLAS_OPENMP
ONE_STEP = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [21 * MS]})


def test_what_others_hold_is_theirs_and_the_spin_grows_with_the_pool():
    held = Background(threads=0.25, processes=0.5, spin=0.25)
    assert held.recorded == pytest.approx(1.0)
    assert held.at(1, 2) == pytest.approx(0.75)  # no Eigen workers, no spin
    assert held.at(4, 2) == pytest.approx(1.25)
    assert left_to(2, 1.0) == pytest.approx(1.0)
    assert left_to(2, 5.0) == pytest.approx(0.2)  # a floor: the recording still ran


def test_two_closures_side_by_side_gain_nothing_on_the_one_core_others_leave():
    """At inter-op 1, B waits for A's thread (21 ms); at inter-op 2 they run side by side on 2
    cores (11 ms), but on the one core a neighbour leaves they share it: about 21 ms again."""
    run = stepped_run([MAIN, INTER], two_closures_step, steps=1)
    items = thread_items(run, 0, 21 * MS, 0, 2)
    (work,) = step_works(items, ONE_STEP, 0)
    alone = replay(work, 1, 2, 2, 1).span_ns
    beside = replay(work, 1, 2, 2, 1, background=1.0).span_ns
    turns = replay(work, 1, 1, 2, 1).span_ns
    assert alone == pytest.approx(11 * MS, rel=0.02)
    assert beside == pytest.approx(turns, rel=0.02)


def _sampled(run, thread, cpu_rate, wait_rate, end_ms):
    t = np.arange(0, end_ms + 1, dtype=np.int64) * MS
    table = cpu_samples_table(thread, 100 + thread, t, (t * cpu_rate).astype(np.int64))
    table["wait_ns"] = (t * wait_rate).astype(np.int64)
    return table


def test_a_threads_python_keeps_its_blocked_time_and_shares_the_cores_for_its_cpu():
    """A main thread whose step is 0.5 ms of Python, a 20 ms call, 9.5 ms of Python: on a
    CPU half its Python time and in the run queue a quarter (the sampler reads it every half
    millisecond). Its first 0.5 ms keeps the blocked and on-CPU part (0.375 ms), two thirds
    of it on a CPU."""

    def step(k, t0):
        call, *rows = two_closures_step(k, t0)
        return [(*call[:3], t0 + 0.5, t0 + 20.5, *call[5:]), *rows]

    run = stepped_run([MAIN, INTER], step, steps=1)
    t = np.arange(0, 61, dtype=np.int64) * MS // 2
    python = (t[1:] <= MS // 2) | (t[:-1] >= 41 * MS // 2)  # each interval outside the call
    busy = np.r_[0, np.cumsum(np.diff(t) * python)]
    table = cpu_samples_table(0, 100, t, busy // 2)
    table["wait_ns"] = busy // 4
    run = dataclasses.replace(run, samples=table)
    items = thread_items(run, 0, 30 * MS, 0, 2)
    assert items.shares_of(0, 22 * MS, 30 * MS) == pytest.approx((0.5, 0.25))
    assert items.shares_of(0, 5 * MS, 15 * MS) == (0.0, 0.0)  # inside its call: blocked
    assert items.shares_of(1, 0, 10 * MS) == (0.0, 0.0)  # not sampled
    one = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [30 * MS]})
    (work,) = step_works(items, one, 0)
    first = work.units[0].segments[0]
    assert (first.kind, first.why) == (WAITS, HOST)
    assert first.ns == pytest.approx(0.375 * MS)
    assert first.load == pytest.approx(2 / 3)


def test_the_background_counts_other_threads_and_the_workers_spin():
    """A BLAS thread on a CPU half the time; an Eigen worker on a CPU throughout, inside its
    regions 10 ms of every 30: it spun the other 20."""
    run = stepped_run([MAIN, INTER, EIGEN, EIGEN, BLAS], sharded_step, steps=3, intra=2)
    samples = pd.concat(
        [_sampled(run, 4, 0.5, 0.0, 90), _sampled(run, 2, 1.0, 0.0, 90)], ignore_index=True
    )
    run = dataclasses.replace(run, samples=samples)
    held = background(run, 0, 90 * MS, (0,))
    assert held.threads == pytest.approx(0.5, rel=0.02)
    assert held.spin == pytest.approx(2 / 3, rel=0.05)
    # it spun through both of its 20 ms gaps: the replay spins it that long (at least)
    assert held.spin_budget_ns == pytest.approx(20 * MS)
    assert held.at(2, 2) == pytest.approx(held.threads)  # its spin is the replay's, not held
    assert held.processes == 0  # no machine readings
    assert background(stepped_run([MAIN, INTER], two_closures_step), 0, 90 * MS, (0,)) == (
        Background()
    )


def test_a_worker_spins_the_budget_its_cpu_outside_its_regions_allows():
    gaps = np.array([10, 20, 40, 0]) * MS
    # 30 ms of spin over gaps of 10, 20 and 40: 10 of each
    assert spin_budget(gaps, 30 * MS) == pytest.approx(10 * MS)
    # 50: all of the first, 20 of the others
    assert spin_budget(gaps, 50 * MS) == pytest.approx(20 * MS)
    # spun through every gap (or more: untraced work): the longest gap
    assert spin_budget(gaps, 90 * MS) == pytest.approx(40 * MS)
    assert spin_budget(gaps, 0) == 0
    assert spin_budget(np.zeros(0), 30 * MS) == 0


def test_a_blas_pool_goes_with_the_python_that_calls_it():
    """The BLAS thread used 45 ms of CPU over 90 ms; the threads ran Python for 60 ms of it:
    0.75 of a core beside each, the 0.5 core it averaged goes with the Python, none is held
    apart. At most its threads' number: beside 30 ms of Python, one core, and the 15 ms more
    it used stay held apart (1/6 of a core over the span)."""
    run = stepped_run([MAIN, INTER, EIGEN, EIGEN, BLAS], sharded_step, steps=3, intra=2)
    run = dataclasses.replace(run, samples=_sampled(run, 4, 0.5, 0.0, 90))
    held = background(run, 0, 90 * MS, (0,), python_ns=60 * MS)
    assert held.beside_python == pytest.approx(0.75, rel=0.02)
    assert held.with_python == pytest.approx(0.5, rel=0.02)
    assert held.at(2, 2) == pytest.approx(0.0, abs=0.02)
    assert held.recorded == pytest.approx(0.5, rel=0.02)  # the recording had it all the same
    short = background(run, 0, 90 * MS, (0,), python_ns=30 * MS)
    assert short.beside_python == pytest.approx(1.0)
    assert short.at(2, 2) == pytest.approx(0.5 - 1 / 3, rel=0.05)
    assert background(run, 0, 90 * MS, (0,)).beside_python == 0.0  # no Python: held apart
