"""Rules for servers (several threads with calls in flight together, ``metrics/work.py``):
requests queueing for inter-op threads, two pools crowding the cores, and one request at a
time on many cores. Each is judged by the server's own measure (``AdvisedSetting.objective``:
requests per second, or a latency percentile), not the time per step."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tftrace.analysis.findings.crowd_rules import (
    CROWD_BLOCKED_CPU_PER_BUSY,
    CROWD_MIN_INTRA,
    CROWD_PER_CORE,
    CROWD_RUN_QUEUE_SHARE,
    cores_of,
    inter_op_cpu_per_busy,
    pool_busy,
    run_queue_share,
)
from tftrace.analysis.findings.evidence import cpu_row, severity_for
from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics
    from tftrace.analysis.metrics.requests import Requests

# A request waits for an inter-op thread for at least this share of its latency, on average.
INTER_OP_WAIT_SHARE = 0.1
# One request at a time: fewer than this many in flight on average ...
ALONE_IN_FLIGHT = 1.2
# ... on at least this many cores, most of them idle (busy below this share).
ALONE_MIN_CORES = 4
ALONE_BUSY_SHARE = 0.5


def _wait_share(requests: Requests, category: str) -> float:
    shares = requests.breakdown().set_index("category")["share"]
    return float(shares.get(category, 0.0))


def _crowded(run: Run, analysis: Metrics) -> dict[str, float] | None:
    """The pools' busy threads, summed, against the cores, and the run-queue wait that shows
    it; None when the pools do not crowd the cores."""
    cores = cores_of(run, analysis)
    if not cores or analysis.core_use is None:
        return None
    inter, intra = pool_busy(analysis, Pool.INTER_OP), pool_busy(analysis, Pool.INTRA_OP)
    queued = run_queue_share(run, analysis)
    if inter + intra <= CROWD_PER_CORE * cores or intra < CROWD_MIN_INTRA:
        return None
    blocked = inter_op_cpu_per_busy(analysis)
    waits_for_shards = (
        blocked is not None
        and blocked < CROWD_BLOCKED_CPU_PER_BUSY
        and analysis.requests is not None
        and analysis.requests.mean_in_flight() >= cores
    )
    if queued is not None and queued < CROWD_RUN_QUEUE_SHARE and not waits_for_shards:
        return None
    return {
        "inter": inter,
        "intra": intra,
        "cores": cores,
        "run_queue_share": queued or 0.0,
        "inter_op_cpu_per_busy": blocked if blocked is not None else math.nan,
    }


def requests_queue_for_inter_op(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: more requests are in flight than there are inter-op threads, so requests wait
    for one, while the cores would have room for one thread per request: the pools do not
    crowd them now (that is the next rule), and the requests do not split their ops over the
    Eigen pool (or their Eigen work and one thread per request still fit the cores), so the
    added inter-op threads would not crowd them either.

    Checked on the data: the mean requests in flight exceed the inter-op pool's size, the
    requests' time waiting for an inter-op thread (their closures queued) is at least
    ``INTER_OP_WAIT_SHARE`` of their latency, and the intra-op pool is busy less than
    ``CROWD_MIN_INTRA`` threads on average, or the peak requests in flight plus its busy
    threads fit the cores.
    """
    requests = analysis.requests
    size = run.manifest.pool("inter_op").size
    cores = cores_of(run, analysis)
    if requests is None or not size or _crowded(run, analysis) is not None:
        return []
    intra = pool_busy(analysis, Pool.INTRA_OP)
    would_crowd = cores is not None and requests.peak_in_flight() + intra > CROWD_PER_CORE * cores
    if intra >= CROWD_MIN_INTRA and would_crowd:
        return []
    in_flight = requests.mean_in_flight()
    share = _wait_share(requests, "inter-op wait")
    if in_flight <= size or share < INTER_OP_WAIT_SHARE:
        return []
    advised = max(requests.peak_in_flight(), size + 1)
    return [
        Finding(
            "requests-queue-for-inter-op",
            severity_for(share),
            Pool.INTER_OP.value,
            f"{in_flight:.1f} requests were in flight on average (peak "
            f"{requests.peak_in_flight()}) for {size} inter-op threads: requests spent "
            f"{share:.0%} of their latency waiting for an inter-op thread.",
            f"Raise inter_op_parallelism_threads to {advised} (one per request in flight), "
            "e.g. TF_NUM_INTEROP_THREADS.",
            {
                "requests_in_flight": round(in_flight, 3),
                "peak_in_flight": requests.peak_in_flight(),
                "inter_op_threads": size,
                "inter_op_wait_share": share,
                "intra_op_busy": round(intra, 3),
            },
            setting=AdvisedSetting(None, advised, Expect.FASTER, "p99"),
        )
    ]


