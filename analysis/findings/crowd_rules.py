"""Threads of the process crowding its cores: the measures the crowd rules share (the pools'
busy threads, the run-queue wait, the inter-op threads' CPU per busy second), and the rule for
a loop whose ops hand shards to Eigen workers that wait for a core. A server's form of the
crowd is ``server_rules.pools_crowd_cores``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from tftrace.analysis.findings.evidence import cpu_row, pool_row, severity_for
from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding
from tftrace.analysis.metrics.busy import pool_thread_keys
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics

# The pools together keep more threads busy than this many per core ...
CROWD_PER_CORE = 1.0
# ... with Eigen workers busy at least this much of the time (the crowd is of two pools) ...
CROWD_MIN_INTRA = 0.25
# ... and the process's threads waiting for a core at least this share of the core-time,
CROWD_RUN_QUEUE_SHARE = 0.1
# ... or the inter-op threads on a CPU for less than this share of their busy time: each
# waits inside its op for the Eigen shards it handed off.
CROWD_BLOCKED_CPU_PER_BUSY = 0.5
# A loop's split ops are small when their shards keep fewer than this share of the Eigen
# pool busy (a pool kept full is splitting large ops, which one thread would run slower).
SMALL_SHARDS_POOL_SHARE = 0.5
# ... and short: their median under this (ns), the order of a worker's wake-up (6-10 us
# measured), so that each hand-off is a good part of the work it hands off (measured on 2
# cores: 9-11 us in the Keras fits below; 137 us to 34 ms for matrix products).
SMALL_SHARD_NS = 50_000
# A loop's inter-op threads wait inside their ops when on a CPU for less than this share of
# their busy time (measured on 2 cores: a Keras fit of a small model at intra 2, 0.32-0.56
# over four recordings; threads whose ops wait for nothing, 0.97-1.07).
SHARD_WAIT_CPU_PER_BUSY = 0.7


def cores_of(run: Run, analysis: Metrics) -> int | None:
    """The usable cores: the core-use headline's count, else the manifest's."""
    use = analysis.core_use
    return use.cores if use is not None and use.cores else run.manifest.usable_cpus


def pool_busy(analysis: Metrics, pool: Pool) -> float:
    """The pool's mean busy threads over the window (0 when it did not run)."""
    row = pool_row(analysis, pool)
    return 0.0 if row is None else float(row["mean"])


def inter_op_cpu_per_busy(analysis: Metrics) -> float | None:
    """The inter-op threads' CPU seconds per traced busy second (the OS sampler's); None
    without it."""
    row = cpu_row(analysis, Pool.INTER_OP)
    if row is None or not row["busy_s"] or math.isnan(float(row["cpu_per_busy"])):
        return None
    return float(row["cpu_per_busy"])


def _core_s(run: Run, analysis: Metrics) -> float | None:
    """The window's core-time (cores x seconds) where the OS sampler ran; else None."""
    cores, use = cores_of(run, analysis), analysis.core_use
    if run.samples.empty or use is None or not cores or use.seconds <= 0:
        return None
    return cores * use.seconds


def run_queue_share(run: Run, analysis: Metrics) -> float | None:
    """The process's run-queue wait over the window's core-time, at most 1 (more threads can
    wait at once than there are cores); None without the sampler."""
    core_s = _core_s(run, analysis)
    if core_s is None or analysis.core_use is None:
        return None
    return min(1.0, analysis.core_use.run_queue_core_s / core_s)


def others_run_queue_share(run: Run, analysis: Metrics, pool: Pool) -> float | None:
    """The run-queue wait of the process's threads outside ``pool`` (and outside tftrace's and
    TF's profiler threads) over the window's core-time, at most 1; None without the
    sampler: how much the other threads waited for the cores ``pool`` held."""
    core_s = _core_s(run, analysis)
    if core_s is None:
        return None
    cpu = analysis.cpu
    others = cpu[~cpu["pool"].isin([pool.value, Pool.PROFILER.value])]
    return min(1.0, float(others["wait_s"].sum()) / core_s)


