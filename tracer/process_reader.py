"""The other processes of the machine, for the machine reading (``machine_reader.py``): the pid,
name and CPU time of each, from ``/proc/<pid>/stat`` alone (never a command line or an
environment).

As the thread sampler does for threads, files stay open between readings and are re-read
with ``pread`` by the C reader (GIL released); ``/proc`` is listed again only every few
readings, so a process that starts is seen up to that late (its counter holds all it used
since it started, and ``started_ns`` says when that was). Only processes whose CPU time grew
while they were watched are written: a machine's idle daemons would otherwise be most of the
file.
"""

from __future__ import annotations

import os
import resource
import time
from array import array
from typing import Any

from .procstat import PPID, PROCESSOR, STARTTIME, STATE, STIME, UTIME, name_of, split_stat
from .procstat import native as _procstat

ROW = 9  # the C reader's row: t_ns, pid, state, utime, stime, (3 schedstat), processor
T, PID, UTIME_COL, STIME_COL, PROCESSOR_COL = 0, 1, 3, 4, 8
RELIST_EVERY = 5  # readings between listings of /proc: once a second at 5 Hz
MAX_OPEN = 4096  # stat files held open at most (and half the descriptor limit); others unread
# The tools the recorder starts beside the workload, by process name: their CPU is its cost.
OWN_TOOLS = ("py-spy",)
COLUMNS = ("proc_t_ns", "proc_pid", "proc_cpu_ns", "proc_processor")


