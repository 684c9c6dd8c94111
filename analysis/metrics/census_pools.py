"""The census's pools: which pool each thread of a run counts in, and each pool's size and
where it came from, in words (``census.py`` adds what the pools used of the CPUs).

TF's inter- and intra-op sizes are the manifest's (config, ``TF_NUM_*_THREADS``, the default).
A BLAS or OpenMP library's is what the library itself told threadpoolctl inside the workload
(``thread_libraries.json``), beside the variable it read it from; tf.data's pools are sized per
dataset and no option is visible process-wide, so only its threads' TF names are given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import POOL_ENV_VARS
from tftrace.tracer.manifest_reader import PoolSetting

INTER_OP, INTRA_OP, TF_DATA, TF_OTHER = "inter-op", "intra-op", "tf.data", "tf-other"
BLAS, PYTHON, PROFILER, TFTRACE, UNKNOWN = (
    "blas/openmp",
    "python",
    "grpc/profiler",
    "tftrace",
    "unknown",
)
# The census's pools, in the order shown: TF's sized pools first, the unsized ones last.
POOLS = (INTER_OP, INTRA_OP, TF_DATA, TF_OTHER, BLAS, PYTHON, PROFILER, TFTRACE, UNKNOWN)
_OF_POOL = {
    Pool.INTER_OP.value: INTER_OP,
    Pool.INTRA_OP.value: INTRA_OP,
    Pool.TF_DATA.value: TF_DATA,
    Pool.TF_OTHER.value: TF_OTHER,
    Pool.BLAS_OPENMP.value: BLAS,
    Pool.PYTHON_MAIN.value: PYTHON,
    Pool.PYTHON_OTHER.value: PYTHON,
    Pool.PROFILER.value: PROFILER,
}
_MANIFEST_KEY = {INTER_OP: "inter_op", INTRA_OP: "intra_op"}
TFTRACE_THREAD_PREFIX = "tftrace-"  # the Python threads tftrace starts in the workload
# The variables each library reads its pool size from, first set wins (the libraries' order).
SIZE_VARS = {
    "openblas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"),
    "mkl": ("MKL_NUM_THREADS", "OMP_NUM_THREADS"),
    "blis": ("BLIS_NUM_THREADS", "OMP_NUM_THREADS"),
    "flexiblas": ("FLEXIBLAS_NUM_THREADS", "OMP_NUM_THREADS"),
    "openmp": ("OMP_NUM_THREADS",),
}
ANY_SIZE_VAR = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "OMP_NUM_THREADS")


def census_pools(threads: pd.DataFrame) -> np.ndarray:
    """The census pool of each thread (row of ``run.threads``): its pool, with Python's main
    and other threads as one, tftrace's own threads apart from TF's profiler, and threads of
    no known pool (``other``, ``unmapped``) as unknown."""
    pools = threads["pool"].astype(str).map(_OF_POOL).fillna(UNKNOWN).to_numpy(dtype=object)
    names = threads["python_name"].astype(object).to_numpy()
    ours = np.array([isinstance(n, str) and n.startswith(TFTRACE_THREAD_PREFIX) for n in names])
    return np.where(ours, TFTRACE, pools)


def _tf_pool_source(setting: PoolSetting, env_var: str) -> str:
    if setting.source == "config":
        return "tf.config.threading"
    if setting.source == "env":
        return f"{env_var}={setting.env}"
    if setting.source and setting.source.startswith("default"):
        cpus = f" ({setting.cpus})" if setting.cpus else ""
        return f"default: one per schedulable CPU{cpus}"
    return setting.source or "unknown"


def _counted(values: Sequence[str], limit: int = 3) -> str:
    """'name x N' for the most frequent ``limit`` values, most frequent first."""
    common = Counter(values).most_common()
    text = ", ".join(f"{v} x{n}" if n > 1 else v for v, n in common[:limit])
    return text + (f", {len(common) - limit} more" if len(common) > limit else "")


def _library_size_var(library: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    for name in SIZE_VARS.get(str(library.get("internal_api")), ("OMP_NUM_THREADS",)):
        if name in env:
            return f"{name}={env[name]}"
    return None


def _library_text(library: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """'OPENBLAS_NUM_THREADS=2; openblas 0.3.27: 2 threads (threadpoolctl)'."""
    name = " ".join(
        str(library[k]) for k in ("internal_api", "version") if library.get(k) is not None
    )
    said = f"{name or 'a library'}: {library.get('num_threads')} threads (threadpoolctl)"
    var = _library_size_var(library, env)
    return f"{var}; {said}" if var else f"{said}, no variable set"


def last_report(data: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The last threadpoolctl snapshot that did not fail (it has every library the workload
    loaded), else the last one; None without any."""
    snapshots = [s for s in (data or {}).get("snapshots", []) if isinstance(s, dict)]
    good = [s for s in snapshots if not s.get("error")]
    return (good or snapshots)[-1] if snapshots else None


