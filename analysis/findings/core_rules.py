"""The underused-cores rule: the process kept well under its usable cores busy; the message
names the main cause of the idle core-time (``metrics/core_use.py``) and the action fits it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity
from tftrace.analysis.findings.pool_rules import SMALL_OPS_ACTION
from tftrace.analysis.metrics.core_use import HELD_ELSEWHERE, LABELS, CoreUse
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import INTER_OP_THREADS_ENV, INTRA_OP_THREADS_ENV

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics

UNDERUSED = 0.6  # at most 60 % of the usable cores busy or wanted (run-queue wait) on average
# Severity by the share of the idle core-time that a thread setting can act on.
HIGH_RECOVERABLE, MEDIUM_RECOVERABLE = 0.5, 0.2


def _action(cause: str | None, use: CoreUse, run: Run) -> str:
    cores = use.cores or 0
    intra = run.manifest.pool("intra_op").size
    inter = run.manifest.pool("inter_op").size
    few = max(1, cores // 4)
    fewer_threads = (
        f"fewer intra-op threads ({INTRA_OP_THREADS_ENV}={few}) lose nothing and free cores for "
        "other work (a second process, a larger batch)"
    )
    if cause == "input":
        return (
            "Make the input pipeline keep up: num_parallel_calls=tf.data.AUTOTUNE on map, "
            ".prefetch(tf.data.AUTOTUNE), cache what does not change between epochs."
        )
    if cause == "python":
        return (
            "Move the Python work into TensorFlow ops or a tf.function (no thread setting "
            "speeds up Python under the GIL)."
        )
    if cause == "waiting":
        return (
            f"Raise inter_op_parallelism_threads (now {inter}) towards {cores} "
            f"({INTER_OP_THREADS_ENV}={cores}): work waited for a thread of a full pool."
        )
    if cause == "run_queue":
        return (
            f"Lower the pool sizes (intra {intra}, inter {inter}) so that busy threads do not "
            f"exceed the {cores} cores, or give the process the cores its threads wait for."
        )
    if cause == "other_processes":
        return (
            "Other processes held the cores this one's threads waited for (the finding that "
            "names them says which): move them, or pin this process to CPUs they do not use; "
            "no thread setting wins that time back."
        )
    if cause == "steal":
        return (
            "The hypervisor gave these CPUs to other guests (steal time): a dedicated or "
            "larger instance; no thread setting wins that time back."
        )
    if cause == "quota":
        return (
            "The cgroup's CPU quota held the process back: size the pools to the quota (the "
            "quota finding says how), or raise the quota."
        )
    if cause == "too_small":
        return SMALL_OPS_ACTION
    if cause == "chain":
        return (
            "The ops run one after another and each is too small to fill the cores: give each "
            f"op more work (larger batches, jit_compile=True to fuse ops); {fewer_threads}."
        )
    if cause == "dispatch":
        per_step = use.ops_per_step
        many = f" ({per_step:.0f} ops per step" if per_step else f" ({use.ops} ops"
        mean = f", {use.mean_op_us:.0f} us each)" if use.mean_op_us is not None else ")"
        return (
            f"Time goes to launching many small ops{many}{mean}: fuse them "
            f"(tf.function(jit_compile=True)) or give each more work (larger batches); "
            f"{fewer_threads}."
        )
    return f"Nothing traced explains the idle cores; {fewer_threads}."


def _setting(cause: str | None, use: CoreUse, run: Run) -> AdvisedSetting | None:
    """The action's setting, machine-readable; None where the action is not a setting."""
    cores = use.cores or 0
    intra = run.manifest.pool("intra_op").size or 0
    inter = run.manifest.pool("inter_op").size or 0
    few = max(1, cores // 4)
    if cause == "waiting":
        return AdvisedSetting(None, cores, Expect.FASTER) if inter < cores else None
    if cause in ("input", "python", *HELD_ELSEWHERE):
        return None
    # Chains, small ops, dispatch and the process's own threads queueing for the cores: the
    # claim is that the intra-op threads beyond a few are wasted.
    if intra > few:
        return AdvisedSetting(few, None, Expect.NOT_SLOWER)
    if cause == "run_queue" and inter > cores:
        return AdvisedSetting(None, cores, Expect.NOT_SLOWER)
    return None


def underused_cores(run: Run, analysis: Metrics) -> list[Finding]:
    """The process kept fewer than ``UNDERUSED`` of its usable cores busy over the window."""
    use = analysis.core_use
    if use is None or not use.cores or use.cores < 2 or use.seconds <= 0:
        return []
    capacity = use.cores * use.seconds
    share = use.mean_busy / use.cores
    # Run-queue wait is demand: threads that were runnable while other processes (or the
    # process's own surplus threads) held the cores. And the kernel counts spin and time
    # stretched by a busy machine; the trace's count of threads owning work counts neither.
    waited = use.run_queue_core_s + use.held_elsewhere_core_s
    demand = min(share + waited / capacity, use.trace_busy_core_s / capacity)
    if demand >= UNDERUSED:
        return []
    cause = use.main_cause()
    recoverable = use.recoverable_share
    severity = (
        Severity.HIGH
        if recoverable >= HIGH_RECOVERABLE
        else Severity.MEDIUM
        if recoverable >= MEDIUM_RECOVERABLE
        else Severity.LOW
    )
    causes = use.causes.set_index("cause")["share"] if use.causes is not None else None
    unexplained = float(causes["unexplained"]) if causes is not None else 0.0
    why = (
        f"; most idle core-time went to {LABELS[cause]} ({float(causes[cause]):.0%})"
        if cause is not None and causes is not None and float(causes[cause]) >= unexplained
        else f"; the largest cause the trace shows: {LABELS[cause]} "
        f"({float(causes[cause]):.0%}, {unexplained:.0%} unexplained: no traced work ran)"
        if cause is not None and causes is not None
        else "; nothing traced explains the idle core-time"
    )
    stand_in = " (busy by the trace: no OS sampler)" if use.busy_source == "trace" else ""
    bound = (
        f" Thread settings could make it at most {use.max_speedup:.1f}x faster."
        if use.max_speedup is not None
        else ""
    )
    return [
        Finding(
            "underused-cores",
            severity,
            None,
            f"The process kept {use.mean_busy:.2f} of {use.cores} usable cores busy "
            f"({share:.0%}){stand_in}{why}.{bound}",
            _action(cause, use, run),
            {
                "mean_busy_cores": round(use.mean_busy, 3),
                "cores": use.cores,
                "cores_basis": use.cores_basis,
                "use": round(share, 4),
                "demand": round(demand, 4),
                "busy_source": use.busy_source,
                "main_cause": cause,
                "recoverable_share": round(recoverable, 4),
                "max_speedup": None if use.max_speedup is None else round(use.max_speedup, 2),
            },
            setting=_setting(cause, use, run),
        )
    ]
