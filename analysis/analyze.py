"""``analyze(run) -> Analysis``: every metric of a run, and the findings they lead to.

The one place figures are computed: renderers (terminal, HTML, plots, TensorBoard) and the
JSON output only display an ``Analysis``. Metrics are pure functions of the run
(``tftrace.analysis.metrics``); findings are rules over run and metrics
(``tftrace.analysis.findings``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from tftrace.analysis.findings import Finding, diagnose
from tftrace.analysis.findings.coverage import not_checked
from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.census import Census, thread_census
from tftrace.analysis.metrics.concurrency import PoolConcurrency, pool_concurrencies, pools_frame
from tftrace.analysis.metrics.contention import Contention, contention_of
from tftrace.analysis.metrics.core_use import CoreUse, core_use
from tftrace.analysis.metrics.cpu_time import pool_cpu
from tftrace.analysis.metrics.ops import TOP_OP_TYPES, top_op_types
from tftrace.analysis.metrics.python_time import PYTHON_MATTERS_SHARE, PythonTime, python_time
from tftrace.analysis.metrics.queue_delay import queue_delay_stats
from tftrace.analysis.metrics.requests import Requests, measure_requests
from tftrace.analysis.metrics.steps import Steps, find_steps
from tftrace.analysis.metrics.warmup import Warmup, measure_warmup
from tftrace.analysis.metrics.window import (
    STEADY,
    WindowArg,
    in_recording,
    parse_window,
    resolve_window,
)
from tftrace.analysis.metrics.work import SERVER, find_work
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.trace_facts import with_trace_facts
from tftrace.analysis.progress import ANALYZE_STAGES, stage


@dataclass(frozen=True, repr=False)
class Analysis:
    """What tftrace measured in a run, and what it means: the result of ``tftrace.analyze``.

    Attributes (DataFrames have one row per pool, op type, category or step; the columns are
    defined in docs/analyses.md):

    - ``run``: the ``Run`` analysed; ``window``: (start, end) ns of the analysed span, by
      default the steady state (the steps after the warm-up); ``window_basis``: what the
      window is and why, in one line (``"steady: steps 2-50 of 50 (tf.function train_step),
      after 1 warm-up step"``, ``"all: no steps found ..."``). Every figure below and every
      finding covers this window.
    - ``warmup``: the first step(s) on their own (span, what the main thread did: tracing,
      instantiation, variable initialisation, ...); None without steps.
    - ``findings``: tuple of ``Finding``, causes first, then most severe first; empty when
      nothing is wrong.
    - ``pools``: size, mean and peak concurrency, utilisation and share of the cores per pool;
      ``concurrency``: the same per ``Pool`` as objects, with ``.series(resolution_ns)`` (busy
      threads over time) and ``.histogram()`` (time at each level of concurrency).
    - ``queue_delay``: scheduled -> started delay percentiles per pool.
    - ``cpu``: the kernel's CPU time and run-queue wait per pool beside the traced busy time.
    - ``top_ops``: op types by time, with the intra-op parallelism each achieved.
    - ``breakdown``: the window's wall time in six categories adding up to 1.
    - ``steps``: the training/inference steps in the window, with a per-step breakdown.
    - ``shape``: ``"loop"`` (one thread steps), ``"server"`` (several threads with calls in
      flight together) or ``"none"``; ``requests``: a server's requests in the window
      (throughput, latency percentiles, requests in flight, where their time went); None
      for a loop.
    - ``python_time``: the top Python functions per Python thread by self and total time
      (py-spy), py-spy's error share, and whether Python time matters in the window.
    - ``core_use``: the headline: how many of the usable cores the process kept busy, where
      the idle core-time went by cause, and the most thread settings could gain.
    - ``census``: every thread by pool (TF's, tf.data, BLAS/OpenMP, Python, ...) with each
      pool's size and where it came from, its CPU time and threads on a CPU (the kernel's
      count, over the window and over time), against the usable CPUs.
    - ``contention``: who else held the usable CPUs over the window (other processes by
      name and pid, steal, the cgroup quota's throttling), from the OS sampler's machine
      readings; None without them.
    - ``not_checked``: one line per rule the run lacks the data for (a bare trace has no OS
      sampler, no manifest, and no CPU count unless ``cpus`` gives it).

    In Jupyter an Analysis shows itself as the report's tables; ``print(analysis)`` gives the
    terminal report; ``analysis.to_json()`` the figures as JSON values. Example::

        analysis = tftrace.analyze(tftrace.load("tftrace-runs/demo"))
        analysis.pools.set_index("pool")["mean"]  # mean busy threads per pool
        analysis.findings[0].action if analysis.findings else "nothing to fix"
    """

    run: Run
    window: tuple[int, int]
    pools: pd.DataFrame
    queue_delay: pd.DataFrame
    cpu: pd.DataFrame
    top_ops: pd.DataFrame
    breakdown: pd.DataFrame
    steps: Steps
    concurrency: Mapping[Pool, PoolConcurrency] = dataclasses.field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    python_time: PythonTime | None = None
    window_basis: str = "all: the whole trace"
    warmup: Warmup | None = None
    core_use: CoreUse | None = None
    not_checked: tuple[str, ...] = ()
    requests: Requests | None = None
    shape: str = "none"
    contention: Contention | None = None
    census: Census | None = None

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (what ``tftrace analyze --json`` prints)."""

        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in json.loads(df.to_json(orient="records"))
            ]

        return {
            "core_use": self.core_use.to_json() if self.core_use else None,
            "findings": [f.to_json() for f in self.findings],
            "not_checked": list(self.not_checked),
            "run": str(self.run.path),
            "window_ns": list(self.window),
            "window": {
                "start_ns": self.window[0],
                "end_ns": self.window[1],
                "seconds": (self.window[1] - self.window[0]) / 1e9,
                "mode": self.window_basis.split()[0].rstrip(":"),  # steady, all, steps, times
                "basis": self.window_basis,
            },
            "warmup": self.warmup.to_json() if self.warmup else None,
            "pools": records(self.pools),
            "census": self.census.to_json() if self.census else None,
            "contention": self.contention.to_json() if self.contention else None,
            "queue_delay": records(self.queue_delay),
            "cpu": records(self.cpu),
            "top_ops": records(self.top_ops),
            "breakdown": records(self.breakdown),
            "steps": {
                "source": self.steps.source,
                **self.steps.stats(),
                "summary": summary.to_json() if (summary := self.steps.summary()) else None,
                "table": records(self.steps.table),
            },
            "shape": self.shape,
            "requests": self.requests.to_json() if self.requests else None,
            "python_time": self.python_time.to_json() if self.python_time else None,
            "missing": self.run.missing,
        }

    def __repr__(self) -> str:
        worst = f", worst {self.findings[0].severity.value}" if self.findings else ""
        width_s = (self.window[1] - self.window[0]) / 1e9
        return (
            f"<Analysis of {self.run.path}: {width_s:.3f} s window, "
            f"{len(self.findings)} finding(s){worst}>"
        )

    def __str__(self) -> str:
        from tftrace.analysis.render.terminal import render_text

        return render_text(self)

    def _repr_html_(self) -> str:
        from tftrace.analysis.render.html import analysis_fragment

        return analysis_fragment(self)


def measure(
    run: Run, window: WindowArg = STEADY, warmup_steps: int = 1, cpus: int | None = None
) -> Analysis:
    """The metrics of ``run`` over ``window`` (see ``analyze``), without findings."""
    run = with_trace_facts(run, cpus)
    spec = in_recording(parse_window(window, warmup_steps), run)
    stage(ANALYZE_STAGES[0])
    steps = find_steps(run)
    span, basis = resolve_window(run, steps, spec)
    in_window = steps.within(span)
    work = find_work(run)
    requests = measure_requests(run, work, span) if work.shape == SERVER else None
    stage(ANALYZE_STAGES[1])
    concurrency = pool_concurrencies(run, span)
    pools = pools_frame(concurrency)
    stage(ANALYZE_STAGES[2])
    delays, cpu = queue_delay_stats(run, span), pool_cpu(run, span)
    stage(ANALYZE_STAGES[3])
    op_types = top_op_types(run, limit=None, window=span)  # every type: small ops weigh them all
    ops = op_types.head(TOP_OP_TYPES)
    stage(ANALYZE_STAGES[4])
    wall = breakdown(run, span)
    held = contention_of(run, span)
    stage(ANALYZE_STAGES[5])
    return Analysis(
        run,
        span,
        pools,
        delays,
        cpu,
        ops,
        wall,
        in_window,
        concurrency,
        window_basis=basis,
        warmup=measure_warmup(run, steps, spec.warmup_steps),
        core_use=core_use(
            run,
            span,
            concurrency,
            len(in_window.table),
            cpus_given=cpus is not None,
            held=held,
            op_types=op_types,
        ),
        not_checked=not_checked(run),
        requests=requests,
        shape=work.shape,
        census=thread_census(run, span, cpus_given=cpus is not None),
        contention=held,
    )


def analyze(
    run: Run, window: WindowArg = STEADY, warmup_steps: int = 1, cpus: int | None = None
) -> Analysis:
    """Measure a loaded run and diagnose it: metrics and findings (causes first, then most severe).

    Args:
        run: a ``Run`` from ``tftrace.load(path)``.
        window: the span analysed: ``"steady"`` (default: from the end of the warm-up to the
            end of the last step, or the whole trace where no steps exist), ``"all"``, steps
            ``"A:B"`` or ``(A, B)`` (numbered from 1), or ``"T0:T1"`` in seconds on the run's
            axis (with a decimal point or ``s``: ``"1.5:3.0"``). A bad window raises
            ``TftraceError`` naming the steps or times the run has.
        warmup_steps: the steps of the warm-up (default 1: the call that traces).
        cpus: the CPUs the process could use, where the run does not say (a bare
            ``.xplane.pb``: its pool sizes come from the trace's threads, the CPU count from
            here); given, it replaces the recorded count.

    Returns:
        An ``Analysis``; see its attributes. Nothing is printed.

    Example::

        import tftrace

        analysis = tftrace.analyze(tftrace.load("tftrace-runs/demo"))
        for finding in analysis.findings:
            print(finding.message, "->", finding.action)
    """
    metrics = measure(run, window, warmup_steps, cpus)
    stage(ANALYZE_STAGES[6])
    findings = tuple(diagnose(metrics.run, metrics))
    stage(ANALYZE_STAGES[7])
    return dataclasses.replace(
        metrics, findings=findings, python_time=which_python(run, metrics, findings)
    )


def which_python(run: Run, metrics: Analysis, findings: tuple[Finding, ...]) -> PythonTime:
    """The top Python functions over the analysed window; they matter when the breakdown's
    python share reaches ``PYTHON_MATTERS_SHARE`` or the python-bound finding fired."""
    shares = metrics.breakdown.set_index("category")["share"]
    matters = float(shares.get("python / host", 0.0)) >= PYTHON_MATTERS_SHARE or any(
        f.id == "python-bound" for f in findings
    )
    return python_time(metrics.run, metrics.window, matters=matters)
