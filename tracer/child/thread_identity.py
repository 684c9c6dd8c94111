"""Map every OS thread of this process to its TF thread name and trace line id.

The OS names lie (Eigen workers show as ``python``; TF <= 2.20 names nothing) and
trace line ids are not OS thread ids. But both can be derived, from inside the
process, from the thread's glibc descriptor (``struct pthread``, whose address is
``pthread_t``):

* the trace line id is ``std::hash<std::thread::id>`` of ``pthread_t``, i.e.
  libstdc++'s ``_Hash_bytes(&pthread_t, 8, 0xc70f6907)``;
* the descriptor holds the kernel tid, the thread's start routine and its argument;
  for threads TF starts, the argument begins with the ``std::string`` name TF gave
  the thread (``tf_numa_-1_Eigen``, ``tf_Compute``, ...), even when the OS name
  could not be set.

Descriptors sit at the top of each thread's stack mapping, and start with a
self-pointer (``tcbhead_t.tcb`` and ``.self``), so they can be found by scanning the
last page of each anonymous mapping. Memory is read through ``/proc/self/mem`` so a
mapping that vanishes mid-read gives an error, not a crash. Every offset is
calibrated on threads whose identity is known, never assumed.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

_HASH_SEED = 0xC70F6907
_SCAN_BYTES = 8192  # the descriptor lies in the last pages of a thread's stack mapping
_DESCRIPTOR_BYTES = 2560  # generously more than sizeof(struct pthread) on x86-64 glibc


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


@dataclass
class ThreadIdentity:
    tid: int
    comm: str
    pthread: int | None = None
    trace_line_id: int | None = None
    start_object: str | None = None
    start_symbol: str | None = None
    tf_name: str | None = None
    python_name: str | None = None
    first_seen_monotonic_ns: int = 0


@dataclass
class Layout:
    """Offsets inside ``struct pthread``, found by calibration."""

    tid_offset: int | None = None
    start_routine_offset: int | None = None
    python_object: str | None = None  # the library holding Python's thread start code
    list_offset: int | None = None  # glibc links the descriptors of running threads
    errors: list[str] = field(default_factory=list)


class _Memory:
    def __init__(self) -> None:
        self._fd = os.open("/proc/self/mem", os.O_RDONLY)

    def read(self, address: int, size: int) -> bytes | None:
        try:
            return os.pread(self._fd, size, address)
        except (OSError, OverflowError):
            return None

    def close(self) -> None:
        os.close(self._fd)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    libc.pthread_self.restype = ctypes.c_ulong
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    return libc


def _std_hash() -> Any:
    lib = ctypes.CDLL("libstdc++.so.6")
    fn = lib._ZSt11_Hash_bytesPKvmm
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    return fn


def trace_line_id(pthread: int, hash_fn: Any) -> int:
    value = ctypes.c_ulong(pthread)
    return ctypes.c_int64(hash_fn(ctypes.byref(value), 8, _HASH_SEED)).value


def _anonymous_rw_mappings() -> list[tuple[int, int]]:
    spans = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[1] == "rw-p":
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                spans.append((lo, hi))
    return spans


def _self_pointers(data: bytes, base: int) -> list[int]:
    """Addresses in ``data`` (read from ``base``) holding their own address, 8-byte aligned."""
    count = len(data) // 8
    np = sys.modules.get("numpy")  # vectorised when the workload already loaded numpy
    if np is not None and hasattr(np, "frombuffer") and hasattr(np, "arange"):
        # (a module still being imported by the workload lacks its attributes)
        words = np.frombuffer(data, dtype="<u8", count=count)
        addrs = np.arange(base, base + 8 * count, 8, dtype=np.uint64)
        return [int(a) for a in addrs[words == addrs]]
    words = struct.unpack(f"<{count}Q", data[: 8 * count])
    return [base + 8 * i for i, w in enumerate(words) if w == base + 8 * i]


def _find_descriptors(mem: _Memory) -> list[int]:
    """Addresses that look like a thread descriptor: tcb == self == own address."""
    found = []
    for lo, hi in _anonymous_rw_mappings():
        size = min(hi - lo, _SCAN_BYTES)
        base = hi - size
        data = mem.read(base, size)
        if data is None or len(data) < 24:
            continue
        for addr in _self_pointers(data, base):
            offset = addr - base
            if data[offset + 16 : offset + 24] == data[offset : offset + 8]:
                found.append(addr)
    return found


def _read_int32(mem: _Memory, address: int) -> int | None:
    raw = mem.read(address, 4)
    return struct.unpack("<i", raw)[0] if raw and len(raw) == 4 else None


def _read_ptr(mem: _Memory, address: int) -> int | None:
    raw = mem.read(address, 8)
    return struct.unpack("<Q", raw)[0] if raw and len(raw) == 8 else None


def _object_of(libc: ctypes.CDLL, address: int) -> tuple[str | None, str | None]:
    info = _DlInfo()
    if not address or not libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return None, None
    fname = os.path.basename(info.dli_fname.decode()) if info.dli_fname else None
    sname = info.dli_sname.decode() if info.dli_sname else None
    return fname, sname


def _read_std_string(mem: _Memory, address: int) -> str | None:
    """A libstdc++ std::string at ``address`` (pointer, length, inline buffer)."""
    raw = mem.read(address, 16)
    if not raw or len(raw) != 16:
        return None
    ptr, length = struct.unpack("<QQ", raw)
    if not 0 < length <= 128:
        return None
    raw_text = mem.read(ptr, length)
    if not raw_text or len(raw_text) != length or not raw_text.isascii():
        return None
    text = raw_text.decode()
    return text if text.isprintable() else None


def _is_descriptor(mem: _Memory, addr: int) -> bool:
    raw = mem.read(addr, 24)
    if not raw or len(raw) != 24:
        return False
    tcb, _, self_ptr = struct.unpack("<QQQ", raw)
    return tcb == addr == self_ptr


def _find_list_offset(mem: _Memory, me: int, block: bytes, below: int) -> int | None:
    """Offset of ``struct pthread.list``: a doubly linked node (prev(next(x)) == x) whose
    neighbour is another thread's node or the list head glibc keeps."""
    for offset in range(24, below, 8):
        node = me + offset
        nxt, prv = struct.unpack_from("<QQ", block, offset)
        if nxt == node or not nxt or not prv:
            continue
        if _read_ptr(mem, nxt + 8) == node and _read_ptr(mem, prv) == node:
            return offset
    return None


