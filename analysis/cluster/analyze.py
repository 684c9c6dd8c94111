"""``analyze_cluster(DIR) -> ClusterAnalysis``: each host of a multi-host directory analysed
on its own, in parallel, then the cross-host view.

The hosts go through a ``concurrent.futures`` executor: a process pool by default (each host's
analysis is CPU-bound Python and NumPy), or any executor the caller passes, such as a Dask
distributed client's (``client.get_executor()``), whose workers must see the directory at the
same path. Each job returns a small ``HostSummary``, not the host's trace.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from tftrace.analysis.cluster.cross import (
    clock_offsets,
    clock_verdict,
    matched_steps,
    pools_side_by_side,
    straggler,
    workers_table,
)
from tftrace.analysis.cluster.findings import missing_findings, straggler_finding
from tftrace.analysis.cluster.host import HostSummary, summarize_host
from tftrace.analysis.cluster.layout import Layout, find_hosts
from tftrace.analysis.diff.result import records
from tftrace.analysis.findings.finding import Finding
from tftrace.analysis.presenting import as_text


@dataclass(frozen=True, repr=False)
class ClusterAnalysis:
    """A multi-host job: each host's summary and the cross-host view.

    Attributes:

    - ``hosts``: one ``HostSummary`` per host directory, in the job's task order.
    - ``missing``: tasks of the job's cluster spec without a directory.
    - ``steps``: per host and matched step: call, period, collective, wait, own time (ms).
    - ``workers``: per host, the medians of those over the matched steps.
    - ``straggler``: host, lead_ms, slowest_share, others_wait_ms; None when there is none.
    - ``clocks``: how well the hosts line up in time, against the first.
    - ``findings``: the straggler with its cause, and hosts missing, dead or unreadable.

    Example::

        c = tftrace.analyze_cluster("runs/job")
        c.workers[["host", "step_ms", "wait_ms"]]
        c.straggler  # {"host": "worker-1", "lead_ms": 61.2, ...}
    """

    path: Path
    hosts: tuple[HostSummary, ...]
    missing: tuple[str, ...]
    steps: pd.DataFrame
    workers: pd.DataFrame
    straggler: dict[str, Any] | None
    clocks: pd.DataFrame
    findings: tuple[Finding, ...] = field(default=())

    @property
    def lost(self) -> tuple[str, ...]:
        """The hosts without data to analyse: the spec's tasks without a directory, then
        those whose directory holds no trace (a worker that died before flushing it)."""
        return (*self.missing, *(h.name for h in self.hosts if h.error is not None))

    def host(self, name: str) -> HostSummary:
        """The summary of host ``name`` (KeyError when there is none)."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (``tftrace analyze DIR --json``)."""
        return {
            "kind": "cluster",
            "path": str(self.path),
            "hosts": [h.to_json() for h in self.hosts],
            "missing": list(self.missing),
            "lost": list(self.lost),
            "workers": records(self.workers),
            "straggler": self.straggler,
            "clocks": records(self.clocks),
            "clock_verdict": clock_verdict(self.clocks),
            "pools": records(pools_side_by_side(self.hosts)),
            "findings": [f.to_json() for f in self.findings],
        }

    def __repr__(self) -> str:
        who = self.straggler["host"] if self.straggler else "none"
        return f"<ClusterAnalysis {self.path}: {len(self.hosts)} hosts, straggler {who}>"

    def __str__(self) -> str:
        return as_text(self)


def default_executor(jobs: int) -> Executor:
    """A process pool for ``jobs`` host analyses, one process per host up to the CPUs."""
    workers = max(1, min(jobs, os.cpu_count() or 1))
    # fork is fast and safe while this process runs one thread; with more (a notebook's, a
    # server's), a forked child could inherit a lock held by another thread: spawn then.
    method = "fork" if threading.active_count() == 1 else "spawn"
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method))


def analyze_cluster(
    path: str | os.PathLike[str],
    *,
    executor: Executor | None = None,
    window: str = "steady",
    warmup_steps: int = 1,
    cpus: int | None = None,
) -> ClusterAnalysis:
    """Analyse every host of a multi-host directory in parallel, then across hosts.

    Args:
        path: a directory of host run directories (``tftrace record -o DIR/{task}``, or
            ``tftrace capture -o DIR``).
        executor: where the hosts are analysed: any ``concurrent.futures.Executor`` (a Dask
            client's ``get_executor()``); default a process pool, one process per host up
            to the CPUs.
        window, warmup_steps, cpus: each host's, as for ``tftrace.analyze``.

    Returns:
        A ``ClusterAnalysis``.

    Raises:
        NotAClusterDir (a ``TftraceError``) when the directory holds no host's run.

    Example::

        from dask.distributed import Client
        c = tftrace.analyze_cluster("runs/job", executor=Client("tcp://sched:8786").get_executor())
        print(c)
    """
    from tftrace.analysis.metrics.window import parse_window

    parse_window(window, warmup_steps)  # a bad window: one error, not one per host
    layout = find_hosts(path)
    hosts = on_each_host(layout, summarize_host, (window, warmup_steps, cpus), executor)
    return cross_host(layout.path, hosts, layout.missing)


T = TypeVar("T")


def on_each_host(
    layout: Layout,
    job: Callable[..., T],
    args: tuple[Any, ...],
    executor: Executor | None = None,
) -> list[T]:
    """``job(host's name, host's path, *args)`` for every host of ``layout``, in parallel on
    ``executor`` (default: ``default_executor``, shut down after); the results in the hosts'
    order. ``job`` must be a module-level function: a worker process imports it by name."""
    pool = default_executor(len(layout.hosts)) if executor is None else executor
    try:
        futures = [pool.submit(job, h.name, str(h.path), *args) for h in layout.hosts]
        return [f.result() for f in futures]
    finally:
        if executor is None:
            pool.shutdown()


def cross_host(path: Path, hosts: list[HostSummary], missing: tuple[str, ...]) -> ClusterAnalysis:
    """The cross-host view of host summaries already made."""
    steps = matched_steps(hosts)
    workers = workers_table(hosts, steps)
    found = straggler(workers, steps) if len(steps) else None
    findings = missing_findings(missing, hosts)
    if found is not None:
        findings.insert(0, straggler_finding(found, hosts, workers))
    return ClusterAnalysis(
        path=Path(path),
        hosts=tuple(hosts),
        missing=missing,
        steps=steps,
        workers=workers,
        straggler=found,
        clocks=clock_offsets(hosts, steps),
        findings=tuple(findings),
    )
