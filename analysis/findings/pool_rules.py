"""Rules on how the pools ran: queued work with cores free, ops too small to split, an intra-op
pool sized against the cores, ops run inline, Eigen workers spinning."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tftrace.analysis.findings.crowd_rules import (
    CROWD_RUN_QUEUE_SHARE,
    others_crowded,
    run_queue_share,
)
from tftrace.analysis.findings.evidence import (
    category_share,
    cpu_row,
    pool_row,
    severity_for,
)
from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity
from tftrace.analysis.metrics.busy import pool_of_threads
from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import INTER_OP_THREADS_ENV, INTRA_OP_THREADS_ENV

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics

# Rule 1 -----------------------------------------------------------------------------------
QUEUE_SHARE = 0.05  # closures waited with a core free for >= 5 % of the window


def idle_cores_while_work_waited(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: independent ops waited for an inter-op thread while cores could have run them.

    Checked on the data: inter-op closures were queued (Record -> StartRegion) during at least
    ``QUEUE_SHARE`` of the window (the union of their waits), the inter-op pool's peak
    concurrency stayed below the cores, and (with the OS sampler) the process's threads
    waited on a run queue for less than ``CROWD_RUN_QUEUE_SHARE`` of the window's core-time:
    the cores were free, not held by the process's other threads (a server at inter 1 whose
    Eigen workers and client threads kept its 2 cores queued 75 % of the core-time ran 1.04x
    at inter 2; two chains at inter 1 on free cores, 1.96x).
    """
    cores = run.manifest.usable_cpus
    inter = pool_row(analysis, Pool.INTER_OP)
    share = category_share(analysis, "waiting for a thread")
    regions = run.regions.dropna(subset=["queue_ns"])
    pools = pool_of_threads(run, regions["thread"].to_numpy())
    mine = regions[np.asarray(pools == Pool.INTER_OP.value)]
    lo, hi = analysis.window
    # the time any closure waited, inside the window: a union, so closures queued side by side
    # count once and the share stays of the window
    s, e = union(
        *clip(mine["scheduled_ns"].to_numpy(np.int64), mine["start_ns"].to_numpy(), lo, hi)
    )
    waited = float((e - s).sum()) / (hi - lo) if hi > lo else 0.0
    if cores is None or inter is None or inter["peak"] >= cores or waited < QUEUE_SHARE:
        return []
    queued = run_queue_share(run, analysis)
    if queued is not None and queued >= CROWD_RUN_QUEUE_SHARE:
        return []
    size = run.manifest.pool("inter_op").size
    return [
        Finding(
            "idle-cores-while-work-waited",
            severity_for(waited),
            Pool.INTER_OP.value,
            f"Independent ops waited for an inter-op thread {waited:.0%} of the time while at most "
            f"{int(inter['peak'])} of {cores} cores worked on them.",
            f"Raise inter_op_parallelism_threads (now {size}) towards {cores}: "
            f"tf.config.threading.set_inter_op_parallelism_threads({cores}) before any op runs, "
            f"or {INTER_OP_THREADS_ENV}={cores}.",
            {
                "queued_share": round(waited, 4),
                "waiting_for_a_thread_share": round(share, 4),
                "inter_op_peak": int(inter["peak"]),
                "inter_op_size": size,
                "cores": cores,
            },
            setting=AdvisedSetting(None, cores, Expect.FASTER),
        )
    ]


# Rule 2 -----------------------------------------------------------------------------------
TOP_OP_SHARE = 0.2  # small ops ran while cores were free >= 20 % of the window
# The action of this rule and of the headline's "ops too small to split" (core_rules.py).
SMALL_OPS_ACTION = (
    "Give each op more work (larger batches), or fewer intra-op threads and more inter-op "
    "threads so that independent small ops run side by side."
)


