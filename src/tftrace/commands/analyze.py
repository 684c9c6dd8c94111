"""``tftrace analyze RUN``: findings, pools, queue delay, CPU truth, breakdown, ops, steps."""

from __future__ import annotations

import argparse
import json

from tftrace.commands import add_analysis_arguments, analyze_run

NAME = "analyze"
HELP = "findings, pools, concurrency, queue delay and CPU truth of a run"


def configure(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, "the figures and findings cover")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.console import console
    from tftrace.analysis.render.terminal import render

    # A spinner on a terminal while a large trace loads; nothing when output is redirected.
    with console(width=None, stderr=True).status(f"loading {ns.run} ..."):
        analysis = analyze_run(ns)
    if ns.json:
        print(json.dumps(analysis.to_json(), indent=2))
    else:
        render(analysis)
    return 0
