"""The Chrome Trace Event Format pieces every exported track shares: where a thread's events
go (``Track``: pid per pool, tid), slices as columns, exact microseconds, and timed events
before sorting. ``trace.py`` builds the whole trace from them; see its docstring for why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tftrace.analysis.model.pools import Pool

# Process order in the viewer: the threads that submit work first, then the pools that run it.
POOL_ORDER = (
    Pool.PYTHON_MAIN,
    Pool.PYTHON_OTHER,
    Pool.INTER_OP,
    Pool.INTRA_OP,
    Pool.TF_DATA,
    Pool.TF_OTHER,
    Pool.BLAS_OPENMP,
    Pool.PROFILER,
    Pool.OTHER,
    Pool.UNMAPPED,
)
# Above Linux's largest pid_max (2**22) and below 2**32 (Perfetto reads tids as uint32).
SYNTHETIC_TID_BASE = 1 << 30

# One timed event before sorting: (ts ns, -dur ns, rank at equal time, sequence, event).
Timed = tuple[int, int, int, int, dict[str, Any]]
SLICE_RANK, FLOW_RANK, COUNTER_RANK = 0, 1, 2


@dataclass(frozen=True)
class Track:
    """Where one thread's events go in the viewer."""

    thread: int
    pool: Pool
    pid: int
    tid: int
    name: str


def pool_pid(pool: Pool) -> int:
    """Fixed per pool (never 0: Perfetto and Chrome treat pid 0 as the kernel's)."""
    return POOL_ORDER.index(pool) + 1


def microseconds(ns: np.ndarray) -> list[float]:
    """int64 ns -> float µs that Perfetto's ``int64(us * 1000.0)`` turns back into ``ns``.

    ``ns / 1000`` is usually such a float, but not always (``2707831.993 * 1000`` may land
    one ulp under ``2707831993``, and truncation then loses a whole ns); the next float up
    or down then is. Chrome's viewer reads the same value to within 1e-9 µs.
    """
    ns = np.asarray(ns, dtype=np.int64)
    us = ns / 1000.0
    for _ in range(8):
        back = np.trunc(us * 1000.0)
        low, high = back < ns, back > ns
        if not (low.any() or high.any()):
            break
        us = np.where(low, np.nextafter(us, np.inf), us)
        us = np.where(high, np.nextafter(us, -np.inf), us)
    result: list[float] = us.tolist()
    return result


@dataclass(frozen=True)
class Slices:
    """Slices of one category as columns; ``args`` holds one dict per slice."""

    cat: str
    thread: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    names: list[str]
    args: list[dict[str, Any]]


def slice_events(slices: Slices, tracks: dict[int, Track], seq: int) -> list[Timed]:
    ts = microseconds(slices.start_ns)
    dur = microseconds(slices.end_ns - slices.start_ns)
    out: list[Timed] = []
    for i, thread in enumerate(slices.thread.tolist()):
        track = tracks[thread]
        start, length = int(slices.start_ns[i]), int(slices.end_ns[i] - slices.start_ns[i])
        event = {
            "ph": "X",
            "cat": slices.cat,
            "name": slices.names[i],
            "pid": track.pid,
            "tid": track.tid,
            "ts": ts[i],
            "dur": dur[i],
            "args": slices.args[i],
        }
        out.append((start, -length, SLICE_RANK, seq + i, event))
    return out
