"""The Chrome Trace Event Format pieces every exported track shares: where a thread's events
go (``Track``: pid per pool, tid), slices as columns, exact microseconds, and timed events
before sorting. ``trace.py`` builds the whole trace from them; see its docstring for why.
"""

from __future__ import annotations

from collections.abc import Mapping
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

# Events sort by (ts ns, -dur ns, rank at equal time, sequence).
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


def exact_microseconds(ns: np.ndarray) -> np.ndarray:
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
    return us


def microseconds(ns: np.ndarray) -> list[float]:
    """``exact_microseconds`` as Python floats (for a few events built as dicts)."""
    result: list[float] = exact_microseconds(ns).tolist()
    return result


@dataclass(frozen=True)
class Slices:
    """Slices of one category as columns. ``names``: one per slice (a list, an array or a
    categorical), or one string for all; ``args``: key -> one value per slice (NA or None:
    the key is left out of that slice's args), or one value for all."""

    cat: str
    thread: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    names: Any
    args: Mapping[str, Any]

    def __len__(self) -> int:
        return len(self.thread)
