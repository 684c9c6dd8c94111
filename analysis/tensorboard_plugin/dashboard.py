"""The Thread pools tab's data for one run: an Analysis as the JSON the page draws.

It is ``Analysis.to_json()`` (what ``tftrace analyze --json`` prints) with what the report adds
to it, in the report's own words: the core-use headline and idle causes
(``core_use_text``), the window and warm-up lines, the run's manifest, the concurrency series and
queue-delay distribution of the report's figures, the steps with each pool's mean concurrency
per step (at most 1,000 of them, as the TensorBoard summaries: ``Analysis.step_points``), the
threads with their pool and evidence (``threads.thread_rows``), and for a server its requests
(``requests_view``: the report's lines and tables, requests in flight and completed over time,
the latency distribution; None for a loop). Nothing is computed here
that the Analysis does not hold. Text from the trace stays text: the page puts it into the DOM
as text nodes, never as markup.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.analyze import Analysis
from tftrace.analysis.render import census_text, requests_text
from tftrace.analysis.render.core_use_text import HEADERS as CAUSE_HEADERS
from tftrace.analysis.render.core_use_text import cause_rows, headline
from tftrace.analysis.render.html_sections import manifest_pairs
from tftrace.analysis.render.threads import thread_rows
from tftrace.analysis.render.window_text import (
    step_summary_lines,
    steps_line,
    warmup_line,
    window_line,
)
from tftrace.version import __version__

THREAD_COLUMNS = ("pool", "tid", "os_name", "tf_name", "python_name", "line_name", "events")


def dashboard(analysis: Analysis) -> dict[str, Any]:
    """Everything the tab shows of one analysed run, as plain JSON values."""
    data = analysis.to_json()
    run = analysis.run
    use = analysis.core_use
    data.update(
        tftrace_version=__version__,
        headline=headline(analysis),
        idle_causes={"headers": list(CAUSE_HEADERS), "rows": cause_rows(analysis)},
        core_use_notes=list(use.notes) if use else [],
        window_line=window_line(analysis),
        warmup_line=warmup_line(analysis),
        manifest=manifest_pairs(run.manifest) if run.manifest.exists else [],
        notes=list(run.notes),
        concurrency=concurrency_figure(analysis),
        queue_delay_distribution=records(analysis.queue_delay_distribution),
        steps={**data["steps"], **steps_figure(analysis)},  # its stats; points, not the table
        threads=threads_table(analysis),
        census_view=census_view(analysis),
    )
    view = requests_view(analysis)
    if view is not None:  # a loop's data stays as it was
        data["requests_view"] = view
    return clean(data)


def requests_view(analysis: Analysis) -> dict[str, Any] | None:
    """A server's requests as the tab shows them: the report's lines (the window named), the
    latency and breakdown tables, requests in flight and completed per bin over the window
    (t_s since its start), and the latency distribution; None for a loop."""
    requests, over_time = analysis.requests, analysis.requests_over_time
    if requests is None or over_time is None or analysis.latency_distribution is None:
        return None
    return {
        "lines": requests_text.summary_lines(analysis),
        "window_note": requests_text.window_note(analysis),
        "latency": {
            "title": requests_text.LATENCY_TITLE,
            "headers": list(requests_text.LATENCY_HEADERS),
            "rows": requests_text.latency_rows(analysis),
        },
        "breakdown": {
            "title": requests_text.BREAKDOWN_TITLE,
            "headers": list(requests_text.BREAKDOWN_HEADERS),
            "rows": requests_text.breakdown_rows(analysis),
        },
        "over_time": {
            "t_s": over_time["t_s"].tolist(),
            "in_flight": over_time["in_flight"].tolist(),
            "completed": over_time["completed"].tolist(),
            "completed_per_s": over_time["completed_per_s"].tolist(),
            "bin_s": (
                float(over_time["t_s"].iloc[1] - over_time["t_s"].iloc[0])
                if len(over_time) > 1
                else None
            ),
        },
        "latency_distribution": records(analysis.latency_distribution),
    }


def census_view(analysis: Analysis) -> dict[str, Any] | None:
    """The threads by pool against the CPUs as the terminal shows them: its title, table (the
    report's cells) and lines; None without a census."""
    census = analysis.census
    if census is None:
        return None
    return {
        "title": census_text.title(analysis),
        "headers": list(census_text.HEADERS),
        "rows": [list(r) for r in census_text.rows(analysis)],
        "lines": census_text.summary_lines(analysis),
    }


def concurrency_figure(analysis: Analysis) -> dict[str, Any]:
    """Busy threads per pool over the window (the report's figure), with the schedulable CPUs
    as its reference line."""
    stack = analysis.concurrency_over_time
    return {
        "t_s": stack["t_s"].tolist(),
        "pools": {pool.value: stack[pool.value].tolist() for pool in analysis.concurrency},
        "cores": analysis.run.manifest.usable_cpus,
    }


def steps_figure(analysis: Analysis) -> dict[str, Any]:
    """The steps: how they were found, the report's summary lines, and one point per step
    (duration, breakdown shares, each pool's mean concurrency), binned above 1,000 steps
    (``Analysis.step_points``)."""
    steps, points = analysis.steps, analysis.step_points
    return {
        "source": steps.source,
        "count": len(steps.table),
        "binned": len(points) < len(steps.table),
        "line": steps_line(analysis),
        "summary": step_summary_lines(analysis),
        "pools": [str(c) for c in analysis.step_concurrency.columns.drop("step")],
        "points": records(points.drop(columns=["start_ns", "end_ns"])),
        "table": None,  # every step is in `tftrace analyze --json` and `tftrace export`
    }


def threads_table(analysis: Analysis) -> list[dict[str, Any]]:
    """One row per thread: its pool, ids and names, trace events, and what decided its pool.
    Ids stay exact (a trace line id needs 64 bits: it is sent as text)."""
    rows = []
    for r in thread_rows(analysis.run).to_dict("records"):
        row = {c: _plain(r[c]) for c in THREAD_COLUMNS}
        row["line_id"] = None if _plain(r["line_id"]) is None else str(r["line_id"])
        row["evidence"] = str(r["evidence"])
        rows.append(row)
    return rows


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON records (column names as they are, missing values as None)."""
    return [{str(k): _plain(v) for k, v in r.items()} for r in frame.to_dict("records")]


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if isinstance(value, (bool, int, float, str)) else str(value)


def clean(value: Any) -> Any:
    """JSON values all the way down: NaN and infinities become None, tuples lists."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return _plain(value)
