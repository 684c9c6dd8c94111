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

# Environment variables that change how many threads TF, OpenMP or BLAS start.
RELEVANT_ENV_PREFIXES = ("TF_", "OMP_", "KMP_", "OPENBLAS_", "MKL_", "GOTO_", "BLIS_")

# Prefixes that match but belong to other tools (Terraform's TF_CLI_*, TF_VAR_*, TF_LOG).
UNRELATED_ENV_PREFIXES = ("TF_CLI_", "TF_VAR_", "TF_LOG", "TF_INPUT", "TF_WORKSPACE", "TF_DATA_DIR")


def relevant_env(env: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ) if env is None else env
    return {
        k: v
        for k, v in sorted(env.items())
        if k.startswith(RELEVANT_ENV_PREFIXES) and not k.startswith(UNRELATED_ENV_PREFIXES)
    }


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