def _blas_size(
    report: Mapping[str, Any] | None, manifest_env: Mapping[str, str]
) -> tuple[int | None, str]:
    """The BLAS/OpenMP pools' size (each library's ``num_threads``, added up) and its source:
    the variable that set it and threadpoolctl's word; without a report, the variable alone."""
    env = {**manifest_env, **((report or {}).get("env") or {})}
    libraries = [lib for lib in (report or {}).get("libraries", []) if isinstance(lib, dict)]
    if libraries:
        sizes = [lib.get("num_threads") for lib in libraries]
        size = sum(s for s in sizes if isinstance(s, int)) or None
        return size, "; ".join(_library_text(lib, env) for lib in libraries)
    if report is not None and not report.get("error"):
        return None, "no BLAS/OpenMP library loaded (threadpoolctl)"
    why = f"threadpoolctl: {report['error']}" if report else "no threadpoolctl report"
    var = next((v for v in ANY_SIZE_VAR if v in env), None)
    if var is None:
        return None, f"default: one per CPU (no variable set; {why})"
    value = env[var]
    return (int(value) if value.isdigit() else None), f"{var}={value} ({why})"


def pool_sizes(
    run: Run, threads: pd.DataFrame, pools: np.ndarray, libraries: Mapping[str, Any] | None
) -> dict[str, tuple[int | None, str]]:
    """(size, source in words) per census pool."""
    manifest = run.manifest
    tf_names = threads["tf_name"].astype(object).to_numpy()
    evidence = threads["evidence"].astype(str).to_numpy()
    main = (threads["pool"].astype(str) == Pool.PYTHON_MAIN.value).to_numpy()

    def names(pool: str, values: np.ndarray) -> list[str]:
        return [str(v) for v, p in zip(values, pools, strict=True) if p == pool and pd.notna(v)]

    out: dict[str, tuple[int | None, str]] = {}
    for pool in (INTER_OP, INTRA_OP):
        setting = manifest.pool(_MANIFEST_KEY[pool])
        source = _tf_pool_source(setting, POOL_ENV_VARS[_MANIFEST_KEY[pool]])
        out[pool] = (setting.size, source if setting.size is not None else "unknown")
    seen = names(TF_DATA, tf_names)
    out[TF_DATA] = (
        None,
        "per dataset, not visible process-wide" + (f"; seen: {_counted(seen)}" if seen else ""),
    )
    tf_other = names(TF_OTHER, tf_names)
    out[TF_OTHER] = (None, "fixed by TF" + (f": {_counted(tf_other)}" if tf_other else ""))
    out[BLAS] = _blas_size(libraries, manifest.env)
    others = int(((pools == PYTHON) & ~main).sum())
    out[PYTHON] = (None, f"the main thread + {others} threading thread{'s' * (others != 1)}")
    out[PROFILER] = (None, "TF's profiler and gRPC")
    out[TFTRACE] = (None, "tftrace's own, in the workload")
    out[UNKNOWN] = (None, f"not decided: {_counted(names(UNKNOWN, evidence)) or 'no evidence'}")
    return out
