"""Will a trace fit in memory? Checked before it is read, so that a trace too large fails with
one line saying so, never with the kernel's out-of-memory kill halfway through.

The need is the file's size times what an analysis was measured to take per byte of trace
(``benchmarks/analysis_speed.py``: its peak memory over the file's size, on the large trace;
xplane files differ little in bytes per event). What is available is the least of: the
kernel's MemAvailable, the headroom under this process's cgroup memory limit, the headroom
under its address-space limit (``ulimit -v``), and ``TFTRACE_MEMORY_LIMIT`` (bytes, or with
K, M or G: a cap for a shared machine).
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path

from tftrace.errors import TraceError
from tftrace.tracer.environment import memory_headroom

# Peak memory per byte of xplane file: analyze, report and tensorboard took 5.1-5.7x on the
# benchmark's 55 MB trace (benchmarks/analysis_speed.py); 8 leaves a margin for traces with
# more threads and steps. Export takes more (2.0 GB there, 37x) and is not covered.
BYTES_PER_TRACE_BYTE = 8.0
ENV_LIMIT = "TFTRACE_MEMORY_LIMIT"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class TraceTooLarge(TraceError):
    """The trace needs more memory than is available."""


def needed(trace_bytes: int) -> int:
    return int(trace_bytes * BYTES_PER_TRACE_BYTE)


def parse_size(text: str) -> int:
    """``"2G"`` -> 2 GiB; a bare number is bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text.upper())
    if not match:
        raise TraceError(f"{ENV_LIMIT}={text!r}: not a size (bytes, or a number with K, M or G)")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def available() -> tuple[int | None, str]:
    """The bytes this process may still take, and what limits it; None when nothing says."""
    limits: list[tuple[int, str]] = []
    if os.environ.get(ENV_LIMIT):
        limits.append((parse_size(os.environ[ENV_LIMIT]), ENV_LIMIT))
    meminfo = _meminfo_available()
    if meminfo is not None:
        limits.append((meminfo, "available memory"))
    cgroup = memory_headroom()
    if cgroup is not None:
        limits.append((cgroup, "the cgroup's memory limit"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append((max(soft - _vm_size(), 0), "the address-space limit (ulimit -v)"))
    if not limits:
        return None, "unknown"
    return min(limits)


def check_fits(path: Path, trace_bytes: int) -> None:
    """Raise ``TraceTooLarge`` (one line: the sizes and what to do) when a trace of
    ``trace_bytes`` would not fit."""
    need = needed(trace_bytes)
    free, what = available()
    if free is None or need <= free:
        return
    raise TraceTooLarge(
        f"{path}: {_human(trace_bytes)} of trace needs about {_human(need)} of memory to "
        f"analyse, and {what} leaves {_human(free)}: record a shorter span (tftrace record "
        "--delay S --duration S), or analyse it on a machine with more memory"
    )


def read_limit(per_byte: float) -> int | None:
    """The largest file that may be read now, when reading it takes ``per_byte`` bytes of
    memory per byte of file (its tables, its Python objects); None when nothing limits it.
    What a run's other files (JSON, ``.npz`` chunks) are read under (``tracer.safe_read``)."""
    free, _ = available()
    return None if free is None else int(free / per_byte)


def _human(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _meminfo_available() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _vm_size() -> int:
    try:
        return int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def small_pages() -> None:
    """Ask numpy not to advise transparent huge pages for its large arrays, as
    ``NUMPY_MADVISE_HUGEPAGE=0`` does (an explicit setting of that variable stands).

    The command line calls this, not ``import tftrace``: it changes numpy for the whole process.
    Where the kernel compacts memory for such advice (THP defrag ``madvise``), page faults in
    fresh arrays stall: ``tftrace analyze`` of a 20 M-event trace took 25.5 s with the advice
    (15.3 s of it system time) and 14.6 s without (5.6 s), on 2 cores.
    """
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    setter = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)