def walk_thread_list(mem: _Memory, start: int, offset: int, limit: int = 100_000) -> list[int]:
    """Every descriptor on the list that ``start`` is on (glibc's running threads).

    Unlike the mapping scan, this finds a thread whose stack mapping merged with a
    neighbouring one. Nodes that are not descriptors are list heads: stepped over.
    """
    found = []
    node = start + offset
    for _ in range(limit):
        nxt = _read_ptr(mem, node)
        if nxt is None or nxt == start + offset:
            break
        if _is_descriptor(mem, nxt - offset):
            found.append(nxt - offset)
        node = nxt
    return found


def calibrate(mem: _Memory, libc: ctypes.CDLL) -> Layout:
    """Find the tid and start-routine offsets on threads whose answers we know."""
    layout = Layout()
    me = libc.pthread_self()
    block = mem.read(me, _DESCRIPTOR_BYTES)
    if not block:
        layout.errors.append("cannot read this thread's descriptor")
        return layout
    my_tid = threading.get_native_id()
    tid_offsets = [
        o for o in range(0, len(block) - 4, 4) if struct.unpack_from("<i", block, o)[0] == my_tid
    ]
    if len(tid_offsets) != 1:
        layout.errors.append(f"tid offset ambiguous or absent: {tid_offsets}")
        return layout
    layout.tid_offset = tid_offsets[0]
    layout.list_offset = _find_list_offset(mem, me, block, layout.tid_offset)
    # This function runs on a thread started by Python's threading module: its
    # start routine lies in the object that holds the interpreter's thread code.
    python_object, _ = _object_of(
        libc, ctypes.cast(ctypes.pythonapi.PyThread_start_new_thread, ctypes.c_void_p).value or 0
    )
    layout.python_object = python_object
    candidates = [
        o
        for o in range(layout.tid_offset, len(block) - 16, 8)
        if python_object
        and _object_of(libc, struct.unpack_from("<Q", block, o)[0])[0] == python_object
    ]
    if threading.current_thread() is threading.main_thread() or not candidates:
        layout.errors.append("start routine offset not found")
    else:
        layout.start_routine_offset = candidates[0]
    return layout


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
            self._mem: _Memory | None = _Memory()
            self._libc: ctypes.CDLL | None = _libc()
            self._main = self._libc.pthread_self()  # constructed on the main thread
        except OSError as e:
            self._mem = None
            self._libc = None
            self.errors.append(f"cannot read own memory: {e}")
        try:
            self._hash: Any = _std_hash()
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
            for addr in {*_find_descriptors(mem), *listed, libc.pthread_self(), self._main}:
                tid = _read_int32(mem, addr + self.layout.tid_offset)
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
        routine = _read_ptr(self._mem, addr + offset)
        arg = _read_ptr(self._mem, addr + offset + 8)
        if not routine:
            return
        thread.start_object, thread.start_symbol = _object_of(self._libc, routine)
        obj = thread.start_object or ""
        if arg and ("tensorflow" in obj or "tsl" in obj or "xla" in obj):
            # TF's PThread::ThreadFn gets a ThreadParams whose first member is the name.
            thread.tf_name = _read_std_string(self._mem, arg)

    def to_json(self) -> dict[str, Any]:
        layout = self.layout or Layout()
        return {
            "method": "glibc thread descriptors read from /proc/self/mem; "
            "trace_line_id = libstdc++ std::hash<std::thread::id>(pthread_t)",
            "tid_offset": layout.tid_offset,
            "start_routine_offset": layout.start_routine_offset,
            "python_object": layout.python_object,
            "list_offset": layout.list_offset,
            "snapshots": self.snapshots,
            "errors": self.errors,
            "threads": [asdict(t) for t in sorted(self.threads.values(), key=lambda t: t.tid)],
        }


def _comm(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def hook_python_threads(recorder: IdentityRecorder) -> None:
    """Have every Python thread report itself as it starts (see python_thread_started).

    ``Thread._bootstrap_inner`` runs on the new thread before its target in every CPython
    since 3.0; the wrapper calls through unchanged.
    """
    original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_inner(self: threading.Thread) -> None:
        recorder.python_thread_started(self)
        original(self)

    threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]


class IdentityWatcher:
    """Takes a snapshot as soon as new threads appear, so short-lived pools are seen too.

    A thread's descriptor (tid, start routine, TF's name for it) is complete before
    the thread runs, so one poll interval is enough; tf.data threads may live for
    only ~10 ms, hence the short interval (a listdir costs tens of microseconds).
    Python thread names are refreshed on every poll: a thread joins
    ``threading.enumerate()`` only once it runs, after its descriptor was read.
    """

    def __init__(self, recorder: IdentityRecorder, interval_s: float = 0.005) -> None:
        self.recorder = recorder
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tftrace-identity", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        self.recorder.snapshot()  # calibrates on this thread, whose start routine is known
        seen = set(self.recorder.threads)
        while not self._stop.wait(self._interval):
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
