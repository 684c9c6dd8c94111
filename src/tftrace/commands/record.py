"""``tftrace record [options] (script.py | -m module) [args]``: one run directory."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tftrace.errors import CliError
from tftrace.tracer.options import DEFAULT_MACHINE_HZ, DEFAULT_PYSPY_RATE, DEFAULT_SAMPLE_HZ

NAME = "record"
HELP = "run a workload under the TF profiler, py-spy and an OS thread sampler"
USAGE = "tftrace record [options] (script.py | -m module) [args ...]"
TAKES_TARGET = True
ORDER = 0


def configure(p: argparse.ArgumentParser) -> None:
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
        default=None,
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
    g.add_argument(
        "--steps",
        metavar="A:B",
        help="profile steps A to B-1 only, counted from 0 like a Python slice (100:120: 20 "
        "steps; 100: to the end); a step is an outermost tf.function call or "
        "Trace(step_num=) block. Not with --delay/--duration",
    )
    # "--steps -5:3" is a (bad) value, not an option: let it reach our one-line check.
    p._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d*:")
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
    g.add_argument(
        "--machine-hz",
        type=float,
        default=DEFAULT_MACHINE_HZ,
        metavar="HZ",
        help="readings per second of the machine beside the workload: each CPU's busy, idle "
        "and steal time, other processes' CPU time, the cgroup's throttling "
        f"(default {DEFAULT_MACHINE_HZ:g}; 0: none)",
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.run_summary import render_record_footer
    from tftrace.tracer.recording import record

    if (ns.delay is not None and ns.delay < 0) or (ns.duration is not None and ns.duration <= 0):
        raise CliError("record: --delay must be >= 0 and --duration > 0")
    if ns.sample_hz <= 0 or ns.pyspy_rate <= 0 or ns.machine_hz < 0:
        raise CliError("record: rates must be positive (--machine-hz 0: no machine readings)")
    steps = _steps(ns)
    result = record(
        ns.target,
        output=ns.output,
        name=ns.name,
        tf_profiler=not ns.no_tf_profiler,
        delay_s=ns.delay or 0.0,
        duration_s=ns.duration,
        steps=steps,
        pyspy=not ns.no_pyspy,
        pyspy_rate=ns.pyspy_rate,
        pyspy_native=ns.native,
        pyspy_blocking=ns.pyspy_blocking,
        pyspy_path=ns.pyspy_path,
        sampler=not ns.no_sampler,
        sample_hz=ns.sample_hz,
        machine_hz=ns.machine_hz,
    )
    render_record_footer(result.run.path, result.manifest)
    return result.exit_code


def _steps(ns: argparse.Namespace) -> tuple[int, int | None] | None:
    """``--steps A:B`` read and checked: one window, in steps or in seconds, never both."""
    from tftrace.tracer.step_range import StepsError, parse_steps

    if ns.steps is None:
        return None
    try:
        steps = parse_steps(ns.steps, label="--steps")
    except StepsError as e:
        raise CliError(f"record: {e}") from None
    if ns.delay is not None or ns.duration is not None:
        raise CliError(
            "record: --steps and --delay/--duration both set the profiler's window: choose one"
        )
    if ns.no_tf_profiler:
        raise CliError("record: --steps sets the TF profiler's window: not with --no-tf-profiler")
    return steps
