"""The progress bars the commands draw on stderr: ``stages_bar`` over the stages of a load or an
analysis (``analysis.progress``), ``progress_bar`` over the runs of a sweep or a verification.

Light to import: rich loads only when a bar is drawn."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tftrace.analysis.sweep.session import SweepProgress


# A bar appears once the work has taken this long: quick commands do not flicker.
PROGRESS_DELAY_S = float(os.environ.get("TFTRACE_PROGRESS_DELAY_S", "2"))


@contextmanager
def stages_bar(what: str, stages: int, ns: argparse.Namespace) -> Iterator[None]:
    """A bar on stderr over the stages that ``analysis.progress.stage`` reports inside the
    block: only where stderr is a terminal and the output is not --json, and only after
    ``PROGRESS_DELAY_S``; it leaves nothing behind."""
    from tftrace.analysis.progress import reporting
    from tftrace.analysis.render.console import console
    from tftrace.analysis.render.formatting import printable

    err = console(width=None, stderr=True)
    if getattr(ns, "json", False) or not err.is_terminal:
        yield
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(  # ``what`` names a path: text, not markup
        TextColumn(
            printable(what).replace("{", "{{").replace("}", "}}") + ": {task.description}",
            markup=False,
        ),
        BarColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    task = bar.add_task("", total=stages)
    started = threading.Timer(PROGRESS_DELAY_S, bar.start)
    started.daemon = True

    begun = 0

    def advance(name: str) -> None:  # a stage begins: the ones before it are done
        nonlocal begun
        bar.update(task, description=name, completed=min(begun, stages))
        begun += 1

    started.start()
    try:
        with reporting(advance):
            yield
    finally:
        started.cancel()
        bar.stop()


@contextmanager
def progress_bar(console: Any) -> Iterator[Callable[[SweepProgress], None]]:
    """A progress callback that draws a bar on ``console``: from the first run on, so that
    a bad argument gets its one line without the bar's."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tftrace.analysis.render.formatting import printable

    bar = Progress(  # the description names settings (variables' values): text, not markup
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task("sweep", total=None)

    def show(p: SweepProgress) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, description=printable(p.text), completed=p.done, total=p.total)

    try:
        yield show
    finally:
        if bar.live.is_started:  # a bar never shown leaves no line behind
            bar.stop()
