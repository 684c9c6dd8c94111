"""The machine beside the workload, read by the OS sampler at a low rate (``--machine-hz``).

One reading holds: each CPU's time by kind (``/proc/stat``: user, nice, system, idle, iowait,
irq, softirq, steal), the other processes' CPU time (``process_reader.py``) and the
workload's cgroup CPU counters (periods, throttled periods, throttled time, usage: the
cgroup whose quota binds, ``cgroup.py``). All counters are cumulative, so a later step takes
the growth over any window. Rows are kept in memory and written at each of the sampler's
flushes as ``os_threads/machine-NNNNN.npz`` (three tables in one file, their columns named by
a prefix), beside ``os_threads/machine.json``: the processes written, their roles, and the
cgroup.

Every path is under ``root`` (``/`` on a live system), so tests give a fake /proc and /sys.
"""

from __future__ import annotations

import os
from array import array
from pathlib import Path
from typing import Any

from .cgroup import CpuCgroup, cpu_cgroup, parse_cpu_stat
from .process_reader import COLUMNS as PROCESS_COLUMNS
from .process_reader import ProcessReader
from .rundir import MACHINE_TABLE, write_json_atomic, write_npz_atomic

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
CPU_COLUMNS = ("cpu_t_ns", "cpu_id", *(f"cpu_{f}" for f in CPU_FIELDS))
CGROUP_COLUMNS = ("cg_t_ns", "cg_periods", "cg_throttled", "cg_throttled_ns", "cg_usage_ns")
COLUMNS = (*CPU_COLUMNS, *PROCESS_COLUMNS, *CGROUP_COLUMNS)
CHUNK = "machine-{:05d}.npz"
CHUNKS = "machine-*.npz"


def parse_cpu_lines(raw: bytes, whole: bool = True) -> list[tuple[int, ...]] | None:
    """(cpu, user, nice, system, idle, iowait, irq, softirq, steal) in clock ticks for each
    ``cpuN`` line of ``/proc/stat``. ``whole``: ``raw`` is the whole file; else its last line
    may be cut, and None says the CPU lines did not all fit (read more). guest time is left
    out: the kernel counts it in user (and nice) already."""
    lines = raw.split(b"\n")
    rows: list[tuple[int, ...]] = []
    for line in lines if whole else lines[:-1]:
        if not line.startswith(b"cpu"):
            return rows
        name, *values = line.split()
        if name != b"cpu":  # "cpu" alone: the sum over all CPUs
            counts = [*map(int, values[: len(CPU_FIELDS)])]
            rows.append((int(name[3:]), *counts, *[0] * (len(CPU_FIELDS) - len(counts))))
    return rows if whole else None


class MachineReader:
    """Reads the machine beside process ``workload_pid``; ``own_pid`` is the recording
    process (its own and its children's CPU are the recorder's)."""

    def __init__(
        self,
        workload_pid: int,
        root: Path = Path("/"),
        own_pid: int | None = None,
        native: bool = True,
    ) -> None:
        self.workload_pid = workload_pid
        self._clk_tck = os.sysconf("SC_CLK_TCK")
        proc = root / "proc"
        self._stat = os.open(proc / "stat", os.O_RDONLY)
        self._stat_size = 4096 + 128 * (os.cpu_count() or 1)
        self.cgroup: CpuCgroup | None = cpu_cgroup(
            proc / str(workload_pid) / "cgroup", root / "sys" / "fs" / "cgroup"
        )
        self._cgroup_files = self._open_cgroup()
        own = os.getpid() if own_pid is None else own_pid
        self.processes = ProcessReader(str(proc), workload_pid, own, self._clk_tck, native)
        self._cpu_rows = array("q")  # t_ns, cpu, then CPU_FIELDS in ticks
        self._cgroup_rows = array("q")  # as CGROUP_COLUMNS
        self.readings = 0
        self.chunks = 0

    def _open_cgroup(self) -> tuple[int, int | None] | None:
        if self.cgroup is None:
            return None
        try:
            stat = os.open(self.cgroup.stat, os.O_RDONLY)
        except OSError:
            return None
        usage = None
        if self.cgroup.usage is not None:
            try:
                usage = os.open(self.cgroup.usage, os.O_RDONLY)
            except OSError:
                usage = None
        return stat, usage

    def read(self, now: int) -> None:
        """One reading, stamped ``now`` (monotonic ns)."""
        self._read_cpus(now)
        self._read_cgroup(now)
        self.processes.read(now)
        self.readings += 1

    def _read_cpus(self, now: int) -> None:
        while True:
            raw = os.pread(self._stat, self._stat_size, 0)
            rows = parse_cpu_lines(raw, whole=len(raw) < self._stat_size)
            if rows is not None:
                break
            self._stat_size *= 2  # more CPUs than room: read more from now on
        for row in rows:
            self._cpu_rows.append(now)
            self._cpu_rows.extend(row)

    def _read_cgroup(self, now: int) -> None:
        if self._cgroup_files is None or self.cgroup is None:
            return
        stat, usage = self._cgroup_files
        try:
            text = os.pread(stat, 4096, 0)
            used = os.pread(usage, 64, 0).strip() if usage is not None else None
        except OSError:
            return
        self._cgroup_rows.append(now)
        self._cgroup_rows.extend(parse_cpu_stat(text, self.cgroup.version, used))

    def flush(self, out_dir: Path) -> None:
        """Write the rows since the last flush as one chunk (atomically: a reader never sees
        half of one), and the processes and cgroup table."""

        columns = {**self._cpu_columns(), **self.processes.take(), **self._cgroup_columns()}
        if any(len(v) for v in columns.values()):
            write_npz_atomic(out_dir / CHUNK.format(self.chunks), columns)
            self.chunks += 1
        write_json_atomic(out_dir.parent / MACHINE_TABLE, self.table())

    def _cpu_columns(self) -> dict[str, Any]:
        import numpy as np

        rows = np.frombuffer(self._cpu_rows, dtype=np.int64).reshape(-1, len(CPU_COLUMNS))
        self._cpu_rows = array("q")
        ns = rows[:, 2:] * 10**9 // self._clk_tck
        return {
            "cpu_t_ns": rows[:, 0].copy(),
            "cpu_id": rows[:, 1].astype(np.int32),
            **{column: ns[:, i] for i, column in enumerate(CPU_COLUMNS[2:])},
        }

    def _cgroup_columns(self) -> dict[str, Any]:
        import numpy as np

        rows = np.frombuffer(self._cgroup_rows, dtype=np.int64).reshape(-1, len(CGROUP_COLUMNS))
        self._cgroup_rows = array("q")
        return {column: rows[:, i].copy() for i, column in enumerate(CGROUP_COLUMNS)}

    def table(self) -> dict[str, Any]:
        cgroup = self.cgroup
        return {
            "pid": self.workload_pid,
            "readings": self.readings,
            "clock_ticks_per_second": self._clk_tck,
            "cgroup": None
            if cgroup is None
            else {
                "version": cgroup.version,
                "path": str(cgroup.directory),
                "quota_cpus": cgroup.quota,
                "usage_counted": cgroup.version == 2 or cgroup.usage is not None,
            },
            "processes_seen": self.processes.seen,
            "processes_not_read": self.processes.not_read,
            "processes": self.processes.table(),
        }

    def close(self) -> None:
        os.close(self._stat)
        for fd in self._cgroup_files or ():
            if fd is not None:
                os.close(fd)
        self._cgroup_files = None
        self.processes.close()
