"""Read this process's glibc thread descriptors: each OS thread's TF name and trace line id.

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
from dataclasses import dataclass, field
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
class Layout:
    """Offsets inside ``struct pthread``, found by calibration."""

    tid_offset: int | None = None
    start_routine_offset: int | None = None
    python_object: str | None = None  # the library holding Python's thread start code
    list_offset: int | None = None  # glibc links the descriptors of running threads
    errors: list[str] = field(default_factory=list)


class Memory:
    """This process's memory, read through ``/proc/self/mem``: a bad address is ``None``."""

    def __init__(self) -> None:
        self._fd = os.open("/proc/self/mem", os.O_RDONLY)

    def read(self, address: int, size: int) -> bytes | None:
        try:
            return os.pread(self._fd, size, address)
        except (OSError, OverflowError):
            return None

    def close(self) -> None:
        os.close(self._fd)


def open_libc() -> ctypes.CDLL:
    """libc with ``pthread_self`` and ``dladdr`` typed for the calls made here."""
    libc = ctypes.CDLL(None)
    libc.pthread_self.restype = ctypes.c_ulong
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    return libc


def std_hash() -> Any:
    """libstdc++'s ``_Hash_bytes``, the function behind ``std::hash<std::thread::id>``."""
    lib = ctypes.CDLL("libstdc++.so.6")
    fn = lib._ZSt11_Hash_bytesPKvmm
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    return fn


def trace_line_id(pthread: int, hash_fn: Any) -> int:
    """The id of the thread's line in the TF trace: ``std::hash`` of its ``pthread_t``."""
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


def find_descriptors(mem: Memory) -> list[int]:
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


def read_int32(mem: Memory, address: int) -> int | None:
    raw = mem.read(address, 4)
    return struct.unpack("<i", raw)[0] if raw and len(raw) == 4 else None


def read_ptr(mem: Memory, address: int) -> int | None:
    raw = mem.read(address, 8)
    return struct.unpack("<Q", raw)[0] if raw and len(raw) == 8 else None


def object_of(libc: ctypes.CDLL, address: int) -> tuple[str | None, str | None]:
    """(shared object file name, symbol) that holds ``address``, as far as ``dladdr`` knows."""
    info = _DlInfo()
    if not address or not libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return None, None
    fname = os.path.basename(info.dli_fname.decode()) if info.dli_fname else None
    sname = info.dli_sname.decode() if info.dli_sname else None
    return fname, sname


def read_std_string(mem: Memory, address: int) -> str | None:
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


def _is_descriptor(mem: Memory, addr: int) -> bool:
    raw = mem.read(addr, 24)
    if not raw or len(raw) != 24:
        return False
    tcb, _, self_ptr = struct.unpack("<QQQ", raw)
    return tcb == addr == self_ptr


def _find_list_offset(mem: Memory, me: int, block: bytes, below: int) -> int | None:
    """Offset of ``struct pthread.list``: a doubly linked node (prev(next(x)) == x) whose
    neighbour is another thread's node or the list head glibc keeps."""
    for offset in range(24, below, 8):
        node = me + offset
        nxt, prv = struct.unpack_from("<QQ", block, offset)
        if nxt == node or not nxt or not prv:
            continue
        if read_ptr(mem, nxt + 8) == node and read_ptr(mem, prv) == node:
            return offset
    return None


def walk_thread_list(mem: Memory, start: int, offset: int, limit: int = 100_000) -> list[int]:
    """Every descriptor on the list that ``start`` is on (glibc's running threads).

    Unlike the mapping scan, this finds a thread whose stack mapping merged with a
    neighbouring one. Nodes that are not descriptors are list heads: stepped over.
    """
    found = []
    node = start + offset
    for _ in range(limit):
        nxt = read_ptr(mem, node)
        if nxt is None or nxt == start + offset:
            break
        if _is_descriptor(mem, nxt - offset):
            found.append(nxt - offset)
        node = nxt
    return found


def calibrate(mem: Memory, libc: ctypes.CDLL) -> Layout:
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
    python_object, _ = object_of(
        libc, ctypes.cast(ctypes.pythonapi.PyThread_start_new_thread, ctypes.c_void_p).value or 0
    )
    layout.python_object = python_object
    candidates = [
        o
        for o in range(layout.tid_offset, len(block) - 16, 8)
        if python_object
        and object_of(libc, struct.unpack_from("<Q", block, o)[0])[0] == python_object
    ]
    if threading.current_thread() is threading.main_thread() or not candidates:
        layout.errors.append("start routine offset not found")
    else:
        layout.start_routine_offset = candidates[0]
    return layout
