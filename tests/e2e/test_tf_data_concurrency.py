"""The tf.data pool's concurrency follows the map's num_parallel_calls (a known answer).

What the trace shows on tf.data threads (TF 2.21, measured with this workload):

- The map function runs on ``tf_data_private_threadpool`` threads (two of them on 2 cores,
  whatever num_parallel_calls is): each call is a thread-pool closure (StartRegion /
  StopRegion), inside it ``ExecutorState::Process`` (kind executor) and the function's op
  events ``add:AddV2``, ``MatMul:_MklMatMul``, ``MatMul_1:...``, ``Sum:Sum`` (kind op),
  then ``ExecutorDoneCallback`` in a closure of its own.
- One ``tf_data_iterator_resource`` thread is the map's runner: ``ParallelMapProduce``
  (kind tf.data), ``InstantiatedCapturedFunction::RunAsync`` and ``FunctionRun`` (kind
  other), short: it only schedules the calls.
- The consumer's ``IteratorGetNext`` / ``Iterator::Root`` events are on the Python main
  thread, not in the tf.data pool.

So busy.py's definition (regions and op events on worker threads) captures the map's
work: the tf.data pool is busy while a call runs. A prefetch stage's thread (a second
``tf_data_iterator_resource``) sits inside ``PrefetchProduce`` /
``Iterator::Root::Prefetch::ParallelMapV2`` (kind tf.data) while it waits for the map's
next element; those events are not busy (counting them read about 2.0 for one map call at
a time with prefetch(4)), which the calls=1+prefetch case checks. One thing can still add
to "calls in flight":

- A call's closure ends after its ``ExecutorDoneCallback``; on a loaded machine that tail
  can be preempted while the next call already runs on the other thread. Seen with
  TF_NUM_INTRAOP_THREADS=1 and 0.8 ms elements under outside load (1.5 for one call at a
  time); with the intra-op pool doing the products (intra = 2, as here) the tails stayed
  short in every run.
"""

from __future__ import annotations

import os

import pytest

from conftest import WORKLOADS, quiet_env
from tftrace.analysis.metrics.concurrency import pool_concurrency
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run, load

pytestmark = pytest.mark.slow

ELEMENTS, PRODUCTS = 200, 3  # as in the workload


def pipeline_window(run: Run) -> tuple[int, int]:
    """The consumer loop: the workload's "pipeline" annotation."""
    ev = run.events
    (row,) = ev[ev["name"].astype(str) == "pipeline"].itertuples()
    return int(row.start_ns), int(row.end_ns)


@pytest.mark.parametrize(
    ("calls", "stages"),
    [
        pytest.param("1", (), id="calls=1"),
        pytest.param("2", (), id="calls=2"),
        pytest.param("autotune", (), id="autotune"),
        pytest.param(
            "1",
            ("prefetch",),
            id="calls=1+prefetch",
        ),
    ],
)
def test_tf_data_pool_concurrency_follows_num_parallel_calls(
    record, calls: str, stages: tuple[str, ...]
):
    if calls == "autotune" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("AUTOTUNE runs one call at a time on one core")
    env = quiet_env(TF_NUM_INTRAOP_THREADS="2")
    done = record(
        WORKLOADS / "data_map_parallel.py", calls, *stages, env=env, options=("--no-pyspy",)
    )
    assert done.returncode == 0, done.stderr
    run = load(done.run)
    window = pipeline_window(run)

    # The map function's products all ran on tf.data threads, as op events: the work the
    # tf.data pool's busy time is made of.
    ev = run.events.merge(run.threads[["thread", "pool"]], on="thread")
    products = ev[
        (ev["kind"] == EventKind.OP.value) & ev["op_name"].astype(str).str.startswith("MatMul")
    ]
    assert len(products) == ELEMENTS * PRODUCTS
    assert set(products["pool"]) == {Pool.TF_DATA.value}

    data = pool_concurrency(run, Pool.TF_DATA, window)
    if calls == "1":
        # One call at a time, and always one: the map is the bottleneck (~4 ms an element
        # against well under 1 ms for the consumer).
        assert 0.85 <= data.mean <= 1.15, data.histogram()
    else:
        # Two calls in flight (AUTOTUNE picks the number of cores here): on 2 cores the
        # pool is busy with both nearly all the time.
        assert data.mean >= 1.5, data.histogram()
