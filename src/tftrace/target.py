"""The workload on a command line: ``[options] (script.py | -m module) [args ...]``."""

from __future__ import annotations

import argparse

from tftrace.errors import CliError
from tftrace.tracer.options import Target


def split_target(parser: argparse.ArgumentParser, args: list[str]) -> tuple[list[str], list[str]]:
    """Split a command's own options from the target and its arguments.

    Like ``python``: the first word that is not one of our options (or ``-m NAME``)
    starts the target; everything after it belongs to the workload.
    """
    takes_value = {
        opt for action in parser._actions for opt in action.option_strings if action.nargs != 0
    }
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            return args[:i], args[i + 1 :]
        if token == "-m" or not token.startswith("-") or token == "-":
            return args[:i], args[i:]
        if token in takes_value:
            i += 1
        i += 1
    return args, []


def parse_target(command: str, words: list[str]) -> Target:
    if not words:
        raise CliError(
            f"{command}: give a script (tftrace {command} script.py) or a module (-m name)"
        )
    if words[0] == "-m":
        if len(words) < 2:
            raise CliError(f"{command}: -m needs a module name")
        return Target("module", words[1], tuple(words[2:]))
    return Target("script", words[0], tuple(words[1:]))
