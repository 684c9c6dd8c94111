"""Record, from inside the workload, which OS thread is which: its TF name and trace line id.

``IdentityRecorder`` takes snapshots of every thread of this process and reads each one's glibc
descriptor once (see ``thread_descriptors`` for how and why that works); ``IdentityWatcher``
snapshots as soon as new threads appear, and ``hook_python_threads`` has each Python thread
report itself as it starts. The result is ``thread_identity.json`` in the run directory.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from tftrace.analysis.model.vocabulary import is_tf_library
from tftrace.tracer.procstat import native as procstat

from .thread_descriptors import (
    Layout,
    Memory,
    calibrate,
    find_descriptors,
    object_of,
    open_libc,
    read_int32,
    read_ptr,
    read_std_string,
    std_hash,
    trace_line_id,
    walk_thread_list,
)


@dataclass
class ThreadIdentity:
    """What is known of one OS thread: a row of ``thread_identity.json``."""

    tid: int
    comm: str
    pthread: int | None = None
    trace_line_id: int | None = None
    start_object: str | None = None
    start_symbol: str | None = None
    tf_name: str | None = None
    python_name: str | None = None
    first_seen_monotonic_ns: int = 0


class IdentityRecorder:
    """Snapshots thread identities; merged by tid across snapshots."""

    def __init__(self) -> None:
        self.threads: dict[int, ThreadIdentity] = {}
        self.errors: list[str] = []
        self.snapshots = 0
        self.layout: Layout | None = None
        self._lock = threading.Lock()
        self._main = 0  # the main thread's descriptor: on glibc's other list (user stacks)
        try:
            self._mem: Memory | None = Memory()
            self._libc: ctypes.CDLL | None = open_libc()
            self._main = self._libc.pthread_self()  # constructed on the main thread
        except OSError as e:
            self._mem = None
            self._libc = None
            self.errors.append(f"cannot read own memory: {e}")
        try:
            self._hash: Any = std_hash()
        except (OSError, AttributeError) as e:
            self._hash = None
            self.errors.append(f"std::hash unavailable: {e}")

    def snapshot(self) -> None:
        """Never raises: identity evidence must not break the workload."""
        with self._lock:
            try:
                self._snapshot()
            except Exception as e:
                self.errors.append(f"snapshot failed: {type(e).__name__}: {e}")

    def _snapshot(self) -> None:
        if self._mem is None or self._libc is None:
            return
        mem, libc = self._mem, self._libc
        if self.layout is None:
            self.layout = calibrate(mem, libc)
            self.errors.extend(self.layout.errors)
        now = time.monotonic_ns()
        python_names = {t.native_id: t.name for t in threading.enumerate()}
        live = {int(t) for t in os.listdir("/proc/self/task")}
        descriptors = {}
        if self.layout.tid_offset is not None:
            listed = (
                walk_thread_list(mem, libc.pthread_self(), self.layout.list_offset)
                if self.layout.list_offset is not None
                else []
            )
            for addr in {*find_descriptors(mem), *listed, libc.pthread_self(), self._main}:
                tid = read_int32(mem, addr + self.layout.tid_offset)
                if tid in live:
                    descriptors[tid] = addr
        self.snapshots += 1
        for tid in live:
            known = self.threads.get(tid)
            if known is None:
                known = ThreadIdentity(tid=tid, comm=_comm(tid), first_seen_monotonic_ns=now)
                self.threads[tid] = known
            known.comm = _comm(tid) or known.comm
            if tid in python_names:
                known.python_name = python_names[tid]
            addr = descriptors.get(tid)
            if addr is not None and known.pthread is None:
                self._set_descriptor(known, addr)

    def _set_descriptor(self, thread: ThreadIdentity, addr: int) -> None:
        thread.pthread = addr
        if self._hash is not None:
            thread.trace_line_id = trace_line_id(addr, self._hash)
        self._describe_start(thread, addr)

    def python_thread_started(self, thread: threading.Thread) -> None:
        """Called on every new Python thread, on that thread, before its target runs: exact
        identity even for threads too short-lived for any poll. Never raises."""
        if self._mem is None or self._libc is None:
            return
        with self._lock:
            try:
                if self.layout is None:  # this thread's start routine is Python's: calibrate
                    self.layout = calibrate(self._mem, self._libc)
                    self.errors.extend(self.layout.errors)
                tid = threading.get_native_id()
                known = self.threads.get(tid)
                if known is None or known.pthread is None or known.python_name is None:
                    known = known or ThreadIdentity(
                        tid=tid, comm=_comm(tid), first_seen_monotonic_ns=time.monotonic_ns()
                    )
                    known.python_name = thread.name
                    self.threads[tid] = known
                    if known.pthread is None:
                        self._set_descriptor(known, self._libc.pthread_self())
            except Exception as e:
                self.errors.append(f"python thread hook failed: {type(e).__name__}: {e}")

    def refresh_python_names(self) -> None:
        with self._lock:
            for thread in threading.enumerate():
                known = self.threads.get(thread.native_id or -1)
                if known is not None and known.python_name is None:
                    known.python_name = thread.name

    def _describe_start(self, thread: ThreadIdentity, addr: int) -> None:
        assert self._mem is not None and self._libc is not None and self.layout is not None
        offset = self.layout.start_routine_offset
        if offset is None:
            return
        routine = read_ptr(self._mem, addr + offset)
        arg = read_ptr(self._mem, addr + offset + 8)
        if not routine:
            return
        thread.start_object, thread.start_symbol = object_of(self._libc, routine)
        obj = thread.start_object or ""
        if arg and is_tf_library(obj):
            # TF's PThread::ThreadFn gets a ThreadParams whose first member is the name.
            thread.tf_name = read_std_string(self._mem, arg)

    def to_json(self) -> dict[str, Any]:
        with self._lock:  # a served program's watcher goes on while a capture reads this
            return self._json()

    def _json(self) -> dict[str, Any]:
        layout = self.layout or Layout()
        return {
            "method": "glibc thread descriptors read from /proc/self/mem; "
            "trace_line_id = libstdc++ std::hash<std::thread::id>(pthread_t)",
            "tid_offset": layout.tid_offset,
            "start_routine_offset": layout.start_routine_offset,
            "python_object": layout.python_object,
            "list_offset": layout.list_offset,
            "snapshots": self.snapshots,
            "errors": list(self.errors),
            "threads": [asdict(t) for t in sorted(self.threads.values(), key=lambda t: t.tid)],
        }


def _comm(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def hook_python_threads(recorder: IdentityRecorder) -> Callable[[], None]:
    """Have every Python thread report itself as it starts (see python_thread_started);
    returns what undoes it (an in-code recording ends while the process goes on).

    ``Thread._bootstrap_inner`` runs on the new thread before its target in every CPython
    since 3.0; the wrapper calls through unchanged.
    """
    original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_inner(self: threading.Thread) -> None:
        recorder.python_thread_started(self)
        original(self)

    threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]

    def unhook() -> None:
        threading.Thread._bootstrap_inner = original  # type: ignore[attr-defined]

    return unhook


class IdentityWatcher:
    """Takes a snapshot as soon as new threads appear, so short-lived pools are seen too.

    A thread's descriptor (tid, start routine, TF's name for it) is complete before
    the thread runs, so one poll interval is enough; tf.data threads may live for
    only ~10 ms, hence the short interval. The polls run in C with the GIL released
    (``_procstat.wait_for_threads``): a poll in Python, 200 times a second, took the GIL
    from the workload's own thread each time. Python thread names are refreshed whenever
    the C wait returns (at least every ``refresh_s``): a thread joins
    ``threading.enumerate()`` only once it runs, after its descriptor was read.
    """

    def __init__(
        self, recorder: IdentityRecorder, interval_s: float = 0.005, refresh_s: float = 0.1
    ) -> None:
        self.recorder = recorder
        self._interval = interval_s
        self._refresh = refresh_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tftrace-identity", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        self.recorder.snapshot()  # calibrates on this thread, whose start routine is known
        seen = set(self.recorder.threads)
        signature = 0
        while not self._stop.is_set():
            if procstat is not None:
                signature = procstat.wait_for_threads(
                    "/proc/self/task", signature, self._interval, self._refresh
                )
            elif self._stop.wait(self._interval):
                break
            try:
                live = {int(t) for t in os.listdir("/proc/self/task")}
            except OSError:
                continue
            if live - seen:
                self.recorder.snapshot()
            else:
                self.recorder.refresh_python_names()
            seen = live

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.recorder.snapshot()
