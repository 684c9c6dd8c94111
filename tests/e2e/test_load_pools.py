"""Known answers for thread -> pool: pool sizes set by construction, fresh process each."""

from __future__ import annotations

import os

import pytest

from conftest import WORKLOADS, quiet_env
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import load

pytestmark = pytest.mark.slow
CPUS = len(os.sched_getaffinity(0))


@pytest.mark.parametrize("inter", [1, 2])
@pytest.mark.parametrize("intra", [1, 2, 3])
def test_loader_finds_each_pool_exactly(record, intra: int, inter: int):
    env = quiet_env(TF_NUM_INTRAOP_THREADS=str(intra), TF_NUM_INTEROP_THREADS=str(inter))
    done = record(WORKLOADS / "pool_matrix.py", env=env)
    assert done.returncode == 0, done.stderr
    run = load(done.run)
    threads = run.threads
    os_side = threads[threads["tid"].notna()]
    trace_side = threads[threads["line_id"].notna()]

    def count(frame, pool: Pool) -> int:
        return int((frame["pool"] == pool.value).sum())

    assert count(os_side, Pool.INTRA_OP) == intra
    assert count(os_side, Pool.INTER_OP) == inter
    # With intra = 1 the one Eigen worker never runs: ops run inline on their caller.
    assert count(trace_side, Pool.INTRA_OP) == (intra if intra > 1 else 0)
    assert count(trace_side, Pool.INTER_OP) == inter
    assert count(os_side, Pool.BLAS_OPENMP) == CPUS - 1  # OpenBLAS: one worker per extra CPU
    assert count(os_side, Pool.PYTHON_MAIN) == 1
    side = threads[threads["python_name"] == "side-worker"]
    assert side["pool"].tolist() == [Pool.PYTHON_OTHER.value]
    assert count(os_side, Pool.UNMAPPED) == 0, threads[threads["pool"] == "unmapped"]
    # Every trace line belongs to an OS thread of the workload.
    assert trace_side["tid"].notna().all(), trace_side
