"""Cross-host findings: the straggler named, with the cause found on its host, and the hosts
a job lacks or lost.

The cause is looked for in the order a performance engineer would check it: fewer CPUs than
the others, other pool sizes, its threads waiting for a CPU (another process shares its cores),
time outside the step's TensorFlow call (Python between steps), and else its step's own work.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.cluster.host import HostSummary
from tftrace.analysis.findings.finding import Finding, Severity

# A cause counts when it explains at least this share of the straggler's lead.
CAUSE_SHARE = 0.5


# The threads that do a step's work; the others (gRPC, the profiler, TF's housekeeping) wait
# for a CPU too on a busy machine, without slowing the step.
WORKING_POOLS = ("python-main", "inter-op", "intra-op", "tf.data")


def _run_queue_ms(h: HostSummary) -> float:
    """Run-queue wait of the host's working threads, ms per steady step."""
    if h.cpu.empty or not len(h.steps) or "pool" not in h.cpu:
        return float("nan")
    working = h.cpu[h.cpu["pool"].isin(WORKING_POOLS)]
    return float(working["wait_s"].sum()) * 1e3 / len(h.steps)


def straggler_cause(
    top: HostSummary, others: list[HostSummary], lead_ms: float, workers: pd.DataFrame
) -> tuple[str, str, dict[str, Any]]:
    """(cause, action, evidence) for the straggler ``top``."""
    cpus = [o.usable_cpus for o in others if o.usable_cpus]
    if top.usable_cpus and cpus and top.usable_cpus < min(cpus):
        return (
            f"it may use {top.usable_cpus} CPUs, the others {min(cpus)}",
            f"give {top.name} as many CPUs as the others (its affinity or quota)",
            {"usable_cpus": top.usable_cpus, "others_usable_cpus": min(cpus)},
        )
    for pool, size in top.pool_sizes.items():
        sizes = sorted({s for o in others if (s := o.pool_sizes.get(pool)) is not None})
        if size is not None and sizes and size not in sizes:
            return (
                f"its {pool} pool has {size} threads, the others {sizes}",
                f"size {top.name}'s {pool} pool as the others'",
                {"pool": pool, "size": size, "others": sizes},
            )
    # Of a co-located process and Python between steps, the one that explains more of the lead
    waits = [w for w in (_run_queue_ms(o) for o in others) if np.isfinite(w)]
    wait, others_wait = _run_queue_ms(top), float(np.median(waits)) if waits else np.nan
    contention = wait - others_wait if np.isfinite(wait) and np.isfinite(others_wait) else 0.0
    row = workers.set_index("host")
    between = float(row.loc[top.name, "between_steps_ms"])
    others_between = float(row.drop(index=top.name)["between_steps_ms"].median())
    python = between - others_between
    if max(contention, python) >= CAUSE_SHARE * lead_ms and contention > python:
        return (
            f"its threads waited {wait:.1f} ms per step for a CPU (the others "
            f"{others_wait:.1f}): another process shares its cores",
            f"move the other load off {top.name}'s cores, or pin the job to free ones",
            {"run_queue_ms_per_step": wait, "others_run_queue_ms_per_step": others_wait},
        )
    if python >= CAUSE_SHARE * lead_ms:
        return (
            f"its main thread spends {between:.1f} ms per step outside the step's TensorFlow "
            f"call (the others {others_between:.1f}): Python between steps",
            f"profile {top.name}'s Python between steps (its py-spy stacks; input read in "
            "Python, logging, a sleep) and move that work into tf.data or off the loop",
            {"between_steps_ms": between, "others_between_steps_ms": others_between},
        )
    compute = float(row.loc[top.name, "own_ms"] - row.loc[top.name, "between_steps_ms"])
    return (
        f"its step's own work takes {compute:.1f} ms (outside collectives)",
        f"compare {top.name}'s pools and ops with the others' (tftrace diff)",
        {"own_compute_ms": compute},
    )


def straggler_finding(
    found: dict[str, Any], hosts: list[HostSummary], workers: pd.DataFrame
) -> Finding:
    top = next(h for h in hosts if h.name == found["host"])
    others = [h for h in hosts if h is not top and h.error is None]
    cause, action, evidence = straggler_cause(top, others, found["lead_ms"], workers)
    share = found["lead_ms"] / found["period_ms"] if found["period_ms"] else 0.0
    severity = Severity.HIGH if share >= 0.25 else Severity.MEDIUM if share >= 0.1 else Severity.LOW
    return Finding(
        id="straggler",
        severity=severity,
        pool=None,
        message=(
            f"{top.name} is the straggler: {found['lead_ms']:.1f} ms more of its own time per "
            f"step than the other workers (slowest in {found['slowest_share']:.0%} of steps), and "
            f"they wait {found['others_wait_ms']:.1f} ms per step in collective ops for it; "
            f"the cause on its host: {cause}"
        ),
        action=action,
        evidence={**{k: v for k, v in found.items()}, **evidence, "host": top.name},
    )


def missing_findings(missing: tuple[str, ...], hosts: list[HostSummary]) -> list[Finding]:
    """One finding per task without data, and per host whose workload died or could not be
    analysed (its data, where any, is kept)."""
    out = []
    for name in missing:
        out.append(
            Finding(
                "host-missing",
                Severity.HIGH,
                None,
                f"{name} is missing: the job's cluster spec names it, and it has no run directory",
                f"record {name} too (tftrace record -o DIR/{{task}} on every task)",
                {"host": name},
            )
        )
    for h in hosts:
        if h.error is None and not h.died and not h.failed:
            continue
        kept = "its data up to then is analysed" if h.error is None else f"no analysis ({h.error})"
        out.append(
            Finding(
                "host-died" if h.died else "host-failed" if h.failed else "host-unreadable",
                Severity.HIGH,
                None,
                f"{h.name}: {h.ending()}; {kept}; the other hosts' data is kept",
                f"see {h.path}/workload/stderr.log",
                {"host": h.name, "exception": h.exception, "returncode": h.returncode},
            )
        )
    return out
