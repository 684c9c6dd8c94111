"""A process's cgroups, v1 and v2: its CPU quota, its memory headroom, and the ``cpu.stat``
that counts its throttling.

``/proc/<pid>/cgroup`` names the process's cgroup in each hierarchy: ``0::/path`` for v2
(mounted at the cgroup root, or at ``unified/`` under it beside v1 controllers) and
``N:cpu,cpuacct:/path`` for v1 (mounted at ``<root>/<controllers>``, often also linked as
``<root>/cpu``). A limit set on an ancestor binds its descendants, so limits are looked for
from the process's own cgroup up to the hierarchy's root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def cpu_quota(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT
) -> float | None:
    """CPUs allowed by a cgroup quota (docker --cpus), or None when unlimited.

    The tightest quota of this process's cgroup and its ancestors, cgroup v2 (``cpu.max``)
    or v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``). TF ignores quotas when it sizes
    its pools, which is why they are worth knowing.
    """
    quotas = [
        quota
        for version, base, path in _hierarchies(proc_cgroup, root, "cpu", ("cpu,cpuacct",))
        for quota, _ in _found_up(base, path, _v2_quota if version == 2 else _v1_quota)
    ]
    return min(quotas) if quotas else None


def memory_headroom(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT
) -> int | None:
    """Bytes this process's cgroup may still take (limit - usage, the tightest of it and its
    ancestors; v2 ``memory.max``/``memory.current`` or v1 ``memory.limit_in_bytes``/
    ``memory.usage_in_bytes``), or None when unlimited."""
    room = [
        value
        for version, base, path in _hierarchies(proc_cgroup, root, "memory")
        for value, _ in _found_up(base, path, _v2_memory_room if version == 2 else _v1_memory_room)
    ]
    return int(min(room)) if room else None


@dataclass(frozen=True)
class CpuCgroup:
    """The cgroup whose CPU counters speak for a process (``cpu_cgroup``)."""

    version: int  # 1 or 2
    directory: Path
    stat: Path  # cpu.stat: periods, throttled periods and time (v2: usage too)
    usage: Path | None  # v1 cpuacct.usage (ns); None for v2, or where absent
    quota: float | None  # the CPUs its quota allows; None when unlimited


def cpu_cgroup(proc_cgroup: Path, root: Path = CGROUP_ROOT) -> CpuCgroup | None:
    """The cgroup whose ``cpu.stat`` tells how the process was throttled: of its own cgroup
    and their ancestors, the one whose quota binds (the tightest; a quota throttles the
    cgroup it is set on, and the counters are that cgroup's), else its own. Read in the
    hierarchy that holds the cpu controller: v1 where it is mounted there (a controller
    lives in one hierarchy only), else v2. None when no ``cpu.stat`` is found."""
    v1 = list(_hierarchies(proc_cgroup, root, "cpu", ("cpu,cpuacct",), versions=(1,)))
    for version, base, path in (*v1, *_hierarchies(proc_cgroup, root, "cpu", versions=(2,))):
        # The deepest that exists: in a container without a cgroup namespace, the path is
        # the host's and the mount's root is the container's own cgroup.
        leaf = next((d for _, d in _found_up(base, path, _has_cpu_stat)), None)
        if leaf is None:
            continue
        quotas = _found_up(base, path, _v2_quota if version == 2 else _v1_quota)
        quota, directory = min(quotas, key=lambda q: q[0]) if quotas else (None, leaf)
        usage = None
        if version == 1:
            relative = directory.relative_to(base)
            for acct_base, _ in _mounts(proc_cgroup, root, "cpuacct", ("cpu,cpuacct",)):
                if (acct_base / relative / "cpuacct.usage").is_file():
                    usage = acct_base / relative / "cpuacct.usage"
                    break
        return CpuCgroup(version, directory, directory / "cpu.stat", usage, quota)
    return None


# cpu.stat's keys for (periods, throttled periods, throttled time, usage) and the ns in one
# unit of each: v2 counts in microseconds, v1 in ns (its usage is in cpuacct.usage).
CPU_STAT_KEYS = {
    2: ((b"nr_periods", 1), (b"nr_throttled", 1), (b"throttled_usec", 1000), (b"usage_usec", 1000)),
    1: ((b"nr_periods", 1), (b"nr_throttled", 1), (b"throttled_time", 1), (b"", 1)),
}


def parse_cpu_stat(text: bytes, version: int, usage: bytes | None = None) -> tuple[int, ...]:
    """(periods, throttled periods, throttled ns, usage ns) from a cgroup's ``cpu.stat``
    (and, for v1, ``cpuacct.usage``); -1 where a count is not there (v2 without the cpu
    controller enabled has usage alone)."""
    values = dict(line.split(b" ", 1) for line in text.splitlines() if b" " in line)
    out = []
    for key, scale in CPU_STAT_KEYS[version]:
        raw = values.get(key) if key else usage
        try:
            out.append(int(raw) * scale if raw is not None else -1)
        except ValueError:
            out.append(-1)
    return tuple(out)


def _hierarchies(
    proc_cgroup: Path,
    root: Path,
    controller: str,
    v1_mounts: tuple[str, ...] = (),
    versions: tuple[int, ...] = (1, 2),
) -> Iterator[tuple[int, Path, str]]:
    """(version, mount, path of the process's cgroup in it) for each place the process's
    cgroup of ``controller`` may be mounted."""
    if 2 in versions:
        for line in _lines(proc_cgroup):
            hierarchy, controllers, path = line
            if hierarchy == "0" and not controllers:
                for base in (root, root / "unified"):
                    yield 2, base, path
    if 1 in versions:
        for base, path in _mounts(proc_cgroup, root, controller, v1_mounts):
            yield 1, base, path


def _mounts(
    proc_cgroup: Path, root: Path, controller: str, also: tuple[str, ...]
) -> Iterator[tuple[Path, str]]:
    """(mount, path) of the v1 hierarchy that holds ``controller``, under each name it may be
    mounted by (its controllers joined, the controller alone, the names in ``also``)."""
    for hierarchy, controllers, path in _lines(proc_cgroup):
        if hierarchy != "0" and controller in controllers.split(","):
            for name in dict.fromkeys((controllers, controller, *also)):
                yield root / name, path


def _lines(proc_cgroup: Path) -> list[tuple[str, str, str]]:
    try:
        text = proc_cgroup.read_text()
    except OSError:
        return []
    lines = []
    for line in text.splitlines():
        hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        lines.append((hierarchy, controllers, path))
    return lines


def _found_up(
    base: Path, path: str, read: Callable[[Path], float | None]
) -> list[tuple[float, Path]]:
    """(value, directory) of every directory from the cgroup up to ``base`` where ``read``
    finds a value."""
    found = []
    here = base / path.strip("/")
    while True:
        value = read(here)
        if value is not None:
            found.append((value, here))
        if here == base or base not in here.parents:
            return found
        here = here.parent


def _has_cpu_stat(directory: Path) -> float | None:
    return 1.0 if (directory / "cpu.stat").is_file() else None


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
