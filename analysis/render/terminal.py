"""``tftrace analyze``: the analyses of a run gathered for the terminal and for machines.

Computing (``analyze``) and rendering (``render``) are separate: the JSON output and any
other front end use the same ``Analysis`` object.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from tftrace.analysis.metrics.breakdown import breakdown
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.concurrency import pools_table
from tftrace.analysis.metrics.cpu_time import pool_cpu
from tftrace.analysis.metrics.ops import top_op_types
from tftrace.analysis.metrics.queue_delay import queue_delay_stats
from tftrace.analysis.metrics.steps import Steps, find_steps
from tftrace.analysis.model.run import Run
from tftrace.analysis.render.formatting import POOL_HEADERS, fmt, parallelism_text, pool_rows


@dataclass(frozen=True)
class Analysis:
    run: Run
    window: tuple[int, int]
    pools: pd.DataFrame
    queue_delay: pd.DataFrame
    cpu: pd.DataFrame
    top_ops: pd.DataFrame
    breakdown: pd.DataFrame
    steps: Steps

    def to_json(self) -> dict[str, Any]:
        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in json.loads(df.to_json(orient="records"))
            ]

        return {
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


def analyze(run: Run) -> Analysis:
    window = trace_window(run)
    return Analysis(
        run,
        window,
        pools_table(run, window),
        queue_delay_stats(run),
        pool_cpu(run, window),
        top_op_types(run),
        breakdown(run, window),
        find_steps(run),
    )


def _table(title: str, columns: tuple[str, ...], left: int = 1) -> Any:
    """A rich table whose first ``left`` columns are text, the others right-aligned figures."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right")
    return table


def findings_json(findings: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": f.id,
            "severity": f.severity.value,
            "pool": f.pool,
            "message": f.message,
            "action": f.action,
            "evidence": f.evidence,
            "window_ns": list(f.window) if f.window else None,
        }
        for f in findings
    ]


def _render_findings(console: Any, findings: list[Any]) -> None:
    if not findings:
        console.print("findings: none", markup=False, highlight=False)
        return
    console.print("[bold]findings[/bold] (most severe first)")
    for f in findings:
        where = f" [{f.pool}]" if f.pool else ""
        console.print(
            f"- {f.severity.value.upper()}{where} {f.message}", markup=False, highlight=False
        )
        console.print(f"  -> {f.action}", markup=False, highlight=False)


def render(analysis: Analysis, findings: list[Any] | None = None) -> None:
    from rich.console import Console

    console = Console(width=100)
    lo, hi = analysis.window
    console.print(
        f"{analysis.run.path}  window {(hi - lo) / 1e9:.3f} s of trace",
        markup=False,
        highlight=False,
    )
    if findings is not None:
        _render_findings(console, findings)
    pools = _table("pools (busy = owning work, see docs)", POOL_HEADERS)
    for cells in pool_rows(analysis.pools):
        pools.add_row(*cells)
    console.print(pools)
    queue = _table(
        "queue delay: scheduled -> started (us)",
        ("pool", "closures", "p50", "p90", "p99", "max", "total ms"),
    )
    for r in analysis.queue_delay.itertuples():
        queue.add_row(
            r.pool,
            str(r.closures),
            fmt(r.p50_us, ".1f"),
            fmt(r.p90_us, ".1f"),
            fmt(r.p99_us, ".1f"),
            fmt(r.max_us, ".1f"),
            fmt(r.total_ms, ".2f"),
        )
    console.print(queue)
    cpu = _table(
        "CPU truth (OS) vs traced busy time (s)",
        ("pool", "threads", "CPU", "busy", "CPU/busy", "run-queue wait"),
    )
    for r in analysis.cpu.itertuples():
        cpu.add_row(
            r.pool,
            str(r.threads),
            fmt(r.cpu_s, ".3f"),
            fmt(r.busy_s, ".3f"),
            fmt(r.cpu_per_busy, ".2f"),
            fmt(r.wait_s, ".3f"),
        )
    console.print(cpu)
    console.print(_breakdown_table(analysis))
    console.print(_ops_table(analysis))
    stats = analysis.steps.stats()
    if stats["steps"]:
        console.print(
            f"steps: {stats['steps']} ({analysis.steps.source}), mean {stats['mean_ms']:.2f} ms, "
            f"sd {stats['std_ms']:.2f} ms (cv {stats['cv']:.2f}), "
            f"min {stats['min_ms']:.2f}, max {stats['max_ms']:.2f} ms",
            markup=False,
            highlight=False,
        )
    for line in analysis.run.missing:
        console.print(f"missing: {line}", markup=False, highlight=False)


def _breakdown_table(analysis: Analysis) -> Any:
    table = _table(
        "where the wall time went (see docs for each category)", ("category", "ms", "share")
    )
    for r in analysis.breakdown.itertuples():
        table.add_row(r.category, f"{r.ns / 1e6:.1f}", f"{r.share:.1%}")
    return table


def _ops_table(analysis: Analysis) -> Any:
    table = _table(
        "top op types by time (parallelism = Eigen workers busy for it; inline = none)",
        ("op type", "count", "total ms", "mean us", "parallelism"),
    )
    for r in analysis.top_ops.itertuples():
        table.add_row(
            str(r.op_type)[:40],
            str(r.count),
            f"{r.total_ms:.2f}",
            f"{r.mean_us:.1f}",
            parallelism_text(r.parallelism),
        )
    return table
