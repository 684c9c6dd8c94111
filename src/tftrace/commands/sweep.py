"""``tftrace sweep [options] (script.py | -m module) [args]``: time a workload under several
settings (pool sizes crossed with environment variables and CPU counts), each in a fresh
process, and say which setting to use and why.

A shell over ``tftrace.analysis.sweep.session.sweep``: it draws the progress bar and prints the
result; the library runs, judges, explains and writes the sweep directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line stays light: these load only when a sweep runs
    from tftrace.analysis.sweep.outcome import SweepResult

from tftrace.errors import CliError, error_context
from tftrace.tracer.options import DEFAULT_SWEEP_REPEAT

NAME = "sweep"
HELP = "time a workload under several thread settings (pools, env vars, CPUs) and recommend one"
USAGE = (
    "tftrace sweep [--intra 1,2,4|auto] [--inter 1,2] [--env NAME=V1,V2 ...] [--cpus 1,2] "
    "[--instances 1,2,4] [--objective throughput|p50|p99] [--predict K] [options] "
    "(script.py | -m module) [args]"
)
TAKES_TARGET = True
ORDER = 1
# Sweep options a user may write after the script by mistake, as other tools take them.
OWN_OPTIONS = (
    "--intra",
    "--inter",
    "--repeat",
    "--measure",
    "--marker",
    "--record",
    "--objective",
    "--instances",
    "--env",
    "--cpus",
    "--predict",
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--intra",
        default="auto",
        metavar="N,N,...|auto",
        help="intra-op pool sizes (default auto: 1, 2, 4, ... up to the CPUs and one step "
        "beyond; with --instances, each copy's cores; 0 = TF's default)",
    )
    p.add_argument(
        "--inter",
        default=None,
        metavar="N,N,...|auto",
        help="inter-op pool sizes (default: leave the inter-op pool to TF; with --instances, "
        "each copy's cores)",
    )
    p.add_argument(
        "--env",
        action="append",
        metavar="NAME=V1,V2",
        help="also cross these values of an environment variable (repeatable: every "
        "combination runs), e.g. OMP_NUM_THREADS=1,2 or TF_ENABLE_ONEDNN_OPTS=0,1",
    )
    p.add_argument(
        "--cpus",
        metavar="K,K,...",
        help="also cross these CPU counts: each runs pinned to the first K of the CPUs this "
        "process may use (TF's default pools follow them)",
    )
    p.add_argument(
        "--objective",
        choices=("throughput", "p50", "p99"),
        default="throughput",
        help="what decides: throughput (steps, or a server's requests, per second; the "
        "default), p50 or p99 (latency percentile of the requests or steps)",
    )
    p.add_argument(
        "--instances",
        metavar="N,N,...",
        help="also run N copies of the workload at once, each pinned to its own share of the "
        "CPUs with its pools sized to it, beside one process on all of them; their requests "
        "(or steps) per second are summed",
    )
    p.add_argument(
        "--predict",
        type=int,
        metavar="K",
        help="record the baseline once, predict every setting from it (tftrace predict's "
        "model) and time only the baseline and the K predicted fastest; says the runs saved "
        "and what the whole grid might change (pool sizes only; off by default: the "
        "model's accuracy is in docs/predict.md)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=DEFAULT_SWEEP_REPEAT,
        metavar="N",
        help=f"runs per setting, interleaved (default {DEFAULT_SWEEP_REPEAT})",
    )
    p.add_argument(
        "--measure",
        choices=("auto", "steps", "script", "process"),
        default="auto",
        help="what to time: auto = the steady state between steps (tf.function calls, "
        "Trace(..., step_num=) blocks, else a tf.data loop's passes), else the script; "
        "steps = fail without steps; script = the workload's code; process = the whole process",
    )
    p.add_argument(
        "--warmup-steps",
        type=int,
        default=1,
        metavar="N",
        help="steps left out before the steady state starts (default 1: the one that traces)",
    )
    p.add_argument(
        "--marker",
        metavar="NAME",
        help="time only the workload's tf.profiler.experimental.Trace(NAME) blocks",
    )
    p.add_argument(
        "--baseline",
        metavar="INTRA,INTER",
        help="the setting speedups are relative to (default: the first setting; with --env "
        "or --cpus, the first with these pool sizes)",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="also record and analyse one run per setting (pool concurrency, main finding)",
    )
    p.add_argument(
        "--no-explain",
        action="store_true",
        help="do not record the baseline and recommended settings to explain the verdict",
    )
    p.add_argument(
        "--keep-script-settings",
        action="store_true",
        help="apply the script's own tf.config.threading.set_*_parallelism_threads calls "
        "(default: record them only, so that the sweep sets the pools)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        help="sweep directory to create (default: a new one under ./tftrace-sweeps/)",
    )
    p.add_argument("--name", help="a label for the sweep (kept in the default path)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _check_misplaced(ns: argparse.Namespace) -> None:
    misplaced = [a for a in ns.target.args if a.split("=")[0] in OWN_OPTIONS]
    if misplaced and not getattr(ns, "target_after_separator", False):
        raise CliError(
            f"sweep: {misplaced[0]} comes after the script, so it would go to the workload; put "
            "sweep options first (tftrace sweep --intra 1,2 script.py args), or separate "
            "them with -- if the workload takes that option itself"
        )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.console import console
    from tftrace.analysis.sweep.session import SweepInterrupted, sweep
    from tftrace.commands.progress import progress_bar

    _check_misplaced(ns)
    stderr = console(width=None, stderr=True)
    interrupted = False
    try:
        with error_context("sweep"), progress_bar(stderr) as show:
            result = sweep(
                ns.target,
                intra=ns.intra,
                inter=ns.inter,
                repeat=ns.repeat,
                measure=ns.measure,
                marker=ns.marker,
                warmup_steps=ns.warmup_steps,
                baseline=ns.baseline,
                record_each=ns.record,
                explain=not ns.no_explain,
                keep_script_settings=ns.keep_script_settings,
                output=ns.output,
                name=ns.name,
                progress=show,
                objective=ns.objective,
                instances=ns.instances,
                env=ns.env,
                cpus=ns.cpus,
                predict=ns.predict,
            )
    except SweepInterrupted as e:
        if e.result is None:
            stderr.print("tftrace: sweep interrupted before any run finished", markup=False)
            return 130
        result, interrupted = e.result, True
    _show(result, ns.json, stderr)
    return 130 if interrupted else 0


def _show(result: SweepResult, as_json: bool, stderr: Any) -> None:
    import json

    from tftrace.analysis.render.console import say
    from tftrace.analysis.sweep.report import document, render
    from tftrace.analysis.sweep.session import PLOT_FILE
    from tftrace.tracer.sweep import SWEEP_FILE

    if as_json:
        print(json.dumps(document(result), indent=2))
    else:
        render(result)
    say(stderr, f"tftrace: sweep directory {result.output} ({SWEEP_FILE}, {PLOT_FILE})")
