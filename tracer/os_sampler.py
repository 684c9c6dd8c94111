"""OS thread sampler: every thread of the workload, read from /proc at a fixed rate.

Per sample and thread: state, user+system CPU ticks, ns on CPU and ns waiting on a
run queue (schedstat), timeslices and the CPU it last ran on. Stored as columns in
numpy ``.npz`` chunks (flushed every few seconds, so a crash of the recorder loses
little); a thread table keeps names, start times and first/last sighting.

Files stay open between samples and are re-read with ``pread`` at offset 0: the
kernel regenerates them on each read, and it costs a fraction of open+read+close.

Every few ticks (``machine_hz``, 5 a second by default) it also reads the machine beside the
workload (``machine_reader.py``: CPUs, other processes, the cgroup), written at the same
flushes.
"""

from __future__ import annotations

import math
import os
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from .machine_reader import MachineReader
from .options import DEFAULT_MACHINE_HZ
from .priority import policy_name
from .procstat import PROCESSOR, STARTTIME, STATE, STIME, UTIME, name_of, split_stat
from .procstat import native as _procstat
from .rundir import OS_THREADS_TABLE, write_json_atomic, write_npz_atomic
from .sources import SourceState, SourceStatus

COLUMNS = ("t_ns", "tid", "state", "utime", "stime", "cpu_ns", "wait_ns", "slices", "cpu")
# Rows are kept as int64 while sampling (the C reader writes them so); on disk each column has
# its own type.
SHORT_WAIT_S = 0.05  # waits up to this long sleep; stop() notices at the next tick
# The machine readings' share of one core at most: a reading that costs more (a machine of
# thousands of processes) spaces the next ones out.
MACHINE_BUDGET = 0.005

_DTYPES = {c: "int8" if c == "state" else "int64" for c in COLUMNS}


def parse_stat(text: str) -> tuple[str, str, int, int, int, int]:
    """(comm, state, utime, stime, starttime, processor) from a /proc stat line."""
    head, fields = split_stat(text.encode())
    return (
        name_of(head),
        fields[STATE].decode(),
        int(fields[UTIME]),
        int(fields[STIME]),
        int(fields[STARTTIME]),
        int(fields[PROCESSOR]),
    )


class _ThreadFiles:
    __slots__ = ("head", "schedstat", "stat")

    def __init__(self, task_dir: str) -> None:
        self.head = b""  # the stat text up to the name's ')': it changes when the name does
        self.stat = os.open(f"{task_dir}/stat", os.O_RDONLY)
        try:
            self.schedstat: int | None = os.open(f"{task_dir}/schedstat", os.O_RDONLY)
        except OSError:
            self.schedstat = None

    def close(self) -> None:
        for fd in (self.stat, self.schedstat):
            if fd is not None:
                os.close(fd)


