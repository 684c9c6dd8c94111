"""Which pool a thread is in, from its TF name or its identity."""

from __future__ import annotations

import pytest

from tftrace.analysis.model.pools import Pool, pool_of_identity, pool_of_tf_name


@pytest.mark.parametrize(
    ("name", "pool"),
    [
        ("tf_Compute", Pool.INTER_OP),
        ("tf_numa_-1_Eigen", Pool.INTRA_OP),
        ("tf_numa_0_Eigen", Pool.INTRA_OP),
        ("tf_data_private_threadpool", Pool.TF_DATA),
        ("tf_graph_runner", Pool.TF_OTHER),
    ],
)
def test_pool_of_tf_name(name, pool):
    assert pool_of_tf_name(name) is pool


@pytest.mark.parametrize(
    ("thread", "pool"),
    [
        ({"tf_name": "tf_numa_-1_Eigen", "python_name": None}, Pool.INTRA_OP),
        ({"python_name": "MainThread"}, Pool.PYTHON_MAIN),
        ({"python_name": "Thread-1 (work)"}, Pool.PYTHON_OTHER),
        ({"python_name": "tftrace-identity"}, Pool.PROFILER),
        ({"comm": "grpc_global_tim"}, Pool.PROFILER),
        ({"start_object": "libscipy_openblas64_-32a4b2a6.so"}, Pool.BLAS_OPENMP),
        ({"start_object": "libgomp.so.1"}, Pool.BLAS_OPENMP),
        ({"start_object": "libgrpc.so"}, Pool.PROFILER),
        ({"start_object": "libfoo.so"}, Pool.OTHER),
        ({"start_object": "libpython3.11.so.1.0"}, Pool.PYTHON_OTHER),
        ({}, Pool.UNMAPPED),
    ],
)
def test_pool_of_identity(thread, pool):
    assert pool_of_identity(thread)[0] is pool
