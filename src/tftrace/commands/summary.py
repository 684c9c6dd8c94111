"""``tftrace summary RUN``: what a run directory holds (from its manifest, no trace read),
or, given a sweep directory, the sweep's table and verdict again."""

from __future__ import annotations

import argparse
from pathlib import Path

from tftrace.errors import CliError

NAME = "summary"
HELP = "print what a run directory holds, or a sweep directory's result"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run", type=Path, help="a run directory (tftrace record) or a sweep directory (sweep)"
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.run_summary import RunDirError, render_summary, summarize

    if (ns.run / "sweep.json").exists():
        return _sweep(ns.run)
    try:
        summary = summarize(ns.run)
    except RunDirError as e:
        raise CliError(str(e)) from None
    render_summary(summary)
    return 0


def _sweep(path: Path) -> int:
    from tftrace.analysis.sweep.report import render
    from tftrace.analysis.sweep.result import SweepDirError, load_sweep
    from tftrace.analysis.sweep.timing import TimingError
    from tftrace.errors import TraceError

    try:
        result = load_sweep(path)
    except (SweepDirError, TimingError, TraceError) as e:
        raise CliError(str(e)) from None
    render(result)
    return 0
