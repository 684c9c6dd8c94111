"""Core use: how many of its usable cores the process kept busy over the window, and where the
idle core-time went, by cause.

Busy core-time is the kernel's CPU time of every thread of the process (the OS sampler's
cumulative ``cpu_ns``, interpolated at the window's edges as ``cpu_time.py`` does). Without
the sampler (a bare trace, ``--no-sampler``) the trace's busy threads stand in, capped at the
cores. Idle core-time = cores x window - busy, cut by sampler interval: the run-queue wait
of the process's threads in an interval takes the interval's idle cores first (they were
runnable, the cores went elsewhere), the rest goes to the cause of each instant of the trace,
the first that holds (see ``CAUSES`` and docs/analyses.md). The causes and an "unexplained"
remainder add up to the idle core-time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import merged_busy, pool_thread_keys, python_threads
from tftrace.analysis.metrics.concurrency import PoolConcurrency
from tftrace.analysis.metrics.contention import Contention, split_run_queue
from tftrace.analysis.metrics.cpu_time import process_cumulative
from tftrace.analysis.metrics.executor_learning import unlearned_note
from tftrace.analysis.metrics.idle_causes import (
    PYTHON,
    TOO_SMALL,
    UNEXPLAINED,
    causes_of_instants,
    value_at,
)
from tftrace.analysis.metrics.intervals import (
    StepFunction,
    clip,
    count_open,
    sorted_unique,
    union,
)
from tftrace.analysis.metrics.ops import top_op_types, working_ops
from tftrace.analysis.metrics.small_ops import SmallOps, small_ops
from tftrace.analysis.model.categories import is_in
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.trace_facts import FROM_TRACE
from tftrace.analysis.model.vocabulary import PY_FUNCTION_OPS

# (key, label), in the order an instant is assigned (first match wins); run-queue wait is
# taken per sampler interval before the others, "unexplained" is the rest.
CAUSES = (
    ("input", "input waits"),
    ("python", "Python on the main thread"),
    ("waiting", "waiting for a thread"),
    ("run_queue", "run-queue wait (oversubscription)"),
    ("other_processes", "run-queue wait: other processes held the cores"),
    ("steal", "run-queue wait: hypervisor steal"),
    ("quota", "run-queue wait: CPU quota throttling"),
    ("too_small", "ops too small to split"),
    ("chain", "one op runnable at a time (dependency chain)"),
    ("dispatch", "dispatch & executor overhead"),
    ("unexplained", "unexplained"),
)
LABELS = dict(CAUSES)
# No thread setting shortens these: the Amdahl bound keeps their wall time.
FIXED = ("input", "python")
# Idle core-time a thread setting can act on: more threads, fewer threads, or ops side by side.
RECOVERABLE = ("waiting", "run_queue", "too_small")
# Run-queue wait behind someone else: no thread setting wins it back (``contention.py``).
HELD_ELSEWHERE = ("other_processes", "steal", "quota")


@dataclass(frozen=True)
class CoreUse:
    """The headline of an analysis: ``mean_busy`` of ``cores`` kept busy over ``window``.

    ``causes`` has one row per cause (``cause``, ``label``, ``core_s``, ``share`` of the idle
    core-time), adding up to ``idle_core_s``; ``max_speedup`` bounds what any thread setting
    could gain (Amdahl: the ``fixed_share`` of the window no setting shortens, the rest at
    best spread over every core). ``cores``, ``causes`` and the bound are None where the CPU
    count is unknown. ``notes`` say where figures came from when not from a full recording.
    """

    window: tuple[int, int]
    busy_core_s: float
    busy_source: str  # "os sampler" or "trace"
    cores: int | None
    cores_basis: str
    causes: pd.DataFrame | None = None
    ops: int = 0
    steps: int = 0
    mean_op_us: float | None = None
    fixed_share: float = 0.0
    max_speedup: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Threads owning work by the trace (Python time on the main thread as one), capped at the
    # cores: the stand-in without the sampler, and beside it a count that neither spin nor
    # waiting for a core inflates.
    trace_busy_core_s: float = 0.0
    # The "ops too small to split" cause in full (its op types, instants, wall time and idle
    # core-time): what the ops-too-small-to-split rule reads. None where the trace cannot tell.
    small_ops: SmallOps | None = None

    @property
    def seconds(self) -> float:
        return (self.window[1] - self.window[0]) / 1e9

    @property
    def mean_busy(self) -> float:
        return self.busy_core_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def idle_core_s(self) -> float | None:
        return None if self.causes is None else float(self.causes["core_s"].sum())

    @property
    def recoverable_share(self) -> float:
        """Of the idle core-time, the share in causes a thread setting can act on."""
        if self.causes is None or not self.idle_core_s:
            return 0.0
        return float(self.causes.set_index("cause").loc[list(RECOVERABLE), "core_s"].sum()) / (
            self.idle_core_s
        )

    def main_cause(self) -> str | None:
        """The explained cause with the most idle core-time (None: nothing explained)."""
        if self.causes is None:
            return None
        known = self.causes[self.causes["cause"] != UNEXPLAINED]
        if known.empty or known["core_s"].max() <= 0:
            return None
        return str(known.loc[known["core_s"].idxmax(), "cause"])

    @property
    def run_queue_core_s(self) -> float:
        """Idle core-time the process's runnable threads waited for behind its own threads
        (0 without the sampler); the wait behind other processes, steal or the quota is
        ``held_elsewhere_core_s``."""
        if self.causes is None:
            return 0.0
        return float(self.causes.set_index("cause").loc["run_queue", "core_s"])

    @property
    def held_elsewhere_core_s(self) -> float:
        """Run-queue wait while other processes, the hypervisor or the quota held the cores."""
        if self.causes is None:
            return 0.0
        return float(self.causes.set_index("cause").loc[list(HELD_ELSEWHERE), "core_s"].sum())

    @property
    def ops_per_step(self) -> float | None:
        return self.ops / self.steps if self.steps else None

    def to_json(self) -> dict[str, Any]:
        causes = None
        if self.causes is not None:
            causes = [
                {
                    "cause": r.cause,
                    "label": r.label,
                    "core_s": round(float(r.core_s), 6),
                    "share": round(float(r.share), 4),
                }
                for r in self.causes.itertuples()
            ]
        return {
            "window_s": self.seconds,
            "busy_core_s": round(self.busy_core_s, 6),
            "busy_source": self.busy_source,
            "mean_busy_cores": round(self.mean_busy, 4),
            "cores": self.cores,
            "cores_basis": self.cores_basis,
            "use": round(self.mean_busy / self.cores, 4) if self.cores else None,
            "idle_core_s": None if self.idle_core_s is None else round(self.idle_core_s, 6),
            "idle_causes": causes,
            "main_cause": self.main_cause(),
            "recoverable_share": round(self.recoverable_share, 4),
            "ops": self.ops,
            "steps": self.steps,
            "ops_per_step": self.ops_per_step,
            "mean_op_us": self.mean_op_us,
            "trace_busy_core_s": round(self.trace_busy_core_s, 6),
            "fixed_share": round(self.fixed_share, 4),
            "max_speedup": None if self.max_speedup is None else round(self.max_speedup, 3),
            "notes": list(self.notes),
        }


def _usable_cores(run: Run, cpus_given: bool) -> tuple[int | None, str]:
    cpus = run.manifest.usable_cpus
    if cpus:
        return cpus, "given (--cpus)" if cpus_given else "usable CPUs"
    eigen = len(pool_thread_keys(run, Pool.INTRA_OP))
    if eigen >= 2:
        return eigen, (
            f"assumed: the intra-op pool's {eigen} threads (from the trace's threads; TF sizes "
            "it to the CPUs by default); give --cpus N"
        )
    return None, "unknown: give --cpus N"


def _sampler_rates(run: Run, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grid, busy cores, run-queue waiting threads) per interval of the sampler's ticks."""
    counts = run.samples.groupby("thread")["t_ns"].size()
    densest = run.samples[run.samples["thread"] == counts.idxmax()]["t_ns"].to_numpy()
    grid = np.unique(np.r_[lo, densest[(densest > lo) & (densest < hi)], hi]).astype(np.int64)
    width = np.diff(grid).astype(np.float64)
    busy = np.diff(process_cumulative(run, "cpu_ns", grid)) / width
    wait = np.diff(process_cumulative(run, "wait_ns", grid)) / width
    return grid, busy, wait


