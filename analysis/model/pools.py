"""Thread pools, and how a thread is assigned to one from the evidence recorded."""

from __future__ import annotations

import enum
from typing import Any

from tftrace.analysis.model.vocabulary import (
    GRPC_THREAD_PREFIX,
    is_inter_op_thread,
    is_intra_op_thread,
    is_profiler_thread,
    is_tf_data_thread,
)


class Pool(str, enum.Enum):
    INTER_OP = "inter-op"
    INTRA_OP = "intra-op"
    TF_DATA = "tf.data"
    TF_OTHER = "tf-other"
    PYTHON_MAIN = "python-main"
    PYTHON_OTHER = "python-other"
    BLAS_OPENMP = "blas/openmp"
    PROFILER = "grpc/profiler"  # tftrace's own helpers, TF's profiler and gRPC threads
    OTHER = "other"
    UNMAPPED = "unmapped"


_BLAS_OBJECTS = ("openblas", "libblas", "mkl", "libgomp", "libiomp", "libomp", "blis")


def pool_of_tf_name(name: str) -> Pool:
    """Pool of a thread from the name TF gave it (trace line name or thread descriptor)."""
    if is_inter_op_thread(name):
        return Pool.INTER_OP
    if is_intra_op_thread(name):
        return Pool.INTRA_OP
    if is_tf_data_thread(name):
        return Pool.TF_DATA
    if is_profiler_thread(name):
        return Pool.PROFILER
    return Pool.TF_OTHER


def pool_of_identity(thread: dict[str, Any]) -> tuple[Pool, str]:
    """(pool, evidence) for one OS thread of ``thread_identity.json``."""
    if thread.get("tf_name"):
        return pool_of_tf_name(thread["tf_name"]), f"TF thread name {thread['tf_name']!r}"
    python_name = thread.get("python_name")
    if python_name:
        if python_name.startswith("tftrace-"):
            return Pool.PROFILER, f"tftrace's own thread {python_name!r}"
        if python_name == "MainThread":
            return Pool.PYTHON_MAIN, "Python main thread"
        return Pool.PYTHON_OTHER, f"Python thread {python_name!r}"
    start_object = (thread.get("start_object") or "").lower()
    python_object = (thread.get("python_object") or "").lower()
    if start_object and (start_object == python_object or start_object.startswith("libpython")):
        return Pool.PYTHON_OTHER, f"started by Python's threading ({thread['start_object']})"
    if "grpc" in start_object or (thread.get("comm") or "").startswith(GRPC_THREAD_PREFIX):
        return Pool.PROFILER, f"gRPC thread ({thread.get('start_object') or thread.get('comm')})"
    if any(marker in start_object for marker in _BLAS_OBJECTS):
        return Pool.BLAS_OPENMP, f"started in {thread['start_object']}"
    if start_object:
        return Pool.OTHER, f"started in {thread['start_object']}"
    return Pool.UNMAPPED, "no descriptor found"
