"""Facts about the machine, the interpreter and the settings that size TF's pools."""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from tftrace.analysis.model.vocabulary import POOL_ENV_VARS as POOL_ENV_VARS  # re-exported

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


CGROUP_ROOT = Path("/sys/fs/cgroup")


def cpu_quota(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT
) -> float | None:
    """CPUs allowed by a cgroup quota (docker --cpus), or None when unlimited.

    The tightest quota of this process's cgroup and its ancestors, cgroup v2 (``cpu.max``)
    or v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``). TF ignores quotas when it sizes
    its pools, which is why they are worth knowing.
    """
    quotas = _cgroup_limits(proc_cgroup, root, "cpu", _v2_quota, _v1_quota, ("cpu,cpuacct",))
    return min(quotas) if quotas else None


def memory_headroom(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT
) -> int | None:
    """Bytes this process's cgroup may still take (limit - usage, the tightest of it and its
    ancestors; v2 ``memory.max``/``memory.current`` or v1 ``memory.limit_in_bytes``/
    ``memory.usage_in_bytes``), or None when unlimited."""
    room = _cgroup_limits(proc_cgroup, root, "memory", _v2_memory_room, _v1_memory_room)
    return int(min(room)) if room else None


def _cgroup_limits(
    proc_cgroup: Path,
    root: Path,
    controller: str,
    v2: Callable[[Path], float | None],
    v1: Callable[[Path], float | None],
    v1_mounts: tuple[str, ...] = (),
) -> list[float]:
    """Every limit ``v2`` or ``v1`` reads in this process's cgroups of ``controller`` and
    their ancestors."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return []
    limits: list[float] = []
    for line in lines:
        hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        if hierarchy == "0" and not controllers:
            for base in (root, root / "unified"):
                limits += _quotas_up(base, path, v2)
        elif controller in controllers.split(","):
            mounts = (controllers, controller, *v1_mounts)
            for base in dict.fromkeys(root / m for m in mounts):
                limits += _quotas_up(base, path, v1)
    return limits


def _quotas_up(base: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    found = []
    here = base / path.strip("/")
    while True:
        quota = read(here)
        if quota is not None:
            found.append(quota)
        if here == base or base not in here.parents:
            return found
        here = here.parent


def _v2_quota(directory: Path) -> float | None:
    try:
        quota, period = (directory / "cpu.max").read_text().split()
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def _v2_memory_room(directory: Path) -> float | None:
    try:
        limit = (directory / "memory.max").read_text().strip()
        used = int((directory / "memory.current").read_text())
    except (OSError, ValueError):
        return None
    return None if limit == "max" else max(int(limit) - used, 0)


V1_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def _v1_integers(directory: Path, *names: str) -> list[int] | None:
    """The integer in each of the files ``names`` (cgroup v1 keeps one value per file); None
    when one is missing or not an integer."""
    try:
        return [int((directory / name).read_text()) for name in names]
    except (OSError, ValueError):
        return None


def _v1_memory_room(directory: Path) -> float | None:
    values = _v1_integers(directory, "memory.limit_in_bytes", "memory.usage_in_bytes")
    if values is None:
        return None
    limit, used = values
    return None if limit >= V1_UNLIMITED else max(limit - used, 0)


def _v1_quota(directory: Path) -> float | None:
    values = _v1_integers(directory, "cpu.cfs_quota_us", "cpu.cfs_period_us")
    if values is None:
        return None
    quota, period = values
    return quota / period if quota > 0 and period > 0 else None


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
