"""``tftrace sweep [options] (script.py | -m module) [args]``: time a workload under several
thread settings, each in a fresh process, and say which setting to use and why."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line stays light: these load only when a sweep runs
    from tftrace.analysis.sweep.result import RunFacts, SweepResult
    from tftrace.analysis.sweep.timing import Measure
    from tftrace.tracer.sweep import Setting, SweepOptions

from tftrace.errors import CliError

NAME = "sweep"
HELP = "time a workload under several inter/intra-op thread settings and recommend one"
USAGE = "tftrace sweep [--intra 1,2,4|auto] [--inter 1,2] [options] (script.py | -m module) [args]"
TAKES_TARGET = True
ORDER = 1
DEFAULT_REPEAT = 5
DEFAULT_SWEEPS_DIR = Path("tftrace-sweeps")
# Sweep options a user may write after the script by mistake, as other tools take them.
OWN_OPTIONS = ("--intra", "--inter", "--repeat", "--measure", "--marker", "--record")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--intra",
        default="auto",
        metavar="N,N,...|auto",
        help="intra-op pool sizes (default auto: 1, 2, 4, ... up to the CPUs and one step "
        "beyond; 0 = TF's default)",
    )
    p.add_argument(
        "--inter",
        default=None,
        metavar="N,N,...|auto",
        help="inter-op pool sizes (default: leave the inter-op pool to TF)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=DEFAULT_REPEAT,
        metavar="N",
        help=f"runs per setting, interleaved (default {DEFAULT_REPEAT})",
    )
    p.add_argument(
        "--measure",
        choices=("auto", "steps", "script", "process"),
        default="auto",
        help="what to time: auto = the steady state between steps (tf.function calls or "
        "Trace(..., step_num=) blocks), else the script; steps = fail without steps; "
        "script = the workload's code; process = the whole process",
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
        help="the setting speedups are relative to (default: the first setting)",
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
        "-o",
        "--output",
        type=Path,
        help="sweep directory to create (default: a new one under ./tftrace-sweeps/)",
    )
    p.add_argument("--name", help="a label for the sweep (kept in the default path)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _baseline(text: str | None, settings: list[Setting]) -> Setting:
    from tftrace.tracer.sweep import Setting

    if text is None:
        return settings[0]
    try:
        intra, inter = (None if v.strip() in ("", "-") else int(v) for v in text.split(","))
    except ValueError:
        raise CliError("sweep: --baseline takes INTRA,INTER (e.g. 1,1; '-' = not set)") from None
    wanted = Setting(intra, inter)
    if wanted not in settings:
        raise CliError(f"sweep: --baseline {text} is not one of the settings swept")
    return wanted


def _options(ns: argparse.Namespace) -> tuple[SweepOptions, Setting]:
    import os

    from tftrace.tracer.options import RecordOptions
    from tftrace.tracer.recorder import RecordError, check_target
    from tftrace.tracer.rundir import default_run_path
    from tftrace.tracer.sweep import SweepError, SweepOptions, grid, parse_values

    misplaced = [a for a in ns.target.args if a.split("=")[0] in OWN_OPTIONS]
    if misplaced and not getattr(ns, "target_after_separator", False):
        raise CliError(
            f"sweep: {misplaced[0]} comes after the script, so it would go to the workload; put "
            "sweep options first (tftrace sweep --intra 1,2 script.py args), or separate "
            "them with -- if the workload takes that option itself"
        )
    if ns.warmup_steps < 1:
        raise CliError("sweep: --warmup-steps must be >= 1 (the first step traces the function)")
    if ns.repeat < 1:
        raise CliError("sweep: --repeat must be >= 1")
    if ns.marker is not None and ns.measure in ("script", "process"):
        raise CliError(f"sweep: --marker cannot be used with --measure {ns.measure}")
    try:
        check_target(RecordOptions(target=ns.target))
        cpus = len(os.sched_getaffinity(0))
        settings = grid(
            parse_values(ns.intra, cpus, "intra"), parse_values(ns.inter, cpus, "inter")
        )
    except (RecordError, SweepError) as e:
        raise CliError(f"sweep: {e}") from None
    output = ns.output or default_run_path(DEFAULT_SWEEPS_DIR, ns.name)
    if output.exists() and any(output.iterdir()):
        raise CliError(f"sweep: output directory is not empty: {output}")
    return SweepOptions(
        target=ns.target,
        settings=tuple(settings),
        repeat=ns.repeat,
        output=output,
        record_each=ns.record,
        marker=ns.marker,
    ), _baseline(ns.baseline, settings)


def run(ns: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tftrace.analysis.sweep.timing import Measure, TimingError
    from tftrace.tracer.sweep import SweepError

    options, baseline = _options(ns)
    how = Measure(ns.measure)
    stderr = Console(stderr=True)
    plan = len(options.settings) * options.repeat
    facts: list[RunFacts] = []
    rows: list[dict[str, Any]] = []  # each run's timing, in the order of ``facts``
    result: SweepResult | None = None
    interrupted = False
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as progress:
        task = progress.add_task("sweep", total=plan)

        def step(text: str) -> None:
            progress.update(task, description=text)

        try:
            _timed(options, how, ns, facts, rows, step, lambda: progress.advance(task))
            result = _result(options, facts, rows, baseline)
            to_record = _to_record(options, result, ns.no_explain)
            progress.update(task, total=plan + len(to_record))
            _recorded(options, result, to_record, step, lambda: progress.advance(task))
        except (SweepError, TimingError) as e:
            raise CliError(f"sweep: {e}") from None
        except KeyboardInterrupt:
            interrupted = True
    if interrupted and result is None:
        if not facts:
            stderr.print("tftrace: sweep interrupted before any run finished", markup=False)
            return 130
        result = _result(options, facts, rows, baseline)
        result.warnings.append(f"interrupted after {len(facts)} of {plan} timed runs")
    elif interrupted and result is not None:
        result.warnings.append("interrupted while recording runs to explain the result")
    assert result is not None
    _finish(options, result, ns, stderr)
    return 130 if interrupted else 0


def _timed(
    options: SweepOptions,
    how: Measure,
    ns: argparse.Namespace,
    facts: list[RunFacts],
    rows: list[dict[str, Any]],
    step: Callable[[str], None],
    done: Callable[[], None],
) -> None:
    """Run every timed run into ``facts`` and its timing into ``rows``; each is timed at once,
    so that a bad marker fails on the first run."""
    from tftrace.analysis.sweep.result import RunFacts, time_run
    from tftrace.tracer.sweep import run_timed

    for r in run_timed(options, step):
        f = RunFacts(
            r.setting.intra, r.setting.inter, r.round, r.path, r.wall_s, r.cpu_s, r.manifest
        )
        rows.append(time_run(f, how, ns.marker, ns.warmup_steps))
        facts.append(f)
        done()


def _result(
    options: SweepOptions,
    facts: list[RunFacts],
    rows: list[dict[str, Any]],
    baseline: Setting,
) -> SweepResult:
    from tftrace.analysis.sweep.result import build, usable_cpus

    present = {(f.intra, f.inter) for f in facts}
    base = (baseline.intra, baseline.inter)
    if base not in present:  # interrupted before the baseline ran
        base = (facts[0].intra, facts[0].inter)
    target = list(options.target.argv())
    return build(rows, usable_cpus(facts[0].manifest), base, target)


def _to_record(options: SweepOptions, result: SweepResult, no_explain: bool) -> list[Setting]:
    from tftrace.analysis.sweep.stats import setting_key
    from tftrace.tracer.sweep import Setting

    if options.record_each:
        return list(options.settings)
    if no_explain:
        return []
    t, v = result.table, result.verdict
    rows = [int(t.index[t["is_baseline"]][0])]
    if v.kind == "faster":
        rows.append(v.recommended)
    return [Setting(*setting_key(t.loc[i])) for i in dict.fromkeys(rows)]


def _recorded(
    options: SweepOptions,
    result: SweepResult,
    settings: list[Setting],
    step: Callable[[str], None],
    done: Callable[[], None],
) -> None:
    from tftrace.analysis.sweep.result import recorded_view
    from tftrace.errors import TraceError
    from tftrace.tracer.sweep import SweepError, run_recorded

    for setting in settings:
        # A recorded run that fails costs its explanation, not the timings already taken.
        try:
            ((_, path),) = run_recorded(options, [setting], step)
            result.recorded[(setting.intra, setting.inter)] = recorded_view(path)
        except (SweepError, TraceError) as e:
            result.warnings.append(f"the recorded run of {setting.label()} failed: {e}")
        done()


def _finish(
    options: SweepOptions, result: SweepResult, ns: argparse.Namespace, stderr: Any
) -> None:
    import json

    from tftrace.analysis.sweep.report import plot, render, to_json
    from tftrace.tracer.rundir import write_json_atomic
    from tftrace.tracer.sweep import SWEEP_FILE

    data = {
        "kind": "tftrace-sweep",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "options": {
            "intra": ns.intra,
            "inter": ns.inter,
            "repeat": ns.repeat,
            "measure": ns.measure,
            "marker": ns.marker,
            "warmup_steps": ns.warmup_steps,
            "record": ns.record,
        },
        **to_json(result, options.output),
    }
    options.output.mkdir(parents=True, exist_ok=True)
    write_json_atomic(options.output / SWEEP_FILE, data)
    figure = plot(result, options.output / "speedup.png")
    if ns.json:
        print(json.dumps(data, indent=2))
    else:
        render(result)
    stderr.print(
        f"tftrace: sweep directory {options.output} ({SWEEP_FILE}, {figure.name})",
        markup=False,
        highlight=False,
    )
