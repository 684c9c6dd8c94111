"""Terminal rendering of a run's threads: who is in which pool, and why we think so."""

from __future__ import annotations

import pandas as pd

from tftrace.analysis.model.run import Run


def thread_rows(run: Run) -> pd.DataFrame:
    """The threads table with per-thread event counts, ordered by pool then thread."""
    events = run.events.groupby("thread", observed=True).size()
    table = run.threads.assign(events=run.threads["thread"].map(events).fillna(0).astype(int))
    return table.sort_values(["pool", "thread"], kind="stable")


def render_threads(run: Run) -> None:
    from tftrace.analysis.render.console import say, wide_console
    from tftrace.analysis.render.console import table as plain_table

    # names (OS, trace line, evidence) are the run's: shown as text (``console.table``)
    table = plain_table(f"threads of {run.path}", title_justify="left", expand=False)
    for column in ("pool", "tid", "OS name", "trace line", "events", "evidence"):
        table.add_column(column, overflow="fold")
    for row in thread_rows(run).itertuples():
        table.add_row(
            row.pool,
            "" if pd.isna(row.tid) else str(row.tid),
            "" if pd.isna(row.os_name) else str(row.os_name),
            "" if pd.isna(row.line_name) else str(row.line_name),
            str(row.events),
            row.evidence,
            end_section=False,
        )
    console = wide_console()
    console.print(table)
    for note in [*run.notes, *(f"missing: {m}" for m in run.missing)]:
        say(console, note)
