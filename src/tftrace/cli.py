"""The ``tftrace`` command: a thin shell over the library; errors become exit codes here only."""

from __future__ import annotations

import argparse
import functools
import importlib
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

from tftrace import __version__
from tftrace.errors import CliError

USAGE_ERROR = 2


def _record_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from tftrace.tracer.options import DEFAULT_PYSPY_RATE, DEFAULT_SAMPLE_HZ

    p = sub.add_parser(
        "record",
        help="run a workload under the TF profiler, py-spy and an OS thread sampler",
        usage="tftrace record [options] (script.py | -m module) [args ...]",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        help="run directory to create (default: a new timestamped directory under ./tftrace-runs/)",
    )
    p.add_argument("--name", help="a label for the run (kept in the manifest and the default path)")
    g = p.add_argument_group("TensorFlow profiler")
    g.add_argument("--no-tf-profiler", action="store_true", help="do not run the TF profiler")
    g.add_argument(
        "--delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="start the profiler this long after the workload starts",
    )
    g.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop the profiler after this long (default: the whole run)",
    )
    g = p.add_argument_group("py-spy (Python threads)")
    g.add_argument("--no-pyspy", action="store_true", help="do not run py-spy")
    g.add_argument(
        "--pyspy-rate",
        type=int,
        default=DEFAULT_PYSPY_RATE,
        metavar="HZ",
        help=f"py-spy samples per second (default {DEFAULT_PYSPY_RATE})",
    )
    g.add_argument(
        "--native", action="store_true", help="py-spy --native (very slow on TF processes)"
    )
    g.add_argument(
        "--pyspy-blocking",
        action="store_true",
        help="let py-spy pause the process per sample (exact, but costly)",
    )
    g.add_argument("--pyspy-path", metavar="PATH", help="the py-spy executable to use")
    g = p.add_argument_group("OS thread sampler")
    g.add_argument("--no-sampler", action="store_true", help="do not sample /proc")
    g.add_argument(
        "--sample-hz",
        type=float,
        default=DEFAULT_SAMPLE_HZ,
        metavar="HZ",
        help=f"samples per second (default {DEFAULT_SAMPLE_HZ:g})",
    )
    return p


def split_target(parser: argparse.ArgumentParser, args: list[str]) -> tuple[list[str], list[str]]:
    """Split ``record``'s own options from the target and its arguments.

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


def cmd_record(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from tftrace.tracer.options import RecordOptions, Target
    from tftrace.tracer.recorder import RecordError, record

    own, target_argv = split_target(parser, argv)
    ns = parser.parse_args(own)
    if not target_argv:
        raise CliError("record: give a script (tftrace record script.py) or a module (-m name)")
    if target_argv[0] == "-m":
        if len(target_argv) < 2:
            raise CliError("record: -m needs a module name")
        target = Target("module", target_argv[1], tuple(target_argv[2:]))
    else:
        target = Target("script", target_argv[0], tuple(target_argv[1:]))
    if ns.delay < 0 or (ns.duration is not None and ns.duration <= 0):
        raise CliError("record: --delay must be >= 0 and --duration > 0")
    if ns.sample_hz <= 0 or ns.pyspy_rate <= 0:
        raise CliError("record: rates must be positive")
    options = RecordOptions(
        target=target,
        output=ns.output,
        name=ns.name,
        tf_profiler=not ns.no_tf_profiler,
        delay_s=ns.delay,
        duration_s=ns.duration,
        pyspy=not ns.no_pyspy,
        pyspy_rate=ns.pyspy_rate,
        pyspy_native=ns.native,
        pyspy_blocking=ns.pyspy_blocking,
        pyspy_path=ns.pyspy_path,
        sampler=not ns.no_sampler,
        sample_hz=ns.sample_hz,
    )
    try:
        result = record(options)
    except RecordError as e:
        raise CliError(str(e)) from None
    from tftrace.analysis.run_summary import render_record_footer

    render_record_footer(result.run.path, result.manifest)
    return result.exit_code


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


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(
        prog="tftrace", description="Profile and explain TensorFlow's CPU thread pools."
    )
    parser.add_argument("--version", action="version", version=f"tftrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    record_parser = _record_parser(sub)
    for name, module in sorted(command_modules().items()):
        module.configure(sub.add_parser(name, help=module.HELP))
    return parser, record_parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, record_parser = build_parser()
    try:
        if argv and argv[0] == "record":
            return cmd_record(record_parser, argv[1:])
        ns = parser.parse_args(argv)
        modules = command_modules()
        if ns.command in modules:
            return int(modules[ns.command].run(ns))
        parser.print_help()
        return USAGE_ERROR
    except CliError as e:
        print(f"tftrace: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
