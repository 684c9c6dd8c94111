"""Findings: what the figures mean for the thread settings, each with its evidence and one action.

A finding is data (``Finding``); the rules are small functions of a run and its analysis,
each documented with the threshold it uses. ``diagnose`` runs them all and orders the
findings by severity. Renderers (terminal, HTML, TensorBoard) only display them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.concurrency import cores_of
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.render.terminal import Analysis


class Severity(str, enum.Enum):
    HIGH = "high"  # costs a large share of the window; act on it first
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"  # worth knowing; no time is lost to it


SEVERITY_ORDER = {s: i for i, s in enumerate(Severity)}


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    pool: str | None
    message: str
    action: str
    evidence: dict[str, Any] = field(default_factory=dict)
    window: tuple[int, int] | None = None


PY_FUNC_OPS = ("EagerPyFunc", "PyFunc", "PyFuncStateless")  # tf.py_function / tf.numpy_function


def _share(analysis: Analysis, category: str) -> float:
    b = analysis.breakdown.set_index("category")["share"]
    return float(b.get(category, 0.0))


def _pool_row(analysis: Analysis, pool: Pool) -> pd.Series | None:
    rows = analysis.pools[analysis.pools["pool"] == pool.value]
    return rows.iloc[0] if len(rows) else None


def _cpu_row(analysis: Analysis, pool: Pool) -> pd.Series | None:
    rows = analysis.cpu[analysis.cpu["pool"] == pool.value]
    return rows.iloc[0] if len(rows) else None


def _configured(run: Run, key: str) -> dict[str, Any]:
    return dict(((run.manifest or {}).get("pools") or {}).get(key) or {})


def _severity(share: float) -> Severity:
    return Severity.HIGH if share >= 0.25 else Severity.MEDIUM if share >= 0.1 else Severity.LOW


# Rule 1 -----------------------------------------------------------------------------------
QUEUE_SHARE = 0.05  # closures waited with a core free for >= 5 % of the window


def idle_cores_while_work_waited(run: Run, analysis: Analysis) -> list[Finding]:
    """Closures queued on the inter-op pool while fewer threads were busy than cores."""
    cores = cores_of(run)
    inter = _pool_row(analysis, Pool.INTER_OP)
    share = _share(analysis, "waiting for a thread")
    regions = run.regions.dropna(subset=["queue_ns"])
    pools = run.threads.set_index("thread")["pool"].astype(str)
    mine = regions[regions["thread"].map(pools) == Pool.INTER_OP.value]
    lo, hi = analysis.window
    waited = float(mine["queue_ns"].sum()) / (hi - lo) if hi > lo else 0.0
    if cores is None or inter is None or inter["peak"] >= cores or waited < QUEUE_SHARE:
        return []
    size = _configured(run, "inter_op").get("size")
    return [
        Finding(
            "idle-cores-while-work-waited",
            _severity(waited),
            Pool.INTER_OP.value,
            f"Independent ops waited for an inter-op thread {waited:.0%} of the time while at most "
            f"{int(inter['peak'])} of {cores} cores worked on them.",
            f"Raise inter_op_parallelism_threads (now {size}) towards {cores}: "
            f"tf.config.threading.set_inter_op_parallelism_threads({cores}) before any op runs, "
            f"or TF_NUM_INTEROP_THREADS={cores}.",
            {
                "queued_share": round(waited, 4),
                "waiting_for_a_thread_share": round(share, 4),
                "inter_op_peak": int(inter["peak"]),
                "inter_op_size": size,
                "cores": cores,
            },
        )
    ]


# Rule 2 -----------------------------------------------------------------------------------
SMALL_OP_PARALLELISM = 1.2  # top ops kept fewer than 1.2 Eigen workers busy on average
TOP_OP_SHARE = 0.2  # ... while taking >= 20 % of the window


# Op types that are not Eigen work: function calls, input waits, and Python (python-bound).
NOT_SPLITTABLE = ("__inference_", "IteratorGetNext", *PY_FUNC_OPS)


def ops_too_small_to_split(run: Run, analysis: Analysis) -> list[Finding]:
    size = _configured(run, "intra_op").get("size") or 0
    ops = analysis.top_ops
    ops = ops[~ops["op_type"].astype(str).str.startswith(NOT_SPLITTABLE)]
    lo, hi = analysis.window
    if size < 2 or ops.empty or hi <= lo:
        return []
    total_ns = ops["total_ms"].to_numpy() * 1e6
    share = float(total_ns.sum()) / (hi - lo)
    parallelism = float((ops["parallelism"] * total_ns).sum() / max(total_ns.sum(), 1))
    if share < TOP_OP_SHARE or parallelism >= SMALL_OP_PARALLELISM:
        return []
    top = ", ".join(
        f"{t} ({p:.2f})" for t, p in zip(ops["op_type"][:3], ops["parallelism"][:3], strict=False)
    )
    return [
        Finding(
            "ops-too-small-to-split",
            _severity(share),
            Pool.INTRA_OP.value,
            f"The intra-op pool has {size} threads, but the ops taking {share:.0%} of the time "
            f"kept "
            f"only {parallelism:.2f} Eigen workers busy on average: they are too small to split.",
            "Give each op more work (larger batches), or fewer intra-op threads and more inter-op "
            "threads so that independent small ops run side by side.",
            {
                "intra_op_size": size,
                "top_ops_share": round(share, 4),
                "mean_parallelism": round(parallelism, 3),
                "top_ops": top,
            },
        )
    ]


# Rule 3 -----------------------------------------------------------------------------------
WAIT_RATIO = 0.2  # workers runnable but not running >= 20 % of their CPU time


def intra_pool_size_vs_cores(run: Run, analysis: Analysis) -> list[Finding]:
    cores = cores_of(run)
    intra = _configured(run, "intra_op")
    inter = _configured(run, "inter_op")
    size = intra.get("size")
    cpu = _cpu_row(analysis, Pool.INTRA_OP)
    if not cores or not size or cpu is None:
        return []
    out = []
    wait, on_cpu = float(cpu["wait_s"]), float(cpu["cpu_s"])
    if size > cores and on_cpu > 0 and wait >= WAIT_RATIO * on_cpu:
        out.append(
            Finding(
                "intra-pool-oversubscribed",
                Severity.HIGH if wait >= on_cpu else Severity.MEDIUM,
                Pool.INTRA_OP.value,
                f"{size} intra-op threads share {cores} cores: the workers waited {wait:.2f} s for "
                f"a core while running {on_cpu:.2f} s.",
                f"Set intra_op_parallelism_threads to {cores} (TF_NUM_INTRAOP_THREADS={cores}).",
                {
                    "intra_op_size": size,
                    "cores": cores,
                    "run_queue_wait_s": round(wait, 4),
                    "cpu_s": round(on_cpu, 4),
                    "inter_x_intra": (inter.get("size") or 0) * size,
                },
            )
        )
    row = _pool_row(analysis, Pool.INTRA_OP)
    if 1 < size < cores and row is not None and row["peak"] >= size and row["mean"] >= 0.8 * size:
        out.append(
            Finding(
                "intra-pool-smaller-than-cores",
                Severity.MEDIUM,
                Pool.INTRA_OP.value,
                f"All {size} intra-op threads were busy {row['mean'] / size:.0%} of the time, with "
                f"{cores - size} more cores available.",
                f"Try intra_op_parallelism_threads={cores}.",
                {"intra_op_size": size, "cores": cores, "mean": round(float(row["mean"]), 3)},
            )
        )
    return out


# Rule 4 -----------------------------------------------------------------------------------
INLINE_SHARE = 0.2  # ops ran inline on their callers >= 20 % of the window


def inline_ops(run: Run, analysis: Analysis) -> list[Finding]:
    size = _configured(run, "intra_op").get("size")
    cores = cores_of(run) or 0
    if size != 1 or cores < 2:
        return []
    share = _share(analysis, "op, intra idle")
    if share < INLINE_SHARE:
        return []
    return [
        Finding(
            "ops-run-inline",
            _severity(share),
            Pool.INTRA_OP.value,
            f"intra_op_parallelism_threads is 1: every op ran on the thread that called it "
            f"({share:.0%} of the time), one core at a time, with {cores - 1} "
            f"core{'s' if cores - 1 != 1 else ''} free.",
            f"Set intra_op_parallelism_threads to {cores} (or 0 for one per core) so large ops "
            "are split across cores.",
            {"intra_op_size": size, "cores": cores, "op_intra_idle_share": round(share, 4)},
        )
    ]


# Rule 5 -----------------------------------------------------------------------------------
PYTHON_SHARE = 0.4


def python_bound(run: Run, analysis: Analysis) -> list[Finding]:
    share = _share(analysis, "python / host")
    if share < PYTHON_SHARE:
        return []
    ops = analysis.top_ops
    py = ops[ops["op_type"].isin(PY_FUNC_OPS)]
    where = "tf.py_function / py_func ops" if len(py) else "Python code on the main thread"
    return [
        Finding(
            "python-bound",
            _severity(share),
            None,
            f"{share:.0%} of the time is Python ({where}), under the GIL: no thread setting can "
            "make it faster.",
            "Move the work into TensorFlow ops (vectorise, tf.data transformations instead of "
            "py_function), or run it outside the step.",
            {"python_share": round(share, 4), "python_ops_ms": float(py["total_ms"].sum())},
        )
    ]


# Rule 6 -----------------------------------------------------------------------------------
STARVING_SHARE = 0.3  # the main thread waited in IteratorGetNext >= 30 % of the window


def input_pipeline(run: Run, analysis: Analysis) -> list[Finding]:
    ev = run.events
    main = run.threads.loc[run.threads["pool"] == Pool.PYTHON_MAIN.value, "thread"]
    names = ev["name"].astype(str)
    lo, hi = analysis.window
    get_next = ev[ev["thread"].isin(main) & names.str.startswith("IteratorGetNext")]
    waiting = float((get_next["end_ns"] - get_next["start_ns"]).sum()) / max(hi - lo, 1)
    if waiting < STARVING_SHARE:
        return []
    data = _pool_row(analysis, Pool.TF_DATA)
    data_mean = float(data["mean"]) if data is not None else 0.0
    cores = cores_of(run) or 1
    sequential = data_mean <= 1.1 and cores > 1
    return [
        Finding(
            "input-pipeline-starves-step",
            _severity(waiting),
            Pool.TF_DATA.value,
            f"The step waited for input {waiting:.0%} of the time; the tf.data pool kept "
            f"{data_mean:.2f} threads busy on average"
            + (" (its map runs one element at a time)." if sequential else "."),
            (
                "Set num_parallel_calls=tf.data.AUTOTUNE on map/interleave and add .prefetch(); "
                if sequential
                else "Make the input pipeline cheaper or add .prefetch(); "
            )
            + "cache or precompute what does not change between epochs.",
            {
                "waiting_for_input_share": round(waiting, 4),
                "tf_data_mean_busy": round(data_mean, 3),
                "cores": cores,
            },
        )
    ]


# Rule 7 -----------------------------------------------------------------------------------
SPIN_RATIO = 1.3  # Eigen workers' CPU >= 1.3 x their traced busy time ...
SPIN_MIN_S = 0.05  # ... and at least 50 ms more


def eigen_spin(run: Run, analysis: Analysis) -> list[Finding]:
    cpu = _cpu_row(analysis, Pool.INTRA_OP)
    if cpu is None or not np.isfinite(cpu["cpu_s"]):
        return []
    on_cpu, busy = float(cpu["cpu_s"]), float(cpu["busy_s"])
    if on_cpu < SPIN_RATIO * busy or on_cpu - busy < SPIN_MIN_S:
        return []
    return [
        Finding(
            "eigen-spin",
            Severity.MEDIUM
            if on_cpu - busy > 0.1 * (analysis.window[1] - analysis.window[0]) / 1e9
            else Severity.LOW,
            Pool.INTRA_OP.value,
            f"Intra-op workers used {on_cpu:.2f} s of CPU for {busy:.2f} s of traced work: "
            "the rest "
            "is spinning while waiting for work, taking cores from other threads.",
            "If other threads need those cores, lower intra_op_parallelism_threads so fewer "
            "workers spin.",
            {"cpu_s": round(on_cpu, 4), "busy_s": round(busy, 4)},
        )
    ]


# Rule 8 -----------------------------------------------------------------------------------
def pinned_sizes_vs_cpus(run: Run, analysis: Analysis) -> list[Finding]:
    host = (run.manifest or {}).get("host") or {}
    cpus = cores_of(run)
    quota = host.get("cpu_quota")
    out = []
    for key, pool in (("intra_op", Pool.INTRA_OP), ("inter_op", Pool.INTER_OP)):
        info = _configured(run, key)
        size, source = info.get("size"), info.get("source", "")
        if not size or not cpus:
            continue
        limit = min(cpus, max(1, int(quota))) if quota else cpus
        if source in ("env", "config") and size != limit:
            how = (
                "TF_NUM_" + key.replace("_op", "OP").upper() + "_THREADS"
                if source == "env"
                else f"tf.config.threading.set_{key}_parallelism_threads"
            )
            out.append(
                Finding(
                    f"{key.replace('_', '-')}-pinned-vs-cpus",
                    Severity.LOW,
                    pool.value,
                    f"{key} is pinned to {size} by {how}, but this process may use {limit} CPUs.",
                    f"Use {limit}, or leave it at 0 (one per CPU) unless the run shares the "
                    "machine.",
                    {"size": size, "source": source, "cpus_allowed": cpus, "cgroup_quota": quota},
                )
            )
        elif source.startswith("default") and quota and quota < size:
            out.append(
                Finding(
                    f"{key.replace('_', '-')}-exceeds-cpu-quota",
                    Severity.MEDIUM,
                    pool.value,
                    f"TF sized {key} by the {size} CPUs it may be scheduled on, but the cgroup "
                    "quota "
                    f"allows {quota:g} CPUs: threads will queue for CPU time.",
                    f"Set {key} to {max(int(quota), 1)} explicitly.",
                    {"size": size, "cgroup_quota": quota, "cpus_allowed": cpus},
                )
            )
    return out


# Rule 9 -----------------------------------------------------------------------------------
def setters_too_late(run: Run, analysis: Analysis) -> list[Finding]:
    calls = ((run.manifest or {}).get("workload") or {}).get("setter_calls") or []
    failed = [c for c in calls if c.get("error")]
    if not failed:
        return []
    pools = (run.manifest or {}).get("pools") or {}
    asked = ", ".join(f"{c['setter']}({c['value']})" for c in failed)
    ran = ", ".join(f"{k}={v.get('size')}" for k, v in pools.items())
    return [
        Finding(
            "threading-set-too-late",
            Severity.HIGH,
            None,
            f"The script called {asked} after TensorFlow had started; it failed "
            f"({failed[0]['error']}), so the run used {ran}.",
            "Call tf.config.threading.set_*_parallelism_threads before the first op, or set "
            "TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS in the environment.",
            {"calls": failed, "effective": {k: v.get("size") for k, v in pools.items()}},
        )
    ]


RULES: tuple[Callable[[Run, Analysis], list[Finding]], ...] = (
    idle_cores_while_work_waited,
    ops_too_small_to_split,
    intra_pool_size_vs_cores,
    inline_ops,
    python_bound,
    input_pipeline,
    eigen_spin,
    pinned_sizes_vs_cpus,
    setters_too_late,
)


def diagnose(run: Run, analysis: Analysis) -> list[Finding]:
    """Every rule's findings, most severe first."""
    window = analysis.window or trace_window(run)
    found = [
        Finding(**{**f.__dict__, "window": f.window or window})
        for rule in RULES
        for f in rule(run, analysis)
    ]
    return sorted(found, key=lambda f: SEVERITY_ORDER[f.severity])
