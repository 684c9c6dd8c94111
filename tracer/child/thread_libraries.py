"""The BLAS and OpenMP libraries of the recorded process and their thread pools, as
threadpoolctl reports them: ``thread_libraries.json`` in the run directory.

TensorFlow's pools are sized by TF (the manifest says how); a NumPy or SciPy product runs on
its BLAS library's own pool (OpenBLAS, MKL, BLIS, an OpenMP runtime), sized by that library
from ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OMP_NUM_THREADS`` or the CPUs. Only the
library itself knows the size it took, so it is asked from inside the process, late enough
that the workload has loaded it: when the profiler window closes and as the recording ends.

Each snapshot keeps, per library, threadpoolctl's fields and the file's name alone (no
directory: a run directory is shared). Taking one never raises: a failure is its ``error``.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

from ..rundir import read_json_or_none, write_json_atomic

THREAD_LIBRARIES = Path("thread_libraries.json")
# threadpoolctl's fields kept as they are (``filepath`` is kept as ``file``, its name only).
_FIELDS = ("user_api", "internal_api", "prefix", "num_threads", "version", "threading_layer")
# The variables the libraries read their size from, as the process had them when asked: the
# workload may set them itself before it imports NumPy, after the recorder wrote the manifest.
SIZE_ENV_VARS = (
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "FLEXIBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
)


def _library(info: dict[str, Any]) -> dict[str, Any]:
    kept = {k: info.get(k) for k in _FIELDS if k in info}
    kept["file"] = os.path.basename(str(info.get("filepath") or "")) or None
    return kept


def snapshot(when: str) -> dict[str, Any]:
    """threadpoolctl's report now, labelled ``when``; never raises."""
    taken: dict[str, Any] = {
        "when": when,
        "libraries": [],
        "env": {k: os.environ[k] for k in SIZE_ENV_VARS if k in os.environ},
        "error": None,
    }
    try:
        import threadpoolctl

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # its warnings go here, not on the workload's stderr
            info = threadpoolctl.threadpool_info()
        taken["threadpoolctl"] = getattr(threadpoolctl, "__version__", None)
        taken["libraries"] = [_library(i) for i in info if isinstance(i, dict)]
        if caught:
            taken["warnings"] = [str(w.message) for w in caught]
    except ImportError:
        taken["error"] = "threadpoolctl is not installed"
    except Exception as e:  # a library that answers badly must not stop the workload
        taken["error"] = f"{type(e).__name__}: {e}"
    return taken


class ThreadLibraries:
    """The snapshots of one recording, in the order taken."""

    def __init__(self) -> None:
        self.snapshots: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # the profiler window may close on its timer's thread

    def take(self, when: str) -> None:
        taken = snapshot(when)
        with self._lock:
            self.snapshots.append(taken)

    def write(self, run_dir: Path) -> None:
        try:
            with self._lock:
                data = {"snapshots": list(self.snapshots)}
            write_json_atomic(run_dir / THREAD_LIBRARIES, data)
        except OSError:
            pass  # a lost file is a lost fact, never a lost run


def read_thread_libraries(root: Path) -> dict[str, Any] | None:
    """``thread_libraries.json`` of a run directory; None when absent or damaged."""
    return read_json_or_none(root / THREAD_LIBRARIES)