def _trace_busy(run: Run, lo: int, hi: int, ops: pd.DataFrame) -> StepFunction:
    """Threads owning work by the trace: worker threads' regions and ops, Python threads' ops
    (not their calls: a thread inside a tf.function call waits for the executor)."""
    python = {int(t) for t in python_threads(run)}
    workers = [
        int(t)
        for t, p in zip(run.threads["thread"], run.threads["pool"].astype(str), strict=True)
        if int(t) not in python and p != Pool.PROFILER.value
    ]
    busy = merged_busy(run, lo, hi)
    merged = [busy[t] for t in workers if t in busy]
    thread, start, end = (ops[c].to_numpy() for c in ("thread", "start_ns", "end_ns"))
    for t in python:
        mine = thread == t
        merged.append(union(*clip(start[mine], end[mine], lo, hi)))
    return count_open(merged, lo, hi)


def _cores_left(cores: int, held_elsewhere: np.ndarray, held: Contention | None) -> np.ndarray:
    """Per sampler interval, the cores the process could have had: the usable ones less what
    other processes and steal took, at most the cgroup's quota (never below a tenth of a
    core, so that a bound stays finite)."""
    left = cores - held_elsewhere
    if held is not None and held.quota:
        left = np.minimum(left, held.quota)
    return np.maximum(left, 0.1)


