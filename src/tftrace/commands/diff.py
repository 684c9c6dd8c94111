"""``tftrace diff RUN_A RUN_B``: two runs of one workload compared over their steady steps:
step time with a verdict, pools, wall-time breakdown, op types, findings, manifest."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tftrace.commands import add_cpus_argument, add_window_arguments, analysis_options, stages_bar

NAME = "diff"
HELP = "compare two runs of one workload: what changed, per pool, and whether it is real"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path, metavar="RUN_A", help="the baseline run")
    parser.add_argument("run_b", type=Path, metavar="RUN_B", help="the run compared with it")
    add_window_arguments(parser, "each run is compared over")
    add_cpus_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--html", type=Path, metavar="PATH", help="also write the comparison as an HTML page"
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.diff import diff
    from tftrace.analysis.diff.render import render
    from tftrace.analysis.model.memory import small_pages
    from tftrace.analysis.model.run import load
    from tftrace.analysis.progress import LOAD_STAGES
    from tftrace.errors import CliError

    options = analysis_options(ns)
    small_pages()
    runs = []
    for path in (ns.run_a, ns.run_b):
        with stages_bar(f"loading {path}", len(LOAD_STAGES), ns):
            runs.append(load(path))
    with stages_bar("comparing", 1, ns):
        result = diff(runs[0], runs[1], **options)
    if ns.html is not None:
        try:
            ns.html.write_text(result.to_html(), encoding="utf-8")
        except OSError as e:
            raise CliError(f"--html {ns.html}: cannot write ({e.strerror})") from None
    if ns.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        render(result)
        if ns.html is not None:
            print(f"wrote {ns.html}")
    return 0
