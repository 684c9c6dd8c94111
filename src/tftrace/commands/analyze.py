"""``tftrace analyze RUN``: findings, pools, concurrency, queue delay, CPU truth, breakdown, ops,
steps; with ``--verify``, each finding's advised setting timed beside the run's own."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tftrace.commands import add_analysis_arguments, analyze_run
from tftrace.tracer.options import DEFAULT_VERIFY_REPEAT

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

NAME = "analyze"
HELP = "findings, pools, concurrency, queue delay and CPU truth of a run"


def configure(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, "the figures and findings cover")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="re-run the recorded workload with each finding's advised thread setting beside "
        "the run's own (fresh, interleaved, timed runs, kept in RUN/verify) and mark the "
        "finding confirmed or not, with the measured speedup",
    )
    parser.add_argument(
        "--verify-repeat",
        type=int,
        default=DEFAULT_VERIFY_REPEAT,
        metavar="N",
        help=f"timed runs per setting with --verify (default {DEFAULT_VERIFY_REPEAT}; "
        "3 or more to judge noise)",
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.terminal import render
    from tftrace.errors import CliError

    if ns.verify_repeat < 1:
        raise CliError(f"--verify-repeat must be at least 1, not {ns.verify_repeat}")
    analysis = analyze_run(ns)
    if ns.verify:
        analysis = _verified(analysis, ns)
    if ns.json:
        print(json.dumps(analysis.to_json(), indent=2))
    else:
        render(analysis)
    return 0


def _verified(analysis: Analysis, ns: argparse.Namespace) -> Analysis:
    from tftrace.analysis.render.console import console
    from tftrace.analysis.sweep.verify import verify
    from tftrace.commands.sweep import progress_bar
    from tftrace.errors import error_context

    with error_context("verify"), progress_bar(console(width=None, stderr=True)) as show:
        return verify(
            analysis.run,
            analysis,
            repeat=ns.verify_repeat,
            warmup_steps=ns.warmup_steps,
            progress=show,
        )
