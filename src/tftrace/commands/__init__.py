"""Subcommands, one module each, found by ``tftrace.cli`` at start-up.

A command module defines ``NAME``, ``HELP``, ``configure(parser)`` (its arguments) and
``run(namespace) -> int``. Heavy imports belong inside ``run``.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def add_run_argument(parser: argparse.ArgumentParser) -> None:
    """The RUN argument and --session, as every command that reads a run takes them."""
    parser.add_argument("run", type=Path, help="a run directory, TensorBoard log dir or .xplane.pb")
    parser.add_argument("--session", help="the profile session to load (default: the newest)")


def add_window_arguments(parser: argparse.ArgumentParser, covers: str) -> None:
    """--window and --warmup-steps, as every command whose output covers a span of the run
    takes them (``covers``: what the window selects, for the help)."""
    parser.add_argument(
        "--window",
        default="steady",
        metavar="steady|all|A:B|T0:T1",
        help=f"the span {covers}: steady (default: the steps after the warm-up, or the whole "
        "trace where no steps exist), all, steps A:B (from 1; A: or :B leave an end open) or "
        "T0:T1 in seconds on the run's axis (with a decimal point or s: 1.5:3.0, 2s:4s)",
    )
    parser.add_argument(
        "--warmup-steps",
        type=int,
        default=1,
        metavar="N",
        help="steps of the warm-up, left out of a steady window (default 1: the call that traces)",
    )


def add_cpus_argument(parser: argparse.ArgumentParser) -> None:
    """--cpus, as every command that analyses a run takes it."""
    parser.add_argument(
        "--cpus",
        type=int,
        metavar="N",
        help="the CPUs the process could use, where the run does not say (a bare .xplane.pb: "
        "pool sizes come from the trace's threads); replaces a recorded count",
    )


def analysis_options(ns: argparse.Namespace) -> dict[str, Any]:
    """The window arguments and --cpus, as ``tftrace.analyze`` takes them."""
    from tftrace.errors import CliError

    if ns.cpus is not None and ns.cpus < 1:
        raise CliError(f"--cpus must be at least 1, not {ns.cpus}")
    return {**window_options(ns), "cpus": ns.cpus}


def window_options(ns: argparse.Namespace) -> dict[str, Any]:
    """The window arguments as ``tftrace.analyze`` takes them."""
    return {"window": ns.window, "warmup_steps": ns.warmup_steps}


def add_analysis_arguments(parser: argparse.ArgumentParser, covers: str) -> None:
    """RUN, --session, --window, --warmup-steps and --cpus: what a command that analyses a run
    takes (``covers``: what the window selects, for the help)."""
    add_run_argument(parser)
    add_window_arguments(parser, covers)
    add_cpus_argument(parser)


def analyze_run(ns: argparse.Namespace) -> Any:
    """``tftrace.analyze`` of the run named on the command line, with its options, under a
    progress bar (on a terminal, without --json)."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.progress import ANALYZE_STAGES, LOAD_STAGES

    options = analysis_options(ns)
    with stages_bar(f"analysing {ns.run}", len(LOAD_STAGES) + len(ANALYZE_STAGES), ns):
        return analyze(_load(ns), **options)


def load_run(ns: argparse.Namespace) -> Any:
    """``load()`` the run named on the command line (bad input raises ``TraceError``), under a
    progress bar (on a terminal, without --json)."""
    from tftrace.analysis.progress import LOAD_STAGES

    with stages_bar(f"loading {ns.run}", len(LOAD_STAGES), ns):
        return _load(ns)


def _load(ns: argparse.Namespace) -> Any:
    from tftrace.analysis.model.memory import small_pages
    from tftrace.analysis.model.run import load

    small_pages()
    return load(ns.run, session=ns.session)


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
