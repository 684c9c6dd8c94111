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

from .busy import trace_window
from .concurrency import pools_table
from .cpu_time import pool_cpu
from .queue_delay import queue_delay_stats
from .run import Run


@dataclass(frozen=True)
class Analysis:
    run: Run
    window: tuple[int, int]
    pools: pd.DataFrame
    queue_delay: pd.DataFrame
    cpu: pd.DataFrame

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
            "missing": self.run.missing,
        }


def analyze(run: Run) -> Analysis:
    window = trace_window(run)
    return Analysis(
        run, window, pools_table(run, window), queue_delay_stats(run), pool_cpu(run, window)
    )


def _fmt(value: Any, spec: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec) if isinstance(value, (int, float)) else str(value)


def render(analysis: Analysis) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=100)
    lo, hi = analysis.window
    console.print(f"[bold]{analysis.run.path}[/bold]  window {(hi - lo) / 1e9:.3f} s of trace")
    pools = Table(title="pools (busy = owning work, see docs)", title_justify="left")
    for column in (
        "pool",
        "threads",
        "configured",
        "busy",
        "mean",
        "peak",
        "util.",
        "cores",
        "class",
    ):
        pools.add_column(column, justify="left" if column in ("pool", "class") else "right")
    for r in analysis.pools.itertuples():
        pools.add_row(
            r.pool,
            str(r.threads),
            _fmt(r.configured, ".0f"),
            str(r.observed),
            _fmt(r.mean),
            str(r.peak),
            _fmt(r.utilisation, ".0%"),
            _fmt(r.core_share, ".0%"),
            _fmt(r.core_class),
        )
    console.print(pools)
    queue = Table(title="queue delay: scheduled -> started (us)", title_justify="left")
    for column in ("pool", "closures", "p50", "p90", "p99", "max", "total ms"):
        queue.add_column(column, justify="left" if column == "pool" else "right")
    for r in analysis.queue_delay.itertuples():
        queue.add_row(
            r.pool,
            str(r.closures),
            _fmt(r.p50_us, ".1f"),
            _fmt(r.p90_us, ".1f"),
            _fmt(r.p99_us, ".1f"),
            _fmt(r.max_us, ".1f"),
            _fmt(r.total_ms, ".2f"),
        )
    console.print(queue)
    cpu = Table(title="CPU truth (OS) vs traced busy time (s)", title_justify="left")
    for column in ("pool", "threads", "CPU", "busy", "CPU/busy", "run-queue wait"):
        cpu.add_column(column, justify="left" if column == "pool" else "right")
    for r in analysis.cpu.itertuples():
        cpu.add_row(
            r.pool,
            str(r.threads),
            _fmt(r.cpu_s, ".3f"),
            _fmt(r.busy_s, ".3f"),
            _fmt(r.cpu_per_busy),
            _fmt(r.wait_s, ".3f"),
        )
    console.print(cpu)
    for line in analysis.run.missing:
        console.print(f"missing: {line}", markup=False, highlight=False)
