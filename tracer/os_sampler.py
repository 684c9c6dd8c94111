"""OS thread sampler: every thread of the workload, read from /proc at a fixed rate.

Per sample and thread: state, user+system CPU ticks, ns on CPU and ns waiting on a
run queue (schedstat), timeslices and the CPU it last ran on. Stored as columns in
numpy ``.npz`` chunks (flushed every few seconds, so a crash of the recorder loses
little); a thread table keeps names, start times and first/last sighting.

Files stay open between samples and are re-read with ``pread`` at offset 0: the
kernel regenerates them on each read, and it costs a fraction of open+read+close.
"""

from __future__ import annotations

import os
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from .rundir import OS_THREADS_TABLE, write_json_atomic
from .sources import SourceState, SourceStatus

COLUMNS = ("t_ns", "tid", "state", "utime", "stime", "cpu_ns", "wait_ns", "slices", "cpu")
_TYPECODES = {
    "t_ns": "q",
    "tid": "l",
    "state": "b",
    "utime": "q",
    "stime": "q",
    "cpu_ns": "q",
    "wait_ns": "q",
    "slices": "q",
    "cpu": "l",
}


# Fields of a stat line after the name's ')', from 0 (field 3, state): utime is field 14,
# stime 15, starttime 22, processor 39 (proc(5)).
STATE, UTIME, STIME, STARTTIME, PROCESSOR = 0, 11, 12, 19, 36


def split_stat(raw: bytes) -> tuple[bytes, list[bytes]]:
    """(the line up to the name's closing ')', the fields after it). The name sits in
    parentheses and may itself contain spaces or ')'."""
    close = raw.rindex(b")")
    return raw[:close], raw[close + 2 :].split()


def parse_stat(text: str) -> tuple[str, str, int, int, int, int]:
    """(comm, state, utime, stime, starttime, processor) from a /proc stat line."""
    head, fields = split_stat(text.encode())
    comm = head[head.index(b"(") + 1 :].decode(errors="replace")
    return (
        comm,
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

    def __init__(self, out_dir: Path, hz: float, flush_every_s: float = 5.0) -> None:
        self.out_dir = out_dir
        self.period_s = 1.0 / hz
        self.hz = hz
        self.flush_every_s = flush_every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._files: dict[int, _ThreadFiles] = {}
        self.threads: dict[int, dict[str, Any]] = {}
        self._cols = {c: array(_TYPECODES[c]) for c in COLUMNS}
        self._chunks = 0
        self._samples = 0
        self._late = 0
        self._cpu_s = 0.0  # the sampler thread's own CPU time: its cost, by the kernel's count
        self._error: str | None = None

    def availability(self) -> str | None:
        return None if os.path.isdir("/proc/self/task") else "no /proc/<pid>/task on this system"

    def start(self, pid: int) -> None:
        self._pid = pid
        self._thread = threading.Thread(target=self._run, name="tftrace-os-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        next_t = time.monotonic()
        last_flush = next_t
        try:
            while not self._stop.is_set():
                if not self.sample_once():
                    break  # the process is gone
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
                self._stop.wait(delay)
        except Exception as e:
            self._error = f"{type(e).__name__}: {e}"
        finally:
            self._cpu_s = time.thread_time()

    def sample_once(self) -> bool:
        """One reading of every thread. The loop is the sampler's whole cost (it runs beside
        the workload, 100 times a second): bytes are split, not decoded, a thread's name is
        parsed only when its raw text changes, and the columns' ``append`` methods are bound
        once."""
        task_root = f"/proc/{self._pid}/task"
        try:
            tids = [int(t) for t in os.listdir(task_root)]
        except OSError:
            return False
        now = time.monotonic_ns()
        cols = self._cols
        t_ns, tid_col, state_col = cols["t_ns"].append, cols["tid"].append, cols["state"].append
        utime_col, stime_col, cpu_col = (
            cols["utime"].append,
            cols["stime"].append,
            cols["cpu"].append,
        )
        cpu_ns, wait_ns, slices = (
            cols["cpu_ns"].append,
            cols["wait_ns"].append,
            cols["slices"].append,
        )
        pread = os.pread
        for tid in tids:
            files = self._files.get(tid)
            if files is None:
                try:
                    files = _ThreadFiles(f"{task_root}/{tid}")
                except OSError:
                    continue
                self._files[tid] = files
            try:
                stat = pread(files.stat, 1024, 0)
                sched = pread(files.schedstat, 128, 0).split() if files.schedstat else None
            except OSError:
                continue  # exited between listdir and read
            if not stat:
                continue
            head, fields = split_stat(stat)
            if head != files.head:  # new thread, or renamed
                files.head = head
                self._saw(tid, head, int(fields[STARTTIME]), now)
            self.threads[tid]["last_seen_ns"] = now
            t_ns(now)
            tid_col(tid)
            state_col(fields[STATE][0])
            utime_col(int(fields[UTIME]))
            stime_col(int(fields[STIME]))
            if sched:
                cpu_ns(int(sched[0]))
                wait_ns(int(sched[1]))
                slices(int(sched[2]))
            else:
                cpu_ns(-1)
                wait_ns(-1)
                slices(-1)
            cpu_col(int(fields[PROCESSOR]))
        self._forget_exited(set(tids))
        self._samples += 1
        return True

    def _saw(self, tid: int, head: bytes, starttime: int, now: int) -> None:
        """A thread seen for the first time, or under a new name (``head``: its stat line up
        to the name's closing ')')."""
        comm = head[head.index(b"(") + 1 :].decode(errors="replace")
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
            self.threads[tid]["exited"] = True

    def _flush(self) -> None:
        if not len(self._cols["t_ns"]):
            return
        import numpy as np  # lazily: the recorder starts without heavy imports

        arrays = {
            c: np.frombuffer(self._cols[c], dtype=self._cols[c].typecode).copy() for c in COLUMNS
        }
        path = self.out_dir / f"samples-{self._chunks:05d}.npz"
        np.savez(path, **arrays)  # type: ignore[arg-type]
        self._chunks += 1
        self._cols = {c: array(_TYPECODES[c]) for c in COLUMNS}
        write_json_atomic(self.out_dir.parent / OS_THREADS_TABLE, self._table())

    def _table(self) -> dict[str, Any]:
        return {
            "pid": self._pid,
            "hz": self.hz,
            "columns": list(COLUMNS),
            "threads": sorted(self.threads.values(), key=lambda t: t["first_seen_ns"]),
        }

    def stop(self) -> SourceStatus:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._flush()
        write_json_atomic(self.out_dir.parent / OS_THREADS_TABLE, self._table())
        for files in self._files.values():
            files.close()
        self._files.clear()
        details = {
            "samples": self._samples,
            "threads": len(self.threads),
            "hz": self.hz,
            "late_ticks": self._late,
            "chunks": self._chunks,
            "cpu_seconds": round(self._cpu_s, 4),
        }
        if self._error:
            return SourceStatus(SourceState.FAILED, self._error, details)
        if self._samples == 0:
            return SourceStatus(SourceState.FAILED, "no sample taken", details)
        return SourceStatus(SourceState.RECORDED, None, details)
