"""Rules on the settings themselves: pool sizes pinned away from the CPUs the process may use (or
above a CPU quota), and threading setters called after TensorFlow started."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.findings.crowd_rules import others_crowded
from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import (
    INTER_OP_THREADS_ENV,
    INTRA_OP_THREADS_ENV,
    POOL_ENV_VARS,
)

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics


def _sized(key: str, size: int) -> AdvisedSetting:
    """Pool ``key`` at ``size``: the claim is that the threads beyond it are not needed."""
    if key == "intra_op":
        return AdvisedSetting(size, None, Expect.NOT_SLOWER)
    return AdvisedSetting(None, size, Expect.NOT_SLOWER)


# Rule 8 -----------------------------------------------------------------------------------
def pinned_sizes_vs_cpus(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: a pool size fixed by hand (env or config) no longer follows the CPUs the process
    may use, and a default size follows the CPUs but not a cgroup quota.

    Checked on the data: the manifest's pool sizes and their source against the affinity mask
    and the tightest cgroup quota recorded with the run. A size pinned above the CPUs is told
    to come down (a setting) only where its pool held cores the process's other threads
    waited for (``crowd_rules.others_crowded``).
    """
    cpus = run.manifest.usable_cpus
    quota = run.manifest.host.cpu_quota
    out = []
    for key, pool in (("intra_op", Pool.INTRA_OP), ("inter_op", Pool.INTER_OP)):
        info = run.manifest.pool(key)
        size, source = info.size, info.source or ""
        if not size or not cpus:
            continue
        limit = min(cpus, max(1, int(quota))) if quota else cpus
        if source in ("env", "config") and size != limit:
            how = (
                POOL_ENV_VARS[key]
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
                    setting=_sized(key, limit)
                    if size < limit or others_crowded(run, analysis, pool)
                    else None,
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
                    setting=_sized(key, max(int(quota), 1)),
                )
            )
    return out


# Rule 9 -----------------------------------------------------------------------------------
def setters_too_late(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: a threading setter called after TF started does nothing (it raises), so the run
    used other sizes than the script asked for.

    Checked on the data: the setter calls recorded inside the workload, and their errors.
    """
    failed = [c for c in run.manifest.workload.setter_calls if c.error]
    if not failed:
        return []
    pools = run.manifest.pools
    asked = ", ".join(f"{c.setter}({c.value})" for c in failed)
    ran = ", ".join(f"{k}={v.size}" for k, v in pools.items())
    return [
        Finding(
            "threading-set-too-late",
            Severity.HIGH,
            None,
            f"The script called {asked} after TensorFlow had started; it failed "
            f"({failed[0].error}), so the run used {ran}.",
            "Call tf.config.threading.set_*_parallelism_threads before the first op, or set "
            f"{INTRA_OP_THREADS_ENV} / {INTER_OP_THREADS_ENV} in the environment.",
            {
                "calls": [c.to_json() for c in failed],
                "effective": {k: v.size for k, v in pools.items()},
            },
        )
    ]
