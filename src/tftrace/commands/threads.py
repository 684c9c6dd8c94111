"""``tftrace threads RUN``: every thread of a run, its pool and the evidence for it.

No ``--window``: a thread's pool and the evidence for it do not depend on a span of time (the
table lists every thread any source saw, first and last sighting included)."""

from __future__ import annotations

import argparse

from tftrace.commands import add_run_argument, load_run, path_kind

NAME = "threads"
HELP = "every thread of a run, its pool and the evidence"


def configure(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the table as JSON records")


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.threads import render_threads

    path_kind(NAME, ns.run)  # one run only: a directory of hosts or a sweep, one line
    loaded = load_run(ns)
    if ns.json:
        print(loaded.threads.to_json(orient="records", indent=2))
    else:
        render_threads(loaded)
    return 0
