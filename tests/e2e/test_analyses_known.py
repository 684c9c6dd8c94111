"""Analyses against known answers: workloads whose parallelism is set by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import NEEDS_QUIET_CORES, WORKLOADS, quiet_env, skip_unless_cores_deliver
from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.concurrency import pool_concurrency
from tftrace.analysis.metrics.cpu_time import thread_cpu
from tftrace.analysis.metrics.ops import op_table
from tftrace.analysis.metrics.queue_delay import queue_delays
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run, load
from tftrace.analysis.model.vocabulary import ONEDNN_ENV

pytestmark = pytest.mark.slow


def recorded(record, workload: str, intra: int, inter: int) -> Run:
    env = quiet_env(TF_NUM_INTRAOP_THREADS=str(intra), TF_NUM_INTEROP_THREADS=str(inter))
    done = record(WORKLOADS / workload, env=env, options=("--no-pyspy",))
    assert done.returncode == 0, done.stderr
    run = load(done.run)
    forced = env.get(ONEDNN_ENV)  # TF_ENABLE_ONEDNN_OPTS=0/1 on pytest's command line
    onednn = run.manifest.workload.onednn
    assert onednn is not None and onednn.env == forced
    if forced in ("0", "1"):
        assert onednn.enabled is (forced == "1")  # it reached the workload, and TF obeyed
    return run


def op_window(
    run: Run, name_part: str, measured: int, op_type: str | None = None
) -> tuple[int, int]:
    """From the first to the last of the ``measured`` last events whose name holds
    ``name_part`` (and of ``op_type``, the same with oneDNN on and off): the measured ops,
    after the warm-up (whose first call may be slow)."""
    ev = run.events
    if op_type is not None:
        ev = ev[ev["op_type"] == op_type]
    ops = ev[ev["name"].astype(str).str.contains(name_part, regex=False)]
    ops = ops.sort_values("start_ns").tail(measured)
    return int(ops["start_ns"].min()), int(ops["end_ns"].max())


def mean_during(run: Run, pool: Pool, intervals: pd.DataFrame) -> float:
    """The pool's mean concurrency over the given intervals only (not the gaps between)."""
    busy = sum(
        pool_concurrency(run, pool, (int(r.start_ns), int(r.end_ns))).busy_thread_ns
        for r in intervals.itertuples()
    )
    return busy / float((intervals["end_ns"] - intervals["start_ns"]).sum())


@NEEDS_QUIET_CORES
@pytest.mark.parametrize("intra", [1, 2])
def test_eager_matmul_intra_concurrency_and_cpu(record, intra: int):
    run = recorded(record, "eager_big_matmul.py", intra=intra, inter=2)
    window = op_window(run, "EagerLocalExecute: MatMul", measured=3)
    cpu = thread_cpu(run, window)
    ops = op_table(run)
    products = ops[ops["op_type"] == "MatMul"].sort_values("start_ns")
    assert len(products) == 4  # the warm-up and the three measured products
    products = products.tail(3)
    eigen = pool_concurrency(run, Pool.INTRA_OP, window)
    if intra == 1:
        assert (products["parallelism"] == 0).all()  # reported as inline: no worker helped
        # One Eigen thread exists but never runs: the product runs inline on the caller.
        assert eigen.threads == 1 and eigen.busy_thread_ns == 0
        assert mean_during(run, Pool.PYTHON_MAIN, products) == pytest.approx(1.0, abs=0.1)
        caller = cpu[cpu["pool"] == Pool.PYTHON_MAIN.value]
        assert caller["cpu_ns"].sum() == pytest.approx(window[1] - window[0], rel=0.1)
    else:
        skip_unless_cores_deliver("two workers' concurrency")
        assert mean_during(run, Pool.INTRA_OP, products) == pytest.approx(2.0, rel=0.1)
        # Each product kept both workers busy, by the closures it scheduled (flow ids).
        assert products["parallelism"].to_numpy() == pytest.approx([2.0] * 3, rel=0.15)
        workers = cpu[cpu["pool"] == Pool.INTRA_OP.value]
        on_cpu, waiting = workers["cpu_ns"].sum(), workers["wait_ns"].sum()
        busy = workers["busy_ns"].sum()
        # By the kernel's count, a busy worker is on a CPU or runnable, waiting for one ...
        assert on_cpu + waiting == pytest.approx(busy, rel=0.1)
        if waiting < 0.05 * busy:  # ... and on a machine with nothing else to run, on a CPU.
            assert on_cpu == pytest.approx(busy, rel=0.1)


