"""Subcommands, one module each, found by ``tftrace.cli`` at start-up.

A command module defines ``NAME``, ``HELP``, ``configure(parser)`` (its arguments) and
``run(namespace) -> int``. Heavy imports belong inside ``run``. A command maps its flags onto
library calls: ``path_kind`` says whether it was given one run, a sweep or a directory of hosts
(``analysis.cluster.layout.kind_of`` decides, for every command), and every analysis option
(``analysis_options``) reaches each host of a directory as it reaches one run, or is refused in
one line (``refuse_for_hosts``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tftrace.analysis.cluster.layout import PathKind


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
        "pool sizes come from the trace's threads); replaces a recorded count (each host's, "
        "for a directory of hosts)",
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
    from tftrace.commands.progress import stages_bar

    options = analysis_options(ns)
    with stages_bar(f"analysing {ns.run}", len(LOAD_STAGES) + len(ANALYZE_STAGES), ns):
        return analyze(_load(ns), **options)


def load_run(ns: argparse.Namespace) -> Any:
    """``load()`` the run named on the command line (bad input raises ``TraceError``), under a
    progress bar (on a terminal, without --json)."""
    from tftrace.analysis.progress import LOAD_STAGES
    from tftrace.commands.progress import stages_bar

    with stages_bar(f"loading {ns.run}", len(LOAD_STAGES), ns):
        return _load(ns)


def _load(ns: argparse.Namespace) -> Any:
    from tftrace.analysis.model.memory import small_pages
    from tftrace.analysis.model.run import load

    small_pages()
    return load(ns.run, session=ns.session)


# What each kind of path is, and where a command that does not take it sends the user.
KINDS = {"run": "one run", "hosts": "a directory of hosts", "sweep": "a sweep directory"}
INSTEAD = {
    "run": "",
    "hosts": "; give one host's run directory (DIR/<host>), or tftrace analyze DIR for the job",
    "sweep": "; tftrace summary shows its result, tftrace diff compares its recorded settings",
}


def path_kind(command: str, path: Path, takes: Iterable[PathKind] = ("run",)) -> PathKind:
    """What ``path`` holds (``analysis.cluster.layout.kind_of``, the one place that decides),
    refused in one line where ``command`` does not take that kind."""
    from tftrace.analysis.cluster.layout import kind_of
    from tftrace.errors import CliError

    kind = kind_of(path)
    takes = tuple(takes)
    if kind not in takes:
        wanted = " or ".join(KINDS[k] for k in takes)
        raise CliError(f"{command}: {path} is {KINDS[kind]}, not {wanted}{INSTEAD[kind]}")
    return kind


def refuse_for_hosts(command: str, ns: argparse.Namespace, *flags: str) -> None:
    """Refuse in one line each of ``flags`` (their dests) given for a directory of hosts:
    what picks from one run's files cannot apply to every host alike."""
    from tftrace.errors import CliError

    why = {
        "session": "--session picks a profile session of one run; DIR holds hosts",
        "verify": "--verify takes one run; run it on a host's directory",
        "predict": "--predict takes one run; run it on a host's directory",
    }
    for flag in flags:
        if getattr(ns, flag, None) not in (None, False):
            raise CliError(f"{command}: {why[flag]}")
