"""Every figure of a run's window, measured once: ``measure(run, window) -> Metrics``.

The rules (``findings``) read a ``Metrics``; ``tftrace.analyze`` adds their findings to make
an ``Analysis``, which every output draws. Nothing here knows of findings or renderers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.census import Census, thread_census
from tftrace.analysis.metrics.concurrency import PoolConcurrency, pool_concurrencies, pools_frame
from tftrace.analysis.metrics.contention import Contention, contention_of
from tftrace.analysis.metrics.core_use import CoreUse, core_use
from tftrace.analysis.metrics.cpu_time import pool_cpu
from tftrace.analysis.metrics.figures import (
    breakdown_bars,
    census_stack,
    concurrency_histograms,
    concurrency_stack,
    queue_delay_distribution,
    step_concurrency,
    steps_with_concurrency,
)
from tftrace.analysis.metrics.ops import TOP_OP_TYPES, top_op_types
from tftrace.analysis.metrics.profiler_cost import ProfilerCost, profiler_cost
from tftrace.analysis.metrics.queue_delay import queue_delay_stats
from tftrace.analysis.metrics.request_figures import latency_distribution, requests_over_time
from tftrace.analysis.metrics.request_pace import RequestPace, request_pace
from tftrace.analysis.metrics.requests import Requests, measure_requests
from tftrace.analysis.metrics.steps import Steps, StepSummary, find_steps
from tftrace.analysis.metrics.timeline import TIMELINE_RESOLUTION, thread_timeline
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
class Metrics:
    """Every figure tftrace measured in a run's window: what ``measure`` returns, the rules read
    (``findings.diagnose``) and every output shows, through ``Analysis``, which adds the
    findings.

    Attributes (DataFrames have one row per pool, op type, category or step; the columns are
    defined in docs/analyses.md):

    - ``run``: the ``Run`` analysed; ``window``: (start, end) ns of the analysed span, by
      default the steady state (the steps after the warm-up); ``window_basis``: what the
      window is and why, in one line (``"steady: steps 2-50 of 50 (tf.function train_step),
      after 1 warm-up step"``, ``"all: no steps found ..."``). Every figure below and every
      finding covers this window.
    - ``warmup``: the first step(s) on their own (span, what the main thread did: tracing,
      instantiation, variable initialisation, ...); None without steps.
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
    - ``core_use``: the headline: how many of the usable cores the process kept busy, where
      the idle core-time went by cause, and the most thread settings could gain.
    - ``census``: every thread by pool (TF's, tf.data, BLAS/OpenMP, Python, ...) with each
      pool's size and where it came from, its CPU time and threads on a CPU (the kernel's
      count, over the window and over time), against the usable CPUs.
    - ``contention``: who else held the usable CPUs over the window (other processes by
      name and pid, steal, the cgroup quota's throttling), from the OS sampler's machine
      readings; None without them.
    - ``profiler_cost``: what the profiler added to a step (a request), the workload's own
      timing of its steps inside the profiled window against those outside it; None where
      every step was profiled (``metrics.profiler_cost``).

    The figures the report, TensorBoard and the tab draw, computed at first use (``tftrace
    analyze`` prints none of them; times in seconds since the window's start):
    ``concurrency_over_time``, ``concurrency_histograms``, ``thread_timeline``,
    ``queue_delay_distribution``, ``breakdown_bars``, ``step_concurrency``, ``step_points``,
    ``census_over_time``, ``requests_over_time``, ``request_pace``, ``latency_distribution`` and
    ``trace_window`` (the whole trace's span, which an export covers); see each one.
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
    window_basis: str = "all: the whole trace"
    warmup: Warmup | None = None
    core_use: CoreUse | None = None
    requests: Requests | None = None
    shape: str = "none"
    contention: Contention | None = None
    census: Census | None = None
    profiler_cost: ProfilerCost | None = None

    @cached_property
    def step_stats(self) -> dict[str, Any]:
        """The window's steps: how many (of how many found), mean, sd, cv, min and max ms,
        batches per step (``Steps.stats``)."""
        return self.steps.stats()

    @cached_property
    def step_summary(self) -> StepSummary | None:
        """The window's step times in a few figures: percentiles, the slowest steps, the
        outliers and the trend; None without steps (``steps.summarize_steps``)."""
        return self.steps.summary()

    @cached_property
    def concurrency_over_time(self) -> pd.DataFrame:
        """Mean busy threads per pool per bin of the window, one column per pool value
        (``figures.concurrency_stack``)."""
        return concurrency_stack(list(self.concurrency.values()))

    @cached_property
    def concurrency_histograms(self) -> pd.DataFrame:
        """Per pool: time and fraction of the window with 0, 1, ..., peak of its threads busy."""
        return concurrency_histograms(list(self.concurrency.values()))

    @cached_property
    def thread_timeline(self) -> pd.DataFrame:
        """Every thread busy in the window with its busy intervals, gaps under a pixel of the
        report's figure closed (``timeline.thread_timeline``)."""
        lo, hi = self.window
        return thread_timeline(self.run, self.window, min_gap_ns=(hi - lo) // TIMELINE_RESOLUTION)

    @cached_property
    def queue_delay_distribution(self) -> pd.DataFrame:
        """Per pool of ``queue_delay``: closures per log-spaced bin of queue delay (us)."""
        pools = [Pool(p) for p in self.queue_delay["pool"]]
        return queue_delay_distribution(self.run, pools, self.window)

    @cached_property
    def breakdown_bars(self) -> pd.DataFrame:
        """The breakdown as stacked-bar segments: the window, then its first steps."""
        return breakdown_bars(self.breakdown, self.steps, self.window)

    @cached_property
    def step_concurrency(self) -> pd.DataFrame:
        """Per step of the window: each pool's mean number of busy threads."""
        return step_concurrency(self.steps, self.concurrency)

    @cached_property
    def step_points(self) -> pd.DataFrame:
        """The steps with each pool's mean concurrency (``concurrency/<pool>`` columns), the
        mean of each run of consecutive steps beyond 1,000 of them (``figures.step_points``)."""
        return steps_with_concurrency(self.steps, self.step_concurrency)

    @cached_property
    def census_over_time(self) -> pd.DataFrame | None:
        """Threads on a CPU per census pool per bin; None without a census."""
        return census_stack(self.census) if self.census else None

    @cached_property
    def requests_over_time(self) -> pd.DataFrame | None:
        """A server's requests in flight and completed per bin; None for a loop."""
        return requests_over_time(self.requests) if self.requests else None

    @cached_property
    def request_pace(self) -> RequestPace | None:
        """A server's pace bin by bin: its slowest and fastest thirds' requests per second,
        and the request threads' CPU and switches a request in each; None for a loop."""
        if self.requests is None:
            return None
        return request_pace(self.run, self.requests.table, self.requests.window)

    @cached_property
    def latency_distribution(self) -> pd.DataFrame | None:
        """A server's requests per log-spaced bin of latency (ms); None for a loop."""
        return latency_distribution(self.requests) if self.requests else None

    @cached_property
    def trace_window(self) -> tuple[int, int]:
        """(start, end) ns of the whole trace: what an export covers, beyond the window."""
        return trace_window(self.run)

    def requests_per_bin(self, resolution_ns: int) -> pd.DataFrame | None:
        """``requests_over_time`` in bins ``resolution_ns`` wide (TensorBoard's, the width of
        its concurrency bins); None for a loop."""
        return (
            requests_over_time(self.requests, resolution_ns=resolution_ns)
            if self.requests
            else None
        )


def measure(
    run: Run, window: WindowArg = STEADY, warmup_steps: int = 1, cpus: int | None = None
) -> Metrics:
    """Every figure of ``run`` over ``window`` (see ``tftrace.analyze``): what the rules read and
    the outputs show."""
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
    return Metrics(
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
        requests=requests,
        shape=work.shape,
        census=thread_census(run, span, cpus_given=cpus is not None),
        contention=held,
        profiler_cost=profiler_cost(run),
    )
