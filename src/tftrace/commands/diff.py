"""``tftrace diff RUN_A RUN_B``: two runs of one workload compared over their steady steps:
step time with a verdict, pools, wall-time breakdown, op types, findings, manifest.
``tftrace diff SWEEP``: a sweep's recorded settings, each against its recorded baseline.
``tftrace diff DIR_A DIR_B``: two directories of hosts of one job: the job's step period with a
verdict, each host against the host of the same name, the workers and the straggler of each."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tftrace.commands import add_cpus_argument, add_window_arguments, analysis_options, path_kind
from tftrace.commands.progress import stages_bar

if TYPE_CHECKING:
    from tftrace.analysis.cluster.layout import PathKind

NAME = "diff"
HELP = "compare two runs of one workload: what changed, per pool, and whether it is real"
USAGE = (
    "tftrace diff [options] RUN_A RUN_B\n       tftrace diff [options] SWEEP\n"
    "       tftrace diff [options] DIR_A DIR_B (directories of hosts)"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_a",
        type=Path,
        metavar="RUN_A",
        help="the baseline run (or a sweep directory, or a directory of hosts: DIR/<task>/)",
    )
    parser.add_argument(
        "run_b",
        type=Path,
        metavar="RUN_B",
        nargs="?",
        help="the run compared with it; left out, RUN_A is a sweep directory recorded with "
        "--record and each recorded setting is compared with the recorded baseline",
    )
    add_window_arguments(parser, "each run is compared over")
    add_cpus_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--html", type=Path, metavar="PATH", help="also write the comparison as an HTML page"
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.model.memory import small_pages
    from tftrace.errors import CliError
    from tftrace.tracer.safe_files import UnsafePathError, write_text_atomic

    options = analysis_options(ns)  # the same for two runs, a sweep's and two jobs' hosts
    kinds = _kinds(ns)
    small_pages()
    if kinds == ("sweep",):
        result: Any = _sweep(ns, options)
    elif kinds == ("hosts", "hosts"):
        result = _clusters(ns, options)
    else:
        result = _runs(ns, options)
    if ns.html is not None:
        try:
            write_text_atomic(ns.html, result.to_html())  # a link there: replaced, not followed
        except UnsafePathError:
            raise
        except OSError as e:
            raise CliError(f"--html {ns.html}: cannot write ({e.strerror})") from None
    if ns.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result, end="")
        if ns.html is not None:
            print(f"wrote {ns.html}")
    return 0


def _runs(ns: argparse.Namespace, options: dict[str, Any]) -> Any:
    from tftrace.analysis.diff import diff
    from tftrace.analysis.model.run import load
    from tftrace.analysis.progress import LOAD_STAGES

    runs = []
    for path in (ns.run_a, ns.run_b):
        with stages_bar(f"loading {path}", len(LOAD_STAGES), ns):
            runs.append(load(path))
    with stages_bar("comparing", 1, ns):
        return diff(runs[0], runs[1], **options)


def _sweep(ns: argparse.Namespace, options: dict[str, Any]) -> Any:
    from tftrace.analysis.diff import diff_sweep

    with stages_bar(f"comparing the settings of {ns.run_a}", 1, ns):
        return diff_sweep(ns.run_a, **options)


def _kinds(ns: argparse.Namespace) -> tuple[PathKind, ...]:
    """What was given: one sweep, two runs or two directories of hosts; else one line."""
    from tftrace.analysis.cluster.layout import kind_of
    from tftrace.errors import CliError

    if ns.run_b is None:
        if kind_of(ns.run_a) != "sweep":
            raise CliError(
                f"{ns.run_a} is not a sweep directory: give two runs (RUN_A RUN_B), or one "
                "sweep directory recorded with tftrace sweep --record"
            )
        return ("sweep",)
    kinds = (
        path_kind(NAME, ns.run_a, ("run", "hosts")),
        path_kind(NAME, ns.run_b, ("run", "hosts")),
    )
    if len(set(kinds)) > 1:
        run = ns.run_a if kinds[0] == "run" else ns.run_b
        raise CliError(
            f"{run} is not a directory of hosts: a directory of hosts is compared with "
            "another one (DIR_A DIR_B), a run with a run"
        )
    return kinds


def _clusters(ns: argparse.Namespace, options: dict[str, Any]) -> Any:
    """Each host of one job against the host of the same name, and the job's period; every
    option reaches each host (its diff and its side's cross-host view) as it does one run."""
    from tftrace.analysis.cluster.diff import diff_clusters

    with stages_bar(f"comparing the hosts of {ns.run_a} and {ns.run_b}", 1, ns):
        return diff_clusters(ns.run_a, ns.run_b, **options)