class ProcessReader:
    """Every process in ``proc`` but the workload itself (its threads are sampled one by one),
    read on each ``read``; ``take`` hands over the rows since the last take."""

    def __init__(
        self, proc: str, workload_pid: int, own_pid: int, clk_tck: int, native: bool = True
    ) -> None:
        self._proc = proc
        self._workload = workload_pid
        self._own = own_pid
        self._clk_tck = clk_tck
        self._reader = _procstat if native else None
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        self._max_open = MAX_OPEN if soft == resource.RLIM_INFINITY else min(MAX_OPEN, soft // 2)
        # starttime is in ticks of CLOCK_BOOTTIME; samples are stamped with CLOCK_MONOTONIC.
        self._boot_minus_mono = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns()
        self._fds: dict[int, int] = {}
        self._order: list[int] = []
        self._fd_array = array("i")
        self._pid_array = array("q")
        self._heads = b""  # the C reader's hash of each stat line's head, in _order
        self._head_of: dict[int, bytes] = {}  # the same by pid, kept across listings
        self._unread: set[int] = set()  # pids of the last reading without a row: exited, or reused
        self._readings = 0
        self._rows = array("q")  # ROW int64 per process and reading, since the last take
        self.info: dict[int, dict[str, Any]] = {}
        self._base: dict[int, int] = {}  # ticks at first sight
        # The last row (t_ns, pid, processor, ticks) of each process not yet written.
        self._held: dict[int, tuple[int, ...]] = {}
        self._written: set[int] = set()  # processes whose CPU time grew: all their rows kept
        self.not_read = 0  # processes left unread for want of file descriptors

    def read(self, now: int) -> None:
        if self._readings % RELIST_EVERY == 0:
            self._relist()
        self._readings += 1
        before = len(self._rows)
        if self._reader is not None:
            rows, heads = self._reader.read_threads(self._fd_array, self._pid_array, now)
            self._rows.frombytes(rows)
            if heads != self._heads:
                self._check_heads(heads, now)
        else:
            self._read_python(now)
        if len(self._rows) - before < len(self._order) * ROW:
            read = set(self._rows[before + PID :: ROW])
            self._unread = {pid for pid in self._order if pid not in read}

    def _relist(self) -> None:
        """Open the stat files of new processes, close those of exited ones (and reopen those
        whose pid a new process took)."""
        try:
            listed = [int(n) for n in os.listdir(self._proc) if n.isdigit()]
        except OSError:
            return
        live = {pid for pid in listed if pid != self._workload}
        stale = [p for p in self._fds if p not in live or p in self._unread]
        for pid in stale:
            os.close(self._fds.pop(pid))
            self._head_of.pop(pid, None)
            if pid in self.info:
                self.info[pid]["exited"] = True
        self._unread = set()
        opened = False
        for pid in sorted(live - self._fds.keys()):
            if len(self._fds) >= self._max_open:
                break
            try:
                self._fds[pid] = os.open(f"{self._proc}/{pid}/stat", os.O_RDONLY)
                opened = True
            except OSError:
                continue  # exited since the listing
        self.not_read = len(live - self._fds.keys())
        if stale or opened:
            self._order = list(self._fds)
            self._fd_array = array("i", [fd for pid in self._order for fd in (self._fds[pid], -1)])
            self._pid_array = array("q", self._order)
            self._heads = b"".join(self._head_of.get(pid, bytes(8)) for pid in self._order)

    def _check_heads(self, heads: bytes, now: int) -> None:
        """A new process, or a renamed one: read its name (and parent) here."""
        old = self._heads
        for i, pid in enumerate(self._order):
            head = heads[8 * i : 8 * i + 8]
            if head != old[8 * i : 8 * i + 8] and head != bytes(8):
                self._head_of[pid] = head
                try:
                    self._saw(pid, *split_stat(os.pread(self._fds[pid], 1024, 0)), now)
                except (OSError, ValueError, IndexError):
                    continue
        self._heads = heads

    def _read_python(self, now: int) -> None:
        """The C reader's rows, where it was not built."""
        for pid in self._order:
            try:
                head, fields = split_stat(os.pread(self._fds[pid], 1024, 0))
            except (OSError, ValueError):
                continue  # exited since the listing
            if len(fields) <= PROCESSOR:
                continue
            if self.info.get(pid, {}).get("head") != head:
                self._saw(pid, head, fields, now)
            utime, stime, cpu = int(fields[UTIME]), int(fields[STIME]), int(fields[PROCESSOR])
            self._rows.extend((now, pid, fields[STATE][0], utime, stime, -1, -1, -1, cpu))

    def _saw(self, pid: int, head: bytes, fields: list[bytes], now: int) -> None:
        name = name_of(head)
        info = self.info.get(pid)
        if info is None or info.get("exited"):
            self._base.pop(pid, None)  # a pid taken again: counted anew
            self._held.pop(pid, None)
            started = int(fields[STARTTIME]) * 10**9 // self._clk_tck - self._boot_minus_mono
            self.info[pid] = {
                "pid": pid,
                "name": name,
                "names": [name],
                "ppid": int(fields[PPID]),
                "started_ns": started,
                "first_seen_ns": now,
                "last_seen_ns": now,
                "head": head,
            }
        elif name != info["name"]:
            info.update(name=name, head=head)
            info["names"].append(name)

    def take(self) -> dict[str, Any]:
        """The rows since the last take, of the processes whose CPU time has grown since they
        were first seen, as ``COLUMNS``. A process written for the first time gets its last
        row from before (its CPU time until then), so its growth is placed in time."""
        import numpy as np

        table = np.frombuffer(self._rows, dtype=np.int64).reshape(-1, ROW)
        self._rows = array("q")
        table = np.c_[table[:, [T, PID, PROCESSOR_COL]], table[:, UTIME_COL] + table[:, STIME_COL]]
        order = np.argsort(table[:, 1], kind="stable")  # each process's rows, in time order
        by_pid = table[order]
        starts = np.flatnonzero(np.r_[True, by_pid[1:, 1] != by_pid[:-1, 1]])[: len(by_pid)]
        most = np.maximum.reduceat(by_pid[:, 3], starts) if len(by_pid) else by_pid[:0, 3]
        ends = (np.r_[starts[1:], len(by_pid)] - 1)[: len(starts)]
        keep, before = [], []
        for first, last, ticks in zip(starts.tolist(), ends.tolist(), most.tolist(), strict=True):
            pid = int(by_pid[first, 1])
            base = self._base.setdefault(pid, int(by_pid[first, 3]))
            if pid in self.info:
                self.info[pid]["last_seen_ns"] = int(by_pid[last, 0])
            if pid not in self._written and ticks > base:
                self._written.add(pid)
                if pid in self._held:
                    before.append(self._held.pop(pid))
            if pid in self._written:
                keep.append(pid)
            else:
                self._held[pid] = tuple(by_pid[last].tolist())
        rows = np.r_[
            np.array(before, dtype=np.int64).reshape(-1, 4), table[np.isin(table[:, 1], keep)]
        ]
        return {
            "proc_t_ns": rows[:, 0],
            "proc_pid": rows[:, 1].astype(np.int32),
            "proc_cpu_ns": rows[:, 3] * 10**9 // self._clk_tck,
            "proc_processor": rows[:, 2].astype(np.int32),
        }

    def table(self) -> list[dict[str, Any]]:
        """The processes written so far: pid, name(s), role, when seen; no parent pid, no
        head."""
        out = []
        for pid in sorted(self._written):
            info = self.info.get(pid)
            if info is None:
                continue
            entry = {k: v for k, v in info.items() if k not in ("ppid", "head")}
            out.append({**entry, "role": self.role(pid)})
        return out

    def role(self, pid: int) -> str:
        """``recorder`` for this process and the tools it started (py-spy), ``workload-child``
        for the workload's descendants, else ``other``; by parent pids, as far as they are
        known. Another child of this process is ``other``: a program that calls
        ``tftrace.record`` may run processes of its own beside the workload, and they hold
        cores as any neighbour does (measured: a spinning process started by the caller was
        counted as the recorder's cost, and the cores it held as free)."""
        seen: set[int] = set()
        below = None  # the process on the way up just below the one looked at
        while pid > 1 and pid not in seen:
            if pid == self._own:
                tool = below is None or self.info.get(below, {}).get("name") in OWN_TOOLS
                return "recorder" if tool else "other"
            if pid == self._workload:
                return "workload-child"
            seen.add(pid)
            below = pid
            pid = int(self.info.get(pid, {}).get("ppid", 0))
        return "other"

    @property
    def seen(self) -> int:
        return len(self.info)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