def pools_crowd_cores(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: a server's requests each take an inter-op thread, and each of those splits its
    ops over the Eigen pool: together the two pools keep more threads busy than there are
    cores, and they wait for cores instead of working. The answer: intra-op 1, and an
    inter-op thread per request in flight, at most one per core the request threads' own
    Python leaves (measured on 2 cores: a small model served at 1,200 requests/s, its Python
    0.77 of the cores, ran 1.33x faster at 1/1 and 0.93x at 1/4 than at 2/2).

    Checked on the data: the inter-op and intra-op pools' mean busy threads add up to more
    than ``CROWD_PER_CORE`` per usable core, the Eigen pool is busy at least
    ``CROWD_MIN_INTRA`` threads on average, and (with the OS sampler) the process's threads
    waited on a run queue for at least ``CROWD_RUN_QUEUE_SHARE`` of the window's core-time, or
    the server had a request in flight per core and its inter-op threads were on a CPU for
    less than ``CROWD_BLOCKED_CPU_PER_BUSY`` of their busy time (waiting for their ops' Eigen
    shards: the hand-off that intra-op 1 removes costs time without run-queue wait).
    The claim: with one intra-op thread the server serves at least as many requests per
    second (threads were wasted).
    """
    requests = analysis.requests
    crowd = _crowded(run, analysis)
    intra_size = run.manifest.pool("intra_op").size
    if requests is None or crowd is None or (intra_size is not None and intra_size <= 1):
        return []
    cores = int(crowd["cores"])
    python = _python_on_cpu(analysis)
    left = max(1, round(cores - python))
    inter = max(1, min(requests.peak_in_flight(), left))
    busy = crowd["inter"] + crowd["intra"]
    over = min(1.0, (busy - cores) / busy) if busy > 0 else 0.0
    return [
        Finding(
            "pools-crowd-cores",
            Severity.HIGH if busy >= 1.5 * cores else Severity.MEDIUM,
            None,
            f"The inter-op pool ({crowd['inter']:.2f} busy threads) and the intra-op pool "
            f"({crowd['intra']:.2f}) together kept {busy:.2f} threads busy on {cores} cores, "
            f"with {requests.mean_in_flight():.1f} requests in flight: {_crowd_evidence(crowd)}",
            f"Use intra_op_parallelism_threads 1 and inter_op_parallelism_threads {inter} "
            f"(one thread per request in flight, at most the {left} core(s) the request "
            f"threads' own Python leaves: they ran {python:.2f} of the {cores}), e.g. "
            f"TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS={inter}.",
            {
                "inter_op_busy": round(crowd["inter"], 3),
                "intra_op_busy": round(crowd["intra"], 3),
                "cores": cores,
                "busy_over_cores": round(busy / cores, 3),
                "oversubscribed_share": over,
                "run_queue_share": crowd["run_queue_share"],
                "inter_op_cpu_per_busy": None
                if math.isnan(crowd["inter_op_cpu_per_busy"])
                else round(crowd["inter_op_cpu_per_busy"], 3),
                "requests_in_flight": round(requests.mean_in_flight(), 3),
                "python_on_cpu": round(python, 3),
            },
            setting=AdvisedSetting(1, inter, Expect.NOT_SLOWER, "throughput"),
        )
    ]


def _python_on_cpu(analysis: Metrics) -> float:
    """The Python threads' mean CPUs over the window (the kernel's count; 0 without the OS
    sampler): the request threads' own work, which an inter-op thread cannot take over."""
    use = analysis.core_use
    if use is None or use.seconds <= 0:
        return 0.0
    rows = [cpu_row(analysis, pool) for pool in (Pool.PYTHON_MAIN, Pool.PYTHON_OTHER)]
    return sum(float(r["cpu_s"]) for r in rows if r is not None) / use.seconds


