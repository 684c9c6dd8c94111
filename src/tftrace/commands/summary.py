"""``tftrace summary RUN``: what a run directory holds (from its manifest, no trace read)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tftrace.errors import CliError

NAME = "summary"
HELP = "print what a run directory holds"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="a run directory written by tftrace record")


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.run_summary import RunDirError, render_summary, summarize

    try:
        summary = summarize(ns.run)
    except RunDirError as e:
        raise CliError(str(e)) from None
    render_summary(summary)
    return 0
