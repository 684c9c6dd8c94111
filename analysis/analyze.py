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
from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.concurrency import PoolConcurrency, pool_concurrencies, pools_frame
from tftrace.analysis.metrics.cpu_time import pool_cpu
from tftrace.analysis.metrics.ops import top_op_types
from tftrace.analysis.metrics.queue_delay import queue_delay_stats
from tftrace.analysis.metrics.steps import Steps, find_steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run


@dataclass(frozen=True, repr=False)
class Analysis:
    """What tftrace measured in a run, and what it means: the result of ``tftrace.analyze``.

    Attributes (DataFrames have one row per pool, op type, category or step; the columns are
    defined in docs/analyses.md):

    - ``run``: the ``Run`` analysed; ``window``: (start, end) ns of the analysed span.
    - ``findings``: tuple of ``Finding``, most severe first; empty when nothing is wrong.
    - ``pools``: size, mean and peak concurrency, utilisation and share of the cores per pool;
      ``concurrency``: the same per ``Pool`` as objects, with ``.series(resolution_ns)`` (busy
      threads over time) and ``.histogram()`` (time at each level of concurrency).
    - ``queue_delay``: scheduled -> started delay percentiles per pool.
    - ``cpu``: the kernel's CPU time and run-queue wait per pool beside the traced busy time.
    - ``top_ops``: op types by time, with the intra-op parallelism each achieved.
    - ``breakdown``: the window's wall time in six categories adding up to 1.
    - ``steps``: the training/inference steps found, with a per-step breakdown.

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

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (what ``tftrace analyze --json`` prints)."""

        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in json.loads(df.to_json(orient="records"))
            ]

        return {
            "findings": [f.to_json() for f in self.findings],
            "run": str(self.run.path),
            "window_ns": list(self.window),
            "pools": records(self.pools),
            "queue_delay": records(self.queue_delay),
            "cpu": records(self.cpu),
            "top_ops": records(self.top_ops),
            "breakdown": records(self.breakdown),
            "steps": {
                "source": self.steps.source,
                **self.steps.stats(),
                "table": records(self.steps.table),
            },
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


def measure(run: Run) -> Analysis:
    """The metrics of ``run`` over its whole trace window, without findings."""
    window = trace_window(run)
    concurrency = pool_concurrencies(run, window)
    return Analysis(
        run,
        window,
        pools_frame(concurrency),
        queue_delay_stats(run),
        pool_cpu(run, window),
        top_op_types(run),
        breakdown(run, window),
        find_steps(run),
        concurrency,
    )


def analyze(run: Run) -> Analysis:
    """Measure a loaded run and diagnose it: metrics and findings (most severe first).

    Args:
        run: a ``Run`` from ``tftrace.load(path)``.

    Returns:
        An ``Analysis``; see its attributes. Nothing is printed.

    Example::

        import tftrace

        analysis = tftrace.analyze(tftrace.load("tftrace-runs/demo"))
        for finding in analysis.findings:
            print(finding.message, "->", finding.action)
    """
    metrics = measure(run)
    return dataclasses.replace(metrics, findings=tuple(diagnose(run, metrics)))