def ops_too_small_to_split(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: ops that Eigen did not split left cores idle that splitting would have used.

    Checked on the data: the headline's "ops too small to split" (``metrics/small_ops.py``): op
    types that kept fewer than ``SMALL_OP_PARALLELISM`` Eigen workers busy on average (waits,
    Python and bookkeeping left out, and every op a py_function's Python ran) ran while cores
    were free (fewer threads at work than usable cores) for at least ``TOP_OP_SHARE`` of the
    window, less the instants the headline gives to an earlier cause (input waits, Python,
    waiting for a thread). Two chains of such ops side by side on as many cores keep the cores
    busy: no finding. Without a CPU count (a bare trace) the intra-op pool's thread count stands
    in for it, as TF sizes the pool by default. A trace without thread-pool events (TF <= 2.16)
    does not show the Eigen workers' work, so neither premise can be checked there.
    """
    small = analysis.core_use.small_ops if analysis.core_use is not None else None
    lo, hi = analysis.window
    if small is None or small.types.empty or hi <= lo:
        return []
    share = small.ns / (hi - lo)
    if share < TOP_OP_SHARE:
        return []
    size, cores = small.intra_op_size, small.cores
    inter = run.manifest.pool("inter_op").size
    parallelism = small.parallelism
    top = small.types.head(3)
    named = ", ".join(
        f"{t} ({p:.2f})" for t, p in zip(top["op_type"], top["parallelism"], strict=True)
    )
    return [
        Finding(
            "ops-too-small-to-split",
            severity_for(share),
            Pool.INTRA_OP.value,
            f"The intra-op pool has {size} threads, but ops that kept only {parallelism:.2f} "
            f"Eigen workers busy on average ran {share:.0%} of the time while fewer than "
            f"{cores} threads worked: they are too small to split.",
            SMALL_OPS_ACTION,
            {
                "intra_op_size": size,
                "cores": cores,
                "cores_free_share": round(share, 4),
                "idle_core_s": round(small.idle_core_s, 6),
                "mean_parallelism": round(parallelism, 3),
                "top_ops": named,
            },
            # By the premise one worker per op loses nothing; independent ops get threads.
            setting=AdvisedSetting(1, cores if (inter or 0) < cores else None, Expect.NOT_SLOWER),
        )
    ]


# Rule 3 -----------------------------------------------------------------------------------
WAIT_RATIO = 0.2  # workers runnable but not running >= 20 % of their CPU time


def intra_pool_size_vs_cores(run: Run, analysis: Metrics) -> list[Finding]:
    """Premises: more intra-op workers than cores make them queue for a core; fewer, all busy,
    leave cores that a larger pool would use.

    Checked on the data: oversubscribed when the pool is larger than the cores and its workers'
    run-queue wait (kernel, /proc) reached ``WAIT_RATIO`` of their CPU time; smaller than the
    cores when every worker was busy at some point and the pool's mean was >= 80 % of its size.
    An oversubscribed pool is told to shrink (a setting) only where it held cores the
    process's other threads waited for (``others_crowded``): workers that time-share the
    cores among themselves lose nothing (large products at intra 4 on 2 cores ran 0.95-0.99x
    at intra 2).
    """
    cores = run.manifest.usable_cpus
    size = run.manifest.pool("intra_op").size
    inter_size = run.manifest.pool("inter_op").size
    cpu = cpu_row(analysis, Pool.INTRA_OP)
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
                f"Set intra_op_parallelism_threads to {cores} ({INTRA_OP_THREADS_ENV}={cores}).",
                {
                    "intra_op_size": size,
                    "cores": cores,
                    "run_queue_wait_s": round(wait, 4),
                    "cpu_s": round(on_cpu, 4),
                    "inter_x_intra": (inter_size or 0) * size,
                },
                # The evidence is waste (workers queued for a core), not lost throughput: at
                # intra 4 on 2 cores large products ran 0.95-0.99x at intra 2.
                setting=AdvisedSetting(cores, None, Expect.NOT_SLOWER)
                if others_crowded(run, analysis, Pool.INTRA_OP)
                else None,
            )
        )
    row = pool_row(analysis, Pool.INTRA_OP)
    if 1 < size < cores and row is not None and row["peak"] >= size and row["mean"] >= 0.8 * size:
        out.append(
            Finding(
                "intra-pool-smaller-than-cores",
                Severity.MEDIUM,
                Pool.INTRA_OP.value,
                f"All {size} intra-op threads were busy {row['mean'] / size:.0%} of the time, with "
                f"{cores - size} more cores available.",
                f"Try intra_op_parallelism_threads={cores}.",
                {
                    "intra_op_size": size,
                    "cores": cores,
                    "mean": round(float(row["mean"]), 3),
                    "all_busy_share": round(float(row["mean"]) / size, 4),
                },
                setting=AdvisedSetting(cores, None, Expect.FASTER),
            )
        )
    return out


# Rule 4 -----------------------------------------------------------------------------------
INLINE_SHARE = 0.2  # ops ran inline on their callers >= 20 % of the window


def inline_ops(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: with intra_op_parallelism_threads = 1 every op runs on its caller, one core per
    op, while other cores are free.

    Checked on the data: intra = 1 on >= 2 cores and the breakdown's "op, intra idle" (an op
    ran, no Eigen worker did) is >= ``INLINE_SHARE`` of the window.
    """
    size = run.manifest.pool("intra_op").size
    cores = run.manifest.usable_cpus or 0
    if size != 1 or cores < 2:
        return []
    share = category_share(analysis, "op, intra idle")
    if share < INLINE_SHARE:
        return []
    return [
        Finding(
            "ops-run-inline",
            severity_for(share),
            Pool.INTRA_OP.value,
            f"intra_op_parallelism_threads is 1: every op ran on the thread that called it "
            f"({share:.0%} of the time), one core at a time, with {cores - 1} "
            f"core{'s' if cores - 1 != 1 else ''} free.",
            f"Set intra_op_parallelism_threads to {cores} (or 0 for one per core) so large ops "
            "are split across cores.",
            {"intra_op_size": size, "cores": cores, "op_intra_idle_share": round(share, 4)},
            setting=AdvisedSetting(cores, None, Expect.FASTER),
        )
    ]


# Rule 7 -----------------------------------------------------------------------------------
SPIN_SHARE = 0.04  # >= 4 % of the Eigen workers' CPU was used outside every closure ...
SPIN_MIN_S = 0.05  # ... and at least 50 ms of it


def eigen_spin(run: Run, analysis: Metrics) -> list[Finding]:
    """Eigen workers on a CPU while outside every closure: spinning before they sleep.

    Spin is measured directly: per worker and per /proc sample interval, the CPU it accrued
    beyond the time the trace shows it inside a closure (``cpu_time.thread_cpu``'s
    ``outside_busy_ns``), as a share of the workers' CPU. The old measure, CPU over traced
    busy time, mixed spin with the closures' own cost and with run-queue wait (busy but not
    on a core): the same tight loop of small ops gave 2.0x on an Intel CPU with AVX-512 and
    1.16x on an AMD one without, and 0.7x here with oneDNN off under load. Each idle episode
    spins for about as long whatever the CPU (Eigen spins a fixed number of iterations, cut
    short by the next closure), while the closures' cost moves with the ISA and with oneDNN
    (7x between oneDNN on and off, measured), so the share is highest where closures are
    short and frequent. Measured on 2 cores (docs/analyses.md): 6-61 % on the trigger
    workload, 0.3-3 % and under 25 ms on its control, under both oneDNN settings.
    """
    cpu = cpu_row(analysis, Pool.INTRA_OP)
    if cpu is None or not np.isfinite(cpu["cpu_s"]) or not np.isfinite(cpu["outside_s"]):
        return []
    on_cpu, spin = float(cpu["cpu_s"]), float(cpu["outside_s"])
    share = spin / on_cpu if on_cpu > 0 else 0.0
    if share < SPIN_SHARE or spin < SPIN_MIN_S:
        return []
    size = run.manifest.pool("intra_op").size or 0
    # The claim is that the spin is waste: half the workers (>= 1) should lose no time.
    fewer_workers = AdvisedSetting(max(1, size // 2), None, Expect.NOT_SLOWER) if size > 1 else None
    return [
        Finding(
            "eigen-spin",
            Severity.MEDIUM
            if spin > 0.1 * (analysis.window[1] - analysis.window[0]) / 1e9
            else Severity.LOW,
            Pool.INTRA_OP.value,
            f"Intra-op workers used {spin:.2f} s of CPU ({share:.0%} of their {on_cpu:.2f} s) "
            "outside any traced work: spinning while waiting for work, taking cores from other "
            "threads.",
            "If other threads need those cores, lower intra_op_parallelism_threads so fewer "
            "workers spin.",
            {
                "spin_s": round(spin, 4),
                "cpu_s": round(on_cpu, 4),
                "spin_share": round(share, 4),
                "busy_s": round(float(cpu["busy_s"]), 4),
            },
            setting=fewer_workers,
        )
    ]
