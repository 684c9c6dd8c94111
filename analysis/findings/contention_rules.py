"""Rules on what shares the cores with TensorFlow's pools: other processes, the hypervisor
(steal), the cgroup's quota, another library's thread pool (BLAS/OpenMP) and tf.data's
threads. Each names who held the cores from the machine readings (``metrics/contention.py``)
or the kernel's CPU time per pool (``metrics/cpu_time.py``); a setting is advised only where
one is the fix (a library's thread variable, or the intra-op pool beside it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.findings.evidence import cpu_row
from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

if TYPE_CHECKING:
    from tftrace.analysis.metrics.contention import Contention
    from tftrace.analysis.metrics.measured import Metrics

# Other processes took at least this share of the usable core-time ...
OTHERS_SHARE = 0.1
# ... while the process's threads waited behind them at least this share of it.
WAITED_BEHIND_SHARE = 0.05
# Steal of at least this share of the usable core-time matters.
STEAL_SHARE = 0.05
# The kernel throttled at least this share of the quota's periods.
THROTTLED_SHARE = 0.1
# A library's pool ran at least this share of the core-time, and its threads and TF's pools'
# waited for a core at least this share of their CPU time.
LIBRARY_CPU_SHARE = 0.05
LIBRARY_WAIT_PER_CPU = 0.1
# tf.data's threads ran at least this share of the core-time, and theirs and the step's
# threads waited for a core at least this share of their CPU time.
TF_DATA_CPU_SHARE = 0.1
OWN_WAIT_PER_CPU = 0.1
# The threads that run the step: TF's pools and the Python that drives them.
STEP_POOLS = (Pool.INTRA_OP, Pool.INTER_OP, Pool.PYTHON_MAIN, Pool.PYTHON_OTHER)

# The thread variable of each library, by a marker of the object its threads start in.
LIBRARY_VARIABLES = (
    ("openblas", "OPENBLAS_NUM_THREADS"),
    ("mkl", "MKL_NUM_THREADS"),
    ("blis", "BLIS_NUM_THREADS"),
    ("gomp", "OMP_NUM_THREADS"),
    ("iomp", "OMP_NUM_THREADS"),
    ("libomp", "OMP_NUM_THREADS"),
)


def _core_time(analysis: Metrics) -> tuple[int, float] | None:
    use = analysis.core_use
    if use is None or not use.cores or use.seconds <= 0:
        return None
    return use.cores, use.cores * use.seconds


def _cause_core_s(analysis: Metrics, cause: str) -> float:
    use = analysis.core_use
    if use is None or use.causes is None:
        return 0.0
    return float(use.causes.set_index("cause").loc[cause, "core_s"])


def _cpu_and_wait(analysis: Metrics, pools: tuple[Pool, ...]) -> tuple[float, float]:
    """The CPU seconds of ``pools``' threads and the seconds they waited for a core, summed
    (the kernel's counts, ``Metrics.cpu``)."""
    rows = [r for p in pools if (r := cpu_row(analysis, p)) is not None]
    return sum(float(r["cpu_s"]) for r in rows), sum(float(r["wait_s"]) for r in rows)


def _neighbours(held: Contention, count: int = 3) -> str:
    others = held.processes[held.processes["role"] != "recorder"].head(count)
    return ", ".join(f"{r.name} (pid {r.pid}) {r.core_s:.2f} core-s" for r in others.itertuples())


def other_processes_take_cores(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: other processes ran on the CPUs this one may use, and its threads waited for
    a core while they did: the time is theirs, and no thread setting wins it back.

    Checked on the data (the machine readings): other processes (tftrace's own recorder left
    out) held at least ``OTHERS_SHARE`` of the usable core-time, and the process's run-queue
    wait behind them (the headline's split) was at least ``WAITED_BEHIND_SHARE`` of it.
    """
    held, budget = analysis.contention, _core_time(analysis)
    if held is None or budget is None:
        return []
    cores, core_s = budget
    others = held.neighbours_core_s
    waited = _cause_core_s(analysis, "other_processes")
    if others < OTHERS_SHARE * core_s or waited < WAITED_BEHIND_SHARE * core_s:
        return []
    named = _neighbours(held)
    return [
        Finding(
            "other-processes-take-cores",
            Severity.HIGH if others >= 0.3 * core_s else Severity.MEDIUM,
            None,
            f"Other processes ran {others:.2f} core-s on this process's {cores} CPUs "
            f"({others / core_s:.0%} of their time){': ' + named if named else ''}; its own "
            f"threads waited {waited:.2f} core-s for a core while they did.",
            "Move those processes off these CPUs, or run this one on CPUs they do not use "
            "(taskset, or a sweep's --cpus); no thread setting wins this time back.",
            {
                "others_core_s": round(others, 4),
                "others_share": others / core_s,
                "waited_behind_core_s": round(waited, 4),
                "waited_behind_share": min(1.0, waited / core_s),
                "processes": held.to_json()["processes"][:5],
            },
        )
    ]


def steal_time(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: the hypervisor ran other guests on this machine's virtual CPUs, so the
    process got less CPU than its wall time says. Checked on the data: steal (``/proc/stat``)
    on the usable CPUs was at least ``STEAL_SHARE`` of their time. No setting helps."""
    held, budget = analysis.contention, _core_time(analysis)
    if held is None or budget is None:
        return []
    cores, core_s = budget
    if held.steal_core_s < STEAL_SHARE * core_s:
        return []
    share = held.steal_core_s / core_s
    return [
        Finding(
            "steal-time",
            Severity.HIGH if share >= 0.2 else Severity.MEDIUM,
            None,
            f"The hypervisor took {held.steal_core_s:.2f} core-s ({share:.0%}) of the {cores} "
            "CPUs' time for other guests (steal): timings on this machine vary with its "
            "neighbours.",
            "Use a dedicated-CPU instance for measurements and latency-bound serving; compare "
            "settings only in runs interleaved on the same machine (tftrace sweep does); no "
            "thread setting wins this time back.",
            {"steal_core_s": round(held.steal_core_s, 4), "steal_share": min(1.0, share)},
        )
    ]


def quota_throttles(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: the cgroup's CPU quota held the process back: the kernel throttled it in
    many periods, because its busy threads outnumbered the quota. Checked on the data:
    throttled periods at least ``THROTTLED_SHARE`` of the window's periods. The advice is
    pools that fit the quota (intra-op and inter-op at its whole CPUs), where they are
    larger; otherwise no setting (another pool, or the work itself, exceeds it)."""
    held = analysis.contention
    if held is None or not held.periods or held.quota is None:
        return []
    share = held.throttled_periods / held.periods
    if share < THROTTLED_SHARE:
        return []
    fit = max(1, int(held.quota))
    intra = run.manifest.pool("intra_op").size
    inter = run.manifest.pool("inter_op").size
    larger = [n for n in (intra, inter) if n and n > fit]
    setting = (
        AdvisedSetting(
            fit if intra and intra > fit else None,
            fit if inter and inter > fit else None,
            Expect.NOT_SLOWER,
        )
        if larger
        else None
    )
    action = (
        f"Size the pools to the quota: TF_NUM_INTRAOP_THREADS={fit} TF_NUM_INTEROP_THREADS={fit} "
        "(TF sizes them by the CPUs it may be scheduled on, not by the quota), or raise the "
        "quota."
        if setting is not None
        else "The pools fit the quota; fewer threads in other pools (tf.data, BLAS/OpenMP), or "
        "a larger quota, are what is left."
    )
    return [
        Finding(
            "cpu-quota-throttles",
            Severity.HIGH if share >= 0.5 else Severity.MEDIUM,
            None,
            f"The cgroup's quota of {held.quota:g} CPUs throttled the process in "
            f"{held.throttled_periods} of {held.periods} periods ({share:.0%}), "
            f"{held.throttled_core_s:.2f} s in all; the pools have intra-op {intra} and "
            f"inter-op {inter} threads.",
            action,
            {
                "quota_cpus": held.quota,
                "periods": held.periods,
                "throttled_periods": held.throttled_periods,
                "throttled_share": share,
                "throttled_s": round(held.throttled_core_s, 4),
            },
            setting=setting,
        )
    ]


def library_variable(evidence: str) -> str:
    """The thread variable of the library a thread started in (OMP_NUM_THREADS by default)."""
    lowered = evidence.lower()
    for marker, variable in LIBRARY_VARIABLES:
        if marker in lowered:
            return variable
    return "OMP_NUM_THREADS"


def _library(run: Run) -> tuple[str, str, int]:
    """(the library's object, its thread variable, its threads) of the BLAS/OpenMP pool."""
    threads = run.threads[run.threads["pool"].astype(str) == Pool.BLAS_OPENMP.value]
    evidence = str(threads["evidence"].iloc[0]) if len(threads) else ""
    return evidence.removeprefix("started in "), library_variable(evidence), len(threads)


def library_pool_crowds_cores(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: another library (BLAS, OpenMP) runs a thread pool of its own in the process,
    sized by the CPUs as TF's are: the pools crowd the cores, and threads wait for them.

    Checked on the data (the OS sampler): the BLAS/OpenMP pool ran at least
    ``LIBRARY_CPU_SHARE`` of the core-time, and the threads of it and of TF's pools waited
    for a core at least ``LIBRARY_WAIT_PER_CPU`` of their CPU time (the kernel's counts; a
    BLAS worker that spins between calls holds its core, and TF's threads wait). Two fixes:
    the library's variable at 1 (its work runs on the calling thread), or TF's pools at one
    thread each (TF's ops give the cores up). The data chooses: the side whose threads held
    the cores while the other's waited (the more waiting is the other's) is shrunk, and that
    is the advice (the rule's id says which); the other fix is named in its action.
    """
    budget = _core_time(analysis)
    blas = cpu_row(analysis, Pool.BLAS_OPENMP)
    if budget is None or blas is None:
        return []
    cores, core_s = budget
    blas_s, blas_wait = float(blas["cpu_s"]), float(blas["wait_s"])
    tf_s, tf_wait = _cpu_and_wait(analysis, (Pool.INTRA_OP, Pool.INTER_OP))
    waited = blas_wait + tf_wait
    if blas_s < LIBRARY_CPU_SHARE * core_s or waited < LIBRARY_WAIT_PER_CPU * (blas_s + tf_s):
        return []
    library, variable, threads = _library(run)
    intra = run.manifest.pool("intra_op").size or 0
    inter = run.manifest.pool("inter_op").size or 0
    figures = (
        f"The {library or 'BLAS/OpenMP'} pool ({threads} worker thread{'s' * (threads != 1)}) "
        f"ran {blas_s:.2f} CPU-s and "
        f"waited {blas_wait:.2f} s for a core, beside TF's pools (intra-op {intra}, inter-op "
        f"{inter}: {tf_s:.2f} CPU-s) on {cores} cores; their threads waited {waited:.2f} s "
        "for a core in all."
    )
    evidence = {
        "library": library,
        "variable": variable,
        "library_threads": threads,
        "library_cpu_s": round(blas_s, 4),
        "library_wait_s": round(blas_wait, 4),
        "tf_pools_cpu_s": round(tf_s, 4),
        "pools_wait_s": round(waited, 4),
        "wait_per_cpu_share": min(1.0, waited / (blas_s + tf_s)) if blas_s + tf_s else 0.0,
    }
    # shrink the side whose threads held the cores the other's waited for: one advice, the
    # other fix named beside it (on 2 cores TF's pools at 1 ran no faster where the library's
    # threads held the cores: docs/diagnosis.md)
    library_first = waited - blas_wait >= blas_wait
    shrinkable = intra > 1 or inter > 1
    if library_first or not shrinkable:
        why = (
            "TF's threads waited for the cores it held"
            if library_first
            else "TF's pools are at one thread already"
        )
        other = (
            " Else one thread per TF pool (TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1)."
            if shrinkable
            else ""
        )
        return [
            Finding(
                "library-pool-crowds-cores",
                Severity.HIGH,
                Pool.BLAS_OPENMP.value,
                figures,
                f"Set {variable}=1 before the process starts: the library's work then runs on "
                f"the calling thread, and TF's pools keep the cores ({why}).{other}",
                evidence,
                setting=AdvisedSetting(None, None, Expect.NOT_SLOWER, env={variable: "1"}),
            )
        ]
    return [
        Finding(
            "tf-pools-beside-library-pool",
            Severity.HIGH,
            None,
            figures,
            "Use one thread per TF pool (TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1): "
            "TF's ops give the cores to the library's pool (its threads waited for the cores "
            f"TF's held). Else {variable}=1.",
            evidence,
            setting=AdvisedSetting(
                1 if intra > 1 else None, 1 if inter > 1 else None, Expect.NOT_SLOWER
            ),
        )
    ]


def tf_data_competes(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: tf.data's threads (its private pool, parallel maps) compete with the step's
    threads for the cores. Checked on the data (the OS sampler, the kernel's counts):
    tf.data's threads ran at least ``TF_DATA_CPU_SHARE`` of the core-time, and the step's
    threads (TF's pools and Python) and tf.data's waited for a core at least
    ``OWN_WAIT_PER_CPU`` of their CPU time. The fix is in the input pipeline's code (its
    options), so no setting is advised."""
    budget = _core_time(analysis)
    data = cpu_row(analysis, Pool.TF_DATA)
    if budget is None or data is None:
        return []
    cores, core_s = budget
    data_s, data_wait = float(data["cpu_s"]), float(data["wait_s"])
    step_s, step_wait = _cpu_and_wait(analysis, STEP_POOLS)
    waited = data_wait + step_wait
    if data_s < TF_DATA_CPU_SHARE * core_s or waited < OWN_WAIT_PER_CPU * (data_s + step_s):
        return []
    input_share = _cause_core_s(analysis, "input") / core_s
    return [
        Finding(
            "tf-data-competes-with-step",
            Severity.LOW,
            Pool.TF_DATA.value,
            f"tf.data's {int(data['threads'])} threads ran {data_s:.2f} CPU-s "
            f"({data_s / core_s:.0%} of the {cores} cores' time) beside the step's threads "
            f"({step_s:.2f} CPU-s); the step's threads waited {step_wait:.2f} s for a core "
            f"and tf.data's {data_wait:.2f} s.",
            # Fewer input threads do not shrink the work: on 2 saturated cores a bounded map
            # ran the loop no faster (docs/analyses.md). What it buys is the step's latency.
            "Where the step's latency matters more than the input's throughput, and input "
            f"stays ahead (the step waited for it {input_share:.0%} of the core-time), bound "
            "the input pipeline's threads: options.threading.private_threadpool_size and "
            "options.threading.max_intra_op_parallelism = 1 (tf.data.Options), or a fixed "
            "num_parallel_calls instead of AUTOTUNE. The total work stays the same.",
            {
                "tf_data_cpu_s": round(data_s, 4),
                "tf_data_share": min(1.0, data_s / core_s),
                "tf_data_wait_s": round(data_wait, 4),
                "step_cpu_s": round(step_s, 4),
                "step_wait_s": round(step_wait, 4),
                "wait_per_cpu_share": min(1.0, waited / (data_s + step_s)),
                "input_wait_share": input_share,
            },
        )
    ]
