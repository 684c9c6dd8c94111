"""``tftrace analyze RUN``: findings, pools, concurrency, queue delay, CPU truth, breakdown, ops,
steps; with ``--predict``, each finding's advised setting and the best setting predicted from
the trace; with ``--verify``, each advised setting timed beside the run's own (and
predicted)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tftrace.commands import (
    add_analysis_arguments,
    analysis_options,
    analyze_run,
    path_kind,
    refuse_for_hosts,
)
from tftrace.tracer.options import DEFAULT_VERIFY_REPEAT

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

NAME = "analyze"
HELP = "findings, pools, concurrency, queue delay and CPU truth of a run"


def configure(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, "the figures and findings cover")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--predict",
        action="store_true",
        help="predict from the trace each finding's advised pool sizes and the best of the "
        "sizes a sweep would try, without running them (tftrace predict's model; seconds on "
        "a large trace)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="re-run the recorded workload with each finding's advised setting (pool sizes, "
        "environment variables, CPUs) beside the run's own (fresh, interleaved, timed runs, "
        "kept in RUN/verify) and mark the finding confirmed or not, with the measured speedup "
        "beside the predicted one",
    )
    parser.add_argument(
        "--verify-repeat",
        type=int,
        default=DEFAULT_VERIFY_REPEAT,
        metavar="N",
        help=f"timed runs per setting with --verify (default {DEFAULT_VERIFY_REPEAT}; "
        "3 or more to judge noise)",
    )
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="for a directory of hosts: analyse them on a Dask cluster (its scheduler's "
        "address, or 'local' for a local one; the workers must see RUN at the same path) "
        "instead of a process pool",
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.errors import CliError

    if ns.verify_repeat < 1:
        raise CliError(f"--verify-repeat must be at least 1, not {ns.verify_repeat}")
    if path_kind(NAME, ns.run, ("run", "hosts")) == "hosts":
        return _cluster(ns)
    if ns.dask:
        raise CliError(f"--dask is for a directory of hosts; {ns.run} is one run")
    analysis = analyze_run(ns)
    if ns.predict or ns.verify:
        analysis = _predicted(analysis, ns)
    if ns.verify:
        analysis = _verified(analysis, ns)
    if ns.json:
        print(json.dumps(analysis.to_json(), indent=2))
    else:
        from tftrace.analysis.render.terminal import render

        render(analysis)
    return 0


def _cluster(ns: argparse.Namespace) -> int:
    """Every host analysed with the options one run takes (--window, --warmup-steps, --cpus)."""
    from tftrace.analysis.cluster import analyze_cluster
    from tftrace.commands.executors import dask_executor

    refuse_for_hosts(NAME, ns, "session", "verify", "predict")
    options = analysis_options(ns)
    with dask_executor(ns.dask) as executor:
        cluster = analyze_cluster(ns.run, executor=executor, **options)
    print(json.dumps(cluster.to_json(), indent=2) if ns.json else cluster)
    return 0  # a lost host is a finding of the analysis, which is printed


def _predicted(analysis: Analysis, ns: argparse.Namespace) -> Analysis:
    from tftrace.analysis.predict.advice import with_predictions

    return with_predictions(analysis.run, analysis, **analysis_options(ns))


def _verified(analysis: Analysis, ns: argparse.Namespace) -> Analysis:
    from tftrace.analysis.render.console import console
    from tftrace.analysis.sweep.verify import verify
    from tftrace.commands.progress import progress_bar
    from tftrace.errors import error_context

    with error_context("verify"), progress_bar(console(width=None, stderr=True)) as show:
        return verify(
            analysis.run,
            analysis,
            repeat=ns.verify_repeat,
            warmup_steps=ns.warmup_steps,
            progress=show,
        )