def others_crowded(run: Run, analysis: Metrics, pool: Pool) -> bool:
    """Whether the process's threads outside ``pool`` waited for the cores it held (at least
    ``CROWD_RUN_QUEUE_SHARE`` of the window's core-time); True without the sampler, where
    nothing says otherwise."""
    share = others_run_queue_share(run, analysis, pool)
    return share is None or share >= CROWD_RUN_QUEUE_SHARE


def median_shard_ns(run: Run, window: tuple[int, int]) -> float | None:
    """The median length of the Eigen workers' regions that start in ``window``; None
    without any."""
    regions = run.regions
    if regions.empty:
        return None
    lo, hi = window
    start = regions["start_ns"].to_numpy()
    mine = np.isin(regions["thread"].to_numpy(), pool_thread_keys(run, Pool.INTRA_OP))
    mine &= (start >= lo) & (start < hi)
    if not mine.any():
        return None
    return float(np.median(regions["end_ns"].to_numpy()[mine] - start[mine]))


def shards_wait_for_cores(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: a loop's ops each hand shards to Eigen workers and wait for them, while the
    process's threads already wait for the cores: a shard's worker queues for a core behind
    them, its op waits for it, and the split buys no core but costs a hand-off each op. One
    intra-op thread runs each op on its caller (measured on 2 cores: a Keras fit of a small
    Conv/Dense model fed by tf.data, at intra 2 its inter-op threads on a CPU for 32-56 % of
    their busy time and the process's threads queued for 30-49 % of the core-time, ran
    1.29-1.40x faster at intra 1, inter unchanged).

    Checked on the data (the OS sampler's counts): the intra-op pool has more than one
    thread and its workers were busy at least ``CROWD_MIN_INTRA`` threads on average but
    under ``SMALL_SHARDS_POOL_SHARE`` of the pool (a pool kept full is splitting large ops),
    on shards whose median is under ``SMALL_SHARD_NS``; the inter-op threads were on a CPU
    for less than ``SHARD_WAIT_CPU_PER_BUSY`` of their busy time; and the process's threads
    waited on a run queue for at least ``CROWD_RUN_QUEUE_SHARE`` of the window's core-time.
    A server is left to ``pools-crowd-cores``. The claim: with one intra-op thread the step
    is not slower.
    """
    intra_size = run.manifest.pool("intra_op").size
    if analysis.requests is not None or intra_size is None or intra_size <= 1:
        return []
    intra = pool_busy(analysis, Pool.INTRA_OP)
    blocked = inter_op_cpu_per_busy(analysis)
    queued = run_queue_share(run, analysis)
    if (
        blocked is None
        or queued is None
        or not CROWD_MIN_INTRA <= intra < SMALL_SHARDS_POOL_SHARE * intra_size
        or blocked >= SHARD_WAIT_CPU_PER_BUSY
        or queued < CROWD_RUN_QUEUE_SHARE
    ):
        return []
    shard = median_shard_ns(run, analysis.window)
    if shard is None or shard >= SMALL_SHARD_NS:
        return []
    inter = pool_busy(analysis, Pool.INTER_OP)
    return [
        Finding(
            "shards-wait-for-cores",
            severity_for(queued),
            Pool.INTRA_OP.value,
            f"The inter-op threads ({inter:.2f} busy) were on a CPU for only {blocked:.0%} of "
            f"their busy time, each waiting inside its op for the Eigen shards it handed off, "
            f"while the process's threads waited on a run queue for {queued:.0%} of the "
            f"core-time: the {intra_size} Eigen workers ({intra:.2f} busy, on shards of "
            f"{shard / 1e3:.0f} us at the median) queue for cores instead of adding any.",
            "Use intra_op_parallelism_threads 1, so that each op runs on the thread that "
            "calls it, e.g. TF_NUM_INTRAOP_THREADS=1.",
            {
                "intra_op_size": intra_size,
                "intra_op_busy": round(intra, 3),
                "inter_op_busy": round(inter, 3),
                "inter_op_cpu_per_busy": round(blocked, 3),
                "median_shard_us": round(shard / 1e3, 2),
                "run_queue_share": queued,
            },
            setting=AdvisedSetting(1, None, Expect.NOT_SLOWER),
        )
    ]
