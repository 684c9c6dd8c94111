"""Facts about the machine, the interpreter and the settings that size TF's pools."""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from importlib import metadata
from typing import Any

from tftrace.analysis.model.vocabulary import POOL_ENV_VARS as POOL_ENV_VARS  # re-exported

from .cgroup import cpu_quota
from .cgroup import memory_headroom as memory_headroom  # re-exported

# The environment variables a manifest records (``manifest.json``'s ``env``; the endpoint of
# ``tftrace.serve`` too): those that change how many threads TensorFlow, OpenMP or a BLAS
# start, where they run, or what the kernels compute. Names, never prefixes: ``TF_`` is
# Terraform's too (TF_TOKEN_<host>, TF_HTTP_PASSWORD), and a prefix would record its secrets.
# docs/analyses.md ("The recorded environment") lists them: add a name there with one here.
RECORDED_ENV_VARS = frozenset(
    {
        # TensorFlow: its pools, its kernels (oneDNN, XLA), determinism and its own logging
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
        "TF_OVERRIDE_GLOBAL_THREADPOOL",
        "TF_ENABLE_ONEDNN_OPTS",
        "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS",
        "TF_DISABLE_MKL",
        "TF_XLA_FLAGS",
        "XLA_FLAGS",
        "TF_GPU_THREAD_MODE",
        "TF_GPU_THREAD_COUNT",
        "TF_DETERMINISTIC_OPS",
        "TF_CUDNN_DETERMINISTIC",
        "TF_ENABLE_AUTO_MIXED_PRECISION",
        "TF_DATA_EXPERIMENT_OPT_IN",
        "TF_DATA_EXPERIMENT_OPT_OUT",
        "TF_CPP_MIN_LOG_LEVEL",
        "TF_CPP_MAX_VLOG_LEVEL",
        "CUDA_VISIBLE_DEVICES",
        # oneDNN itself
        "ONEDNN_MAX_CPU_ISA",
        "DNNL_MAX_CPU_ISA",
        "ONEDNN_DEFAULT_FPMATH_MODE",
        # OpenMP (GNU, Intel/LLVM)
        "OMP_NUM_THREADS",
        "OMP_DYNAMIC",
        "OMP_PROC_BIND",
        "OMP_PLACES",
        "OMP_WAIT_POLICY",
        "OMP_THREAD_LIMIT",
        "OMP_MAX_ACTIVE_LEVELS",
        "OMP_NESTED",
        "OMP_SCHEDULE",
        "OMP_STACKSIZE",
        "GOMP_CPU_AFFINITY",
        "GOMP_SPINCOUNT",
        "KMP_AFFINITY",
        "KMP_BLOCKTIME",
        "KMP_HW_SUBSET",
        "KMP_LIBRARY",
        "KMP_SETTINGS",
        # BLAS and the other libraries' pools
        "OPENBLAS_NUM_THREADS",
        "OPENBLAS_CORETYPE",
        "GOTO_NUM_THREADS",
        "MKL_NUM_THREADS",
        "MKL_DOMAIN_NUM_THREADS",
        "MKL_DYNAMIC",
        "MKL_THREADING_LAYER",
        "MKL_CBWR",
        "MKL_ENABLE_INSTRUCTIONS",
        "BLIS_NUM_THREADS",
        "FLEXIBLAS_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "NUMEXPR_MAX_THREADS",
    }
)


def relevant_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of ``env`` (default: this process's) that ``RECORDED_ENV_VARS`` names,
    sorted by name."""
    env = dict(os.environ) if env is None else env
    return {k: v for k, v in sorted(env.items()) if k in RECORDED_ENV_VARS}


def clock_anchor() -> dict[str, int]:
    """Read the clocks back to back so every source can be put on one axis.

    Sampler and child timestamps are CLOCK_MONOTONIC; the TF trace is in wall-clock
    ns since the epoch; /proc thread start times are in CLOCK_BOOTTIME ticks.
    """
    mono = time.monotonic_ns()
    wall = time.time_ns()
    boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    mono2 = time.monotonic_ns()
    return {
        "wall_ns": wall,
        "monotonic_ns": (mono + mono2) // 2,
        "boottime_ns": boot,
        "uncertainty_ns": mono2 - mono,
    }


def distribution_version(*names: str) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def host_facts() -> dict[str, Any]:
    affinity = sorted(os.sched_getaffinity(0))
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "cpu_quota": cpu_quota(),
        "clock_ticks_per_second": os.sysconf("SC_CLK_TCK"),
        "cpu_model": cpu_model(),
    }


def cpu_model() -> str | None:
    """The CPU's model name as /proc/cpuinfo gives it (None where it does not): two runs on
    different CPUs differ in per-core speed, which ``tftrace diff`` must be able to say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip() or None
    except OSError:
        return None
    return None


def file_digest(path: str) -> str | None:
    """sha256 of a workload script (None where it cannot be read): two runs of one script
    whose text changed are two workloads to ``tftrace diff``."""
    import hashlib

    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def resolve_pool_size(
    configured: int, env_value: str | None, affinity_count: int
) -> dict[str, Any]:
    """The size TF gives a pool, following TF's own precedence.

    A non-zero config setting wins, then the environment variable, then one
    thread per schedulable CPU (TF reads sched_getaffinity, not cgroup quotas).
    """
    if configured > 0:
        return {"size": configured, "source": "config"}
    if env_value is not None:
        try:
            value = int(env_value)
        except ValueError:
            value = 0
        if value > 0:
            return {"size": value, "source": "env"}
    return {"size": affinity_count, "source": "default (schedulable CPUs)"}