class OsThreadSampler:
    name = "os_sampler"
    attaches = False  # reads /proc: needs no permission from the process

    def __init__(
        self,
        out_dir: Path,
        hz: float,
        flush_every_s: float = 5.0,
        native: bool = True,
        machine_hz: float = DEFAULT_MACHINE_HZ,
    ) -> None:
        self.out_dir = out_dir
        self.period_s = 1.0 / hz
        self.hz = hz
        self.machine_hz = machine_hz
        # A machine reading every this many ticks (0: none); a costly one widens it.
        self._machine_every = max(1, round(hz / machine_hz)) if machine_hz > 0 else 0
        self._machine: MachineReader | None = None
        self._machine_cpu_ns = 0  # the machine readings' own CPU time (this thread's)
        self._machine_setup_ns = 0
        self._machine_error: str | None = None
        self.flush_every_s = flush_every_s
        self._reader = _procstat if native else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._names: list[str] = []  # the task directory's listing the open files are for
        self._links = 0  # its link count then
        self._missed = False  # a thread of the listing could not be read in the last sample
        self._files: dict[int, _ThreadFiles] = {}
        self._order: list[int] = []  # tids read each sample, in listing order
        self._fds = array("i")  # for the C reader: stat and schedstat fd of each of _order
        self._tids = array("q")
        self._heads = b""  # the C reader's head hashes of the last sample
        self.threads: dict[int, dict[str, Any]] = {}
        self._rows = array("q")  # len(COLUMNS) int64 per thread and sample
        self._chunks = 0
        self._samples = 0
        self._late = 0
        self._cpu_s = 0.0  # the sampler thread's own CPU time: its cost, by the kernel's count
        self._policy = "unknown"  # its scheduling policy (see priority.py)
        self._error: str | None = None

    def availability(self) -> str | None:
        return None if os.path.isdir("/proc/self/task") else "no /proc/<pid>/task on this system"

    @property
    def machine_readings(self) -> int:
        """The machine readings taken so far (0 before the first)."""
        return self._machine.readings if self._machine is not None else 0

    def start(self, pid: int) -> None:
        self._pid = pid
        self._thread = threading.Thread(target=self._run, name="tftrace-os-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._policy = policy_name()
        next_t = time.monotonic()
        last_flush = next_t
        try:
            while not self._stop.is_set():
                if not self.sample_once():
                    break  # the process is gone
                if self._machine_every and (self._samples - 1) % self._machine_every == 0:
                    self._read_machine()  # the first tick, then every _machine_every-th
                now = time.monotonic()
                if now - last_flush >= self.flush_every_s:
                    self._flush()
                    last_flush = now
                next_t += self.period_s
                delay = next_t - time.monotonic()
                if delay < 0:  # fell behind: skip ahead rather than burst
                    self._late += 1
                    next_t = time.monotonic()
                    continue
                if delay <= SHORT_WAIT_S:
                    time.sleep(delay)  # half the CPU of an Event.wait wake-up (~40 vs ~65 us)
                else:
                    self._stop.wait(delay)
        except Exception as e:
            self._error = f"{type(e).__name__}: {e}"
        finally:
            self._cpu_s = time.thread_time()

    def _read_machine(self) -> None:
        """One machine reading, its cost counted apart; a failure ends the machine readings,
        never the thread samples."""
        before = time.thread_time_ns()
        try:
            if self._machine is None:
                self._machine = MachineReader(self._pid, native=self._reader is not None)
            self._machine.read(time.monotonic_ns())
        except Exception as e:
            self._machine_error = f"{type(e).__name__}: {e}"
            self._machine_every = 0
            return
        cost = time.thread_time_ns() - before
        self._machine_cpu_ns += cost
        if self._machine.readings == 1:
            self._machine_setup_ns = cost  # opening every file: not what a reading costs
            return
        mean = (self._machine_cpu_ns - self._machine_setup_ns) / (self._machine.readings - 1)
        within = MACHINE_BUDGET * self._machine_every * self.period_s * 1e9
        if mean > within:
            self._machine_every = math.ceil(self._machine_every * mean / within)

    def sample_once(self) -> bool:
        """One reading of every thread. This is the sampler's whole cost (it runs beside the
        workload, 100 times a second): the thread list is read only when it may have changed,
        files are opened once per thread, and the C reader reads them all with the GIL
        released."""
        task_root = f"/proc/{self._pid}/task"
        try:
            # 2 + the number of threads: listing the directory costs 8 times more, so it is
            # listed only when this changes or a thread could not be read (it exited, and
            # another may have been born in the same interval).
            links = os.stat(task_root).st_nlink
            if links != self._links or self._missed:
                names = os.listdir(task_root)
                self._links = links
                if names != self._names:
                    self._open_threads(task_root, names)
        except OSError:
            return False
        now = time.monotonic_ns()
        before = len(self._rows)
        if self._reader is not None:
            rows, heads = self._reader.read_threads(self._fds, self._tids, now)
            self._rows.frombytes(rows)
            if heads != self._heads:
                self._check_heads(heads, now)
        else:
            self._read_python(now)
        self._missed = len(self._rows) - before < len(self._order) * len(COLUMNS)
        self._samples += 1
        return True

    def _open_threads(self, task_root: str, names: list[str]) -> None:
        """Open the files of new threads, close those of exited ones."""
        self._names = names
        live = [int(n) for n in names]
        for tid in live:
            if tid not in self._files:
                try:
                    self._files[tid] = _ThreadFiles(f"{task_root}/{tid}")
                except OSError:
                    continue  # exited since the listing
        self._forget_exited(set(live))
        self._order = [tid for tid in live if tid in self._files]
        fds = array("i")
        for tid in self._order:
            files = self._files[tid]
            fds.extend((files.stat, -1 if files.schedstat is None else files.schedstat))
        self._fds, self._tids, self._heads = fds, array("q", self._order), b""

    def _check_heads(self, heads: bytes, now: int) -> None:
        """The C reader saw a new thread, or a renamed one: read its name here."""
        old = self._heads
        for i, tid in enumerate(self._order):
            head = heads[8 * i : 8 * i + 8]
            if head != old[8 * i : 8 * i + 8] and head != bytes(8):
                try:
                    stat = os.pread(self._files[tid].stat, 1024, 0)
                    name_head, fields = split_stat(stat)
                except (OSError, ValueError):
                    continue
                self._saw(tid, name_head, int(fields[STARTTIME]), now)
        self._heads = heads

    def _read_python(self, now: int) -> None:
        """The C reader's work, where it was not built: the same rows."""
        pread, extend = os.pread, self._rows.extend
        for tid in self._order:
            files = self._files[tid]
            try:
                stat = pread(files.stat, 1024, 0)
                sched = (
                    pread(files.schedstat, 128, 0).split() if files.schedstat is not None else []
                )
            except OSError:
                continue  # exited since the listing
            if b")" not in stat:
                continue
            head, fields = split_stat(stat)
            if len(fields) <= PROCESSOR:
                continue
            if head != files.head:  # new thread, or renamed
                files.head = head
                self._saw(tid, head, int(fields[STARTTIME]), now)
            on_cpu, waited, slices = map(int, sched[:3]) if len(sched) >= 3 else (-1, -1, -1)
            extend(
                (
                    now,
                    tid,
                    fields[STATE][0],
                    int(fields[UTIME]),
                    int(fields[STIME]),
                    on_cpu,
                    waited,
                    slices,
                    int(fields[PROCESSOR]),
                )
            )

    def _saw(self, tid: int, head: bytes, starttime: int, now: int) -> None:
        """A thread seen for the first time, or under a new name (``head``: its stat line up
        to the name's closing ')')."""
        comm = name_of(head)
        info = self.threads.get(tid)
        if info is None:
            self.threads[tid] = {
                "tid": tid,
                "name": comm,
                "names": [comm],
                "starttime_ticks": starttime,
                "first_seen_ns": now,
                "last_seen_ns": now,
            }
        elif comm != info["name"]:
            info["name"] = comm
            info["names"].append(comm)

    def _forget_exited(self, live: set[int]) -> None:
        for tid in [t for t in self._files if t not in live]:
            self._files.pop(tid).close()
            if tid in self.threads:  # not if it was never read
                self.threads[tid]["exited"] = True

    def _flush(self) -> None:
        if self._machine is not None:
            try:
                self._machine.flush(self.out_dir)
            except (OSError, ValueError) as e:
                self._machine_error = f"{type(e).__name__}: {e}"
        if not len(self._rows):
            return
        import numpy as np  # lazily: the recorder starts without heavy imports

        table = np.frombuffer(self._rows, dtype=np.int64).reshape(-1, len(COLUMNS))
        arrays = {c: table[:, i].astype(_DTYPES[c]) for i, c in enumerate(COLUMNS)}
        self._note_last_seen(arrays["tid"], arrays["t_ns"])
        write_npz_atomic(self.out_dir / f"samples-{self._chunks:05d}.npz", arrays)
        self._chunks += 1
        self._rows = array("q")
        write_json_atomic(self.out_dir.parent / OS_THREADS_TABLE, self._table())

    def _note_last_seen(self, tids: Any, times: Any) -> None:
        """Each thread's last row in the chunk (rows are in time order) is its last sighting."""
        import numpy as np

        unique, from_end = np.unique(tids[::-1], return_index=True)
        for tid, i in zip(unique.tolist(), from_end.tolist(), strict=True):
            if tid in self.threads:
                self.threads[tid]["last_seen_ns"] = int(times[len(times) - 1 - i])

    def _table(self) -> dict[str, Any]:
        return {
            "pid": self._pid,
            "hz": self.hz,
            "columns": list(COLUMNS),
            "threads": sorted(self.threads.values(), key=lambda t: t["first_seen_ns"]),
        }

    def _machine_details(self) -> dict[str, Any]:
        machine = self._machine
        details: dict[str, Any] = {"hz": self.machine_hz}
        if machine is not None:
            details.update(
                readings=machine.readings,
                chunks=machine.chunks,
                cpu_seconds=round(self._machine_cpu_ns / 1e9, 4),
                processes=len(machine.processes.table()),
                cgroup=machine.cgroup.version if machine.cgroup else None,
            )
            if self._machine_every:
                details["hz_at_end"] = round(1 / (self._machine_every * self.period_s), 3)
        if self._machine_error:
            details["error"] = self._machine_error
        return details

    def stop(self) -> SourceStatus:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._flush()
        write_json_atomic(self.out_dir.parent / OS_THREADS_TABLE, self._table())
        for files in self._files.values():
            files.close()
        self._files.clear()
        if self._machine is not None:
            self._machine.close()
        details = {
            "samples": self._samples,
            "threads": len(self.threads),
            "hz": self.hz,
            "late_ticks": self._late,
            "chunks": self._chunks,
            "cpu_seconds": round(self._cpu_s, 4),
            "reader": "c" if self._reader is not None else "python",
            "scheduling": self._policy,
            "machine": self._machine_details(),
        }
        if self._error:
            return SourceStatus(SourceState.FAILED, self._error, details)
        if self._samples == 0:
            return SourceStatus(SourceState.FAILED, "no sample taken", details)
        return SourceStatus(SourceState.RECORDED, None, details)
