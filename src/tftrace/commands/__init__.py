"""Subcommands, one module each, found by ``tftrace.cli`` at start-up.

A command module defines ``NAME``, ``HELP``, ``configure(parser)`` (its arguments) and
``run(namespace) -> int``. Heavy imports belong inside ``run``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


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
        "pool sizes come from the trace's threads); replaces a recorded count",
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
    """``tftrace.analyze`` of the run named on the command line, with its options."""
    from tftrace.analysis.analyze import analyze

    return analyze(load_run(ns), **analysis_options(ns))


def load_run(ns: argparse.Namespace) -> Any:
    """``load()`` the run named on the command line (bad input raises ``TraceError``)."""
    from tftrace.analysis.model.run import load

    return load(ns.run, session=ns.session)