def core_use(
    run: Run,
    window: tuple[int, int],
    concurrency_of: dict[Pool, PoolConcurrency],
    steps: int = 0,
    cpus_given: bool = False,
    held: Contention | None = None,
    op_types: pd.DataFrame | None = None,
) -> CoreUse:
    """The core use of ``run`` over ``window`` (see the module docstring); ``steps``: how many
    steps the window holds, for ops per step; ``cpus_given``: the CPU count came from the user
    (``--cpus``), not the recording; ``held``: who else held the cores (the machine readings),
    to split run-queue wait by who held the core and leave theirs out of the bound;
    ``op_types``: every op type of the window (``top_op_types``), computed when not given."""
    lo, hi = window
    ops = working_ops(run)
    ops = ops[~is_in(ops["op_type"], PY_FUNCTION_OPS)]  # Python ops: the Python cause's
    inside = ops[(ops["start_ns"] >= lo) & (ops["start_ns"] < hi)]
    mean_op_us = (
        float((inside["end_ns"] - inside["start_ns"]).mean()) / 1e3 if len(inside) else None
    )
    cores, cores_basis = _usable_cores(run, cpus_given)
    notes = []
    if run.samples.empty:
        source = "trace"
        notes.append(
            "busy from the trace (no OS sampler): threads owning work, capped at the cores; a "
            "thread waiting for its Eigen workers counts, so use is over-stated"
        )
    else:
        source = "os sampler"
    counted = {
        key: run.manifest.pool(key).size
        for key in ("intra_op", "inter_op")
        if run.manifest.pool(key).source == FROM_TRACE
    }
    if counted:
        sizes = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in counted.items())
        notes.append(f"pool sizes {FROM_TRACE} (those that ran something): {sizes}")
    unlearned = unlearned_note(run, lo, hi)
    notes += [unlearned] if unlearned else []
    base = CoreUse(
        window,
        0.0,
        source,
        cores,
        cores_basis,
        ops=len(inside),
        steps=steps,
        mean_op_us=mean_op_us,
        notes=tuple(notes),
    )
    if hi <= lo:
        return base
    f = _trace_busy(run, lo, hi, ops)
    traced = np.minimum(f.values, cores) if cores else f.values
    if source == "os sampler":
        grid, busy, wait = _sampler_rates(run, lo, hi)
    else:
        grid, busy, wait = f.times, traced.astype(np.float64), np.zeros(len(traced))
    busy_core_s = float((busy * np.diff(grid)).sum()) / 1e9
    if not cores:
        return dataclasses.replace(
            base,
            busy_core_s=busy_core_s,
            trace_busy_core_s=float((traced * np.diff(f.times)).sum()) / 1e9,
        )
    idle = np.maximum(cores - busy, 0.0)
    queued = np.minimum(idle, wait)  # runnable threads that did not get the idle cores
    if op_types is None:
        op_types = top_op_types(run, limit=None, window=window)
    small = small_ops(run, window, cores, op_types)
    free = small.free if small is not None else None
    cause_edges, cause = causes_of_instants(run, lo, hi, free, concurrency_of)
    edges = sorted_unique(np.r_[cause_edges, grid, f.times])  # where anything sampled changes
    at, width = edges[:-1], np.diff(edges).astype(np.float64)
    tick = np.clip(np.searchsorted(grid, at, side="right") - 1, 0, len(idle) - 1)
    cause_at = cause[np.clip(np.searchsorted(cause_edges, at, side="right") - 1, 0, len(cause) - 1)]
    core_ns = {key: 0.0 for key, _ in CAUSES}
    grid_width = np.diff(grid).astype(np.float64)
    others, steal, throttled = (
        held.held_on(grid) if held is not None else (np.zeros(len(grid_width)),) * 3
    )
    for key, part in split_run_queue(queued * grid_width, others, steal, throttled).items():
        core_ns[key] = float(part.sum())
    rest = (idle - queued)[tick] * width
    for key in core_ns:
        if key not in ("run_queue", *HELD_ELSEWHERE):
            core_ns[key] = float(rest[cause_at == key].sum())
    idle_ns = sum(core_ns.values())
    if small is not None:  # the rule reads the cause from here: one figure, not two
        small = dataclasses.replace(
            small,
            ns=int(width[cause_at == TOO_SMALL].sum()),
            idle_core_s=core_ns[TOO_SMALL] / 1e9,
        )
    # The trace's count, with Python time (which the trace does not show) as one thread.
    owning = value_at(f, at) + ((cause_at == PYTHON) & (value_at(f, at) == 0))
    trace_busy_ns = float((np.minimum(owning, cores) * width).sum())
    fixed = np.isin(cause_at, FIXED)
    fixed_ns = float(width[fixed].sum())
    # The cores left to the process: those others held are no setting's to win back.
    usable = _cores_left(cores, (others + steal) / grid_width, held)[tick]
    busy_rest_ns = float((busy[tick] * width / usable)[~fixed].sum())
    # at least 1: the run's own setting reached what it did (readings a few times a second
    # can put a process's CPU above the cores they leave it)
    bound = max(1.0, (hi - lo) / (fixed_ns + busy_rest_ns)) if fixed_ns + busy_rest_ns > 0 else None
    causes = pd.DataFrame(
        {
            "cause": [k for k, _ in CAUSES],
            "label": [label for _, label in CAUSES],
            "core_s": [core_ns[k] / 1e9 for k, _ in CAUSES],
            "share": [core_ns[k] / idle_ns if idle_ns else 0.0 for k, _ in CAUSES],
        }
    )
    return dataclasses.replace(
        base,
        busy_core_s=busy_core_s,
        trace_busy_core_s=trace_busy_ns / 1e9,
        causes=causes,
        fixed_share=fixed_ns / (hi - lo),
        max_speedup=bound,
        small_ops=small,
    )