@NEEDS_QUIET_CORES
@pytest.mark.parametrize("inter", [1, 2])
def test_independent_branches_inter_op_concurrency(record, inter: int):
    run = recorded(record, "two_big_branches.py", intra=1, inter=inter)
    window = op_window(run, ":", measured=6, op_type="MatMul")  # two per measured call
    compute = pool_concurrency(run, Pool.INTER_OP, window)
    if inter == 2:
        # During each call (its first product's start to its last product's end; the gaps
        # between calls are the main thread dispatching), both branches run side by side.
        ev = run.events
        products = ev[ev["op_type"] == "MatMul"]  # _MklMatMul with oneDNN on
        products = products.sort_values("start_ns").tail(6)
        calls = pd.DataFrame(
            {
                "start_ns": products["start_ns"].to_numpy().reshape(3, 2).min(axis=1),
                "end_ns": products["end_ns"].to_numpy().reshape(3, 2).max(axis=1),
            }
        )
        # The median call: on a shared 2-core machine a neighbour may slow one branch of one
        # call, which then ends alone; the other calls still show the two side by side.
        per_call = [mean_during(run, Pool.INTER_OP, calls.iloc[[i]]) for i in range(len(calls))]
        assert float(np.median(per_call)) >= 1.8, per_call
        assert compute.peak == 2
    else:
        # Never two at once; the gaps are the main thread dispatching the next call.
        assert compute.peak == 1 and 0.5 < compute.mean <= 1.0
        # In each measured call the second product waits in the queue for as long as the
        # first one runs (the products are the inter-op closures that hold a MatMul: other
        # closures may last over 5 ms too, as with oneDNN off).
        q = queue_delays(run)
        q = q[q["pool"] == Pool.INTER_OP.value]
        matmuls = run.events[run.events["op_type"] == "MatMul"]
        holds = [
            (
                (matmuls["thread"] == r.thread) & matmuls["start_ns"].between(r.start_ns, r.end_ns)
            ).any()
            for r in q.itertuples()
        ]
        products = q[holds].sort_values("start_ns").tail(6)
        assert len(products) == 6
        for first, second in zip(
            products.iloc[0::2].itertuples(), products.iloc[1::2].itertuples(), strict=True
        ):
            assert second.start_ns >= first.end_ns  # one after the other
            assert second.queue_ns == pytest.approx(first.end_ns - first.start_ns, rel=0.1)


def test_more_eigen_threads_than_cores_wait_for_a_core(record):
    cores = len(__import__("os").sched_getaffinity(0))
    run = recorded(record, "eager_big_matmul.py", intra=2 * cores, inter=1)
    window = op_window(run, "EagerLocalExecute: MatMul", measured=3)
    cpu = thread_cpu(run, window)
    workers = cpu[cpu["pool"] == Pool.INTRA_OP.value]
    assert len(workers) == 2 * cores
    # Twice as many busy workers as cores: each runnable about half the time it is busy.
    assert workers["wait_ns"].sum() > 0.3 * workers["cpu_ns"].sum()
    assert np.isfinite(workers["wait_ns"]).all()


@pytest.mark.parametrize(("intra", "inter"), [(1, 1), (2, 2)])
def test_py_function_time_is_python_whatever_the_settings(record, intra: int, inter: int):
    run = recorded(record, "py_function_loop.py", intra=intra, inter=inter)
    steps = find_steps(run)
    assert steps.stats()["steps"] == 21  # one trace call + 20 measured calls
    steady = steps.table.iloc[1:]  # after tracing
    window = (int(steady["start_ns"].min()), int(steady["end_ns"].max()))
    shares = breakdown(run, window).set_index("category")["share"]
    assert shares["python / host"] >= 0.7, shares
    assert shares["intra-op parallel"] == 0


def test_steps_of_a_tf_function_loop(record):
    run = recorded(record, "two_big_branches.py", intra=1, inter=2)
    steps = find_steps(run)
    assert steps.source == "tf.function branches"  # TF's annotation of each call
    assert steps.stats()["steps"] == 4  # the tracing call and three measured calls
    measured = steps.table.iloc[1:]
    assert (measured["op, intra idle"] > 0.8).all()  # the products, on inter-op threads