def _crowd_evidence(crowd: dict[str, float]) -> str:
    """What showed the crowding: threads waiting for a core, or inter-op threads waiting for
    their ops' Eigen shards (on a CPU for a small share of their busy time)."""
    text = f"threads waited on a run queue for {crowd['run_queue_share']:.0%} of the core-time"
    blocked = crowd["inter_op_cpu_per_busy"]
    if math.isnan(blocked) or blocked >= CROWD_BLOCKED_CPU_PER_BUSY:
        return text + "."
    return (
        f"{text}, and the inter-op threads were on a CPU for {blocked:.0%} of their busy time, "
        "each waiting inside its op for the Eigen shards it handed off."
    )


def one_request_at_a_time(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: a server that has one request in flight at a time cannot use many cores
    however its pools are sized: the cores wait for requests, not for threads. Batching
    requests, or serving more of them at once, is what fills them.

    Checked on the data: fewer than ``ALONE_IN_FLIGHT`` requests in flight on average, at
    least ``ALONE_MIN_CORES`` usable cores, and the process busy on less than
    ``ALONE_BUSY_SHARE`` of them (kernel CPU time, else the trace).
    """
    requests = analysis.requests
    cores = cores_of(run, analysis)
    use = analysis.core_use
    if requests is None or use is None or not cores or cores < ALONE_MIN_CORES:
        return []
    in_flight = requests.mean_in_flight()
    busy_share = min(1.0, use.mean_busy / cores)
    if in_flight >= ALONE_IN_FLIGHT or busy_share >= ALONE_BUSY_SHARE:
        return []
    return [
        Finding(
            "one-request-at-a-time",
            Severity.HIGH if busy_share < 0.25 else Severity.MEDIUM,
            None,
            f"{in_flight:.2f} requests were in flight on average on {cores} cores, and the "
            f"process kept {use.mean_busy:.2f} of them busy ({busy_share:.0%}): the cores "
            "wait for requests, not for threads.",
            "Batch requests (several inputs per call), or serve more requests at once (more "
            "client threads, or several instances: tftrace sweep --instances); thread "
            "settings alone will not fill the cores.",
            {
                "requests_in_flight": round(in_flight, 3),
                "cores": cores,
                "cores_busy_share": busy_share,
                "throughput_per_s": round(requests.throughput, 3),
            },
        )
    ]


def without_splitting_for_busy_servers(
    run: Run, analysis: Metrics, found: list[Finding]
) -> list[Finding]:
    """``found`` less the findings that advise a larger intra-op pool for a server with a
    request in flight per core or more: each core already has a request to run, so splitting
    its ops only adds Eigen workers to crowded cores (the rules that advise it are written
    for a loop, whose one step at a time leaves cores free)."""
    requests = analysis.requests
    cores = cores_of(run, analysis)
    intra = run.manifest.pool("intra_op").size
    if requests is None or not cores or requests.mean_in_flight() < cores:
        return found
    return [
        f
        for f in found
        if f.setting is None or f.setting.intra is None or intra is None or f.setting.intra <= intra
    ]
