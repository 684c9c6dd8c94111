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


def load_run(ns: argparse.Namespace) -> Any:
    """``load()`` the run named on the command line (bad input raises ``TraceError``)."""
    from tftrace.analysis.model.run import load

    return load(ns.run, session=ns.session)
