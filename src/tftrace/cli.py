"""The ``tftrace`` command: a thin shell over the library; errors become exit codes here only."""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import pkgutil
import sys
from types import ModuleType

from tftrace.errors import TftraceError
from tftrace.target import parse_target, split_target
from tftrace.version import __version__

USAGE_ERROR = 2


@functools.cache
def command_modules() -> dict[str, ModuleType]:
    """The subcommands defined in ``tftrace.commands`` (one module each)."""
    import tftrace.commands as package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            found[module.NAME] = module
    return found


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="tftrace", description="Profile and explain TensorFlow's CPU thread pools."
    )
    parser.add_argument("--version", action="version", version=f"tftrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers: dict[str, argparse.ArgumentParser] = {}
    for name, module in sorted(command_modules().items(), key=_command_order):
        subparsers[name] = sub.add_parser(
            name, help=module.HELP, usage=getattr(module, "USAGE", None)
        )
        module.configure(subparsers[name])
    return parser, subparsers


def _command_order(item: tuple[str, ModuleType]) -> tuple[int, str]:
    return (getattr(item[1], "ORDER", 50), item[0])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, subparsers = build_parser()
    modules = command_modules()
    try:
        if argv and getattr(modules.get(argv[0]), "TAKES_TARGET", False):
            # The workload's own options must not be parsed as ours.
            own, words = split_target(subparsers[argv[0]], argv[1:])
            ns = subparsers[argv[0]].parse_args(own)
            ns.command = argv[0]
            ns.target = parse_target(argv[0], words)
            ns.target_after_separator = len(own) + len(words) < len(argv) - 1  # "--" used
            return int(modules[argv[0]].run(ns))
        ns = parser.parse_args(argv)
        if ns.command in modules:
            return int(modules[ns.command].run(ns))
        parser.print_help()
        return USAGE_ERROR
    except TftraceError as e:  # every user-facing failure: one line, no traceback
        from tftrace.printable import printable

        print(f"tftrace: error: {printable(e)}", file=sys.stderr)  # names in it: shown as text
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tftrace analyze DIR | head`: the reader had enough
        # Python would report the failed flush of stdout at exit: point it at /dev/null
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a process killed by SIGPIPE
    except MemoryError:  # what the memory check before a load did not foresee
        print(
            "tftrace: error: out of memory: analyse a shorter recording, or on a machine with "
            "more memory",
            file=sys.stderr,
        )
        return USAGE_ERROR
