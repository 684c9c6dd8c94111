"""``tftrace summary RUN``: what a run directory holds (from its manifest, no trace read),
or, given a sweep directory, the sweep's table and verdict again."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "summary"
HELP = "print what a run directory holds, or a sweep directory's result"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run", type=Path, help="a run directory (tftrace record) or a sweep directory (sweep)"
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.run_summary import render_summary, summarize
    from tftrace.commands import path_kind

    if path_kind(NAME, ns.run, ("run", "sweep")) == "sweep":
        return _sweep(ns.run)
    render_summary(summarize(ns.run))
    return 0


def _sweep(path: Path) -> int:
    from tftrace.analysis.sweep.report import render
    from tftrace.analysis.sweep.result import load_sweep

    render(load_sweep(path))
    return 0
