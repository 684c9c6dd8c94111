"""How much ``tftrace record`` (and ``tftrace.profile``, in code) slows a fixed TensorFlow
workload down.

Run it from the repository root with the project's virtualenv (``tftrace`` must be
importable by the interpreter that runs this script):

    .venv/bin/python benchmarks/record_overhead.py                # paired chunks, ~8 min, 2 cores
    .venv/bin/python benchmarks/record_overhead.py --until-precise 4  # runs until CIs < margin
    .venv/bin/python benchmarks/record_overhead.py --quick        # smoke run: tiny sizes
    .venv/bin/python benchmarks/record_overhead.py --whole-runs   # 5 rounds of whole runs
    .venv/bin/python benchmarks/record_overhead.py --whole-runs --repeats 9 --json overhead.json

Ratios and their targets:

    (a) sampler / plain            <= 1.02   cost of the /proc thread sampler
    (b) sampler+pyspy / plain      <= 1.03   cost of the sampler and py-spy together
    (c) all / tf-profiler          <= 1.03   what tftrace adds on top of the TF profiler
    (a') in-code sampler           <= 1.02   the same, recorded by ``tftrace.profile``
    (b') in-code sampler+pyspy     <= 1.03     (paired mode only)

Each ratio comes with its 95 % confidence interval (distribution-free, from order
statistics); ``--until-precise MAX`` measures more until every interval is narrower than
its target's margin (0.02 for a 1.02 target), or MAX runs or rounds: a ratio is only worth
comparing with its target once its interval is that narrow. Two modes:

Paired chunks (the default; ``paired_overhead.py``). Whole runs of one configuration
differ by 5-10 % on a shared machine, more than the margins. The sampler (a thread of the
``tftrace record`` process) and py-spy (its child process) run outside the workload, so
the workload itself stops them (SIGSTOP) and continues them (SIGCONT) between short chunks
of steps, and a ratio compares adjacent chunks of one run: on time / off time, median over
the pairs. One run of each configuration (``--repeats`` for more): an A/A control (plain,
nothing toggled, ~1.000: the estimator's noise floor), sampler (a), sampler+pyspy (b),
all (c: the TF profiler stays on in both states, so it is its own baseline), and the
in-code path: the chunks run inside ``with tftrace.profile(DIR, tf_profiler=False)``,
whose sampler and py-spy run in a helper child process of the workload, which stops and
continues that helper and its py-spy instead (a': pyspy=False; b': py-spy on). Beside the
ratios: the workload process's involuntary context switches and CPU seconds per second, on
and off, and the sources' own CPU time (``os_sampler.machine``: the part of the sampler's
that went to its machine readings, 5 a second, of the CPUs, other processes and cgroup).

Whole runs (``--whole-runs``). The workload (``benchmarks/workloads/overhead_workload.py``)
is run under five configurations, one run of each per round, rounds repeated in the same
order (A B C D E A B C D E ...) so that machine noise spreads over all of them:

    plain          python overhead_workload.py
    sampler        tftrace record --no-tf-profiler --no-pyspy
    sampler+pyspy  tftrace record --no-tf-profiler
    tf-profiler    tftrace record --no-pyspy --no-sampler
    all            tftrace record

``tf-profiler`` stands for "the workload under the TF profiler alone, without
tftrace": it is the TF profiler started and stopped around the workload by
tftrace's bootstrap, with no other source.

A ratio is the median over rounds of (configuration time / baseline time in the same
round), so slow drift of the machine cancels within a round (its interval needs 6 rounds).
Two tables are printed:

1. Workload steady state: the seconds the workload measures itself, after its
   warm-up, and prints as ``WORKLOAD_SECONDS=<float>`` (``tftrace record`` streams the
   workload's stdout). The targets apply here: interpreter start-up, the TF import
   and the profiler's final flush are left out, so what remains is the slowdown the
   sources cause while the workload runs.
2. Whole process: wall time of the whole command, as seen by this script. The
   sampler and py-spy run in the recorder's process and compete with the workload
   for CPUs; this table also counts the recorder's start-up and the trace flush.
   For information only, no target.

Absolute times depend on the machine and are never checked. The exit status is 0
whether or not a target is met; it is 1 only when a run fails or prints no result.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overhead_runs import (
    CONFIGS,
    WORKLOAD,
    Config,
    RunFailed,
    host,
    median_ci,
    run_config,
    tail,
)
from paired_overhead import PAIRS_DEFAULT, PAIRS_QUICK, paired_mode

FULL_WORKLOAD_ARGS: tuple[str, ...] = ()  # the workload's defaults: ~4 s of steady state
QUICK_WORKLOAD_ARGS = (
    "--steps=200",
    "--warmup=2",
    "--small-size=16",
    "--big-size=128",
    "--big-every=10",
)
DEFAULT_REPEATS = 5
SECONDS_LINE = re.compile(r"^WORKLOAD_SECONDS=([0-9.eE+-]+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Comparison:
    label: str
    config: str
    baseline: str
    target: float


COMPARISONS = (
    Comparison("(a)", "sampler", "plain", 1.02),
    Comparison("(b)", "sampler+pyspy", "plain", 1.03),
    Comparison("(c)", "all", "tf-profiler", 1.03),
)


@dataclass
class Measurement:
    workload_s: float
    process_s: float
    problems: list[str] = field(default_factory=list)  # expected sources that did not record
    source_cpu_s: dict[str, float] = field(default_factory=dict)  # kernel-counted, per source


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Median wall-time ratios of tftrace record against plain runs.",
        epilog="See the module docstring for what each ratio means.",
    )
    parser.add_argument(
        "--whole-runs",
        action="store_true",
        help="compare whole separate runs of each configuration (the default compares "
        "paired chunks within one run)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="N",
        help=f"rounds of all configurations with --whole-runs (default {DEFAULT_REPEATS}; 1 "
        "with --quick); runs of each configuration in the paired mode (default 1)",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=None,
        metavar="N",
        help="on/off chunk pairs per run in the paired mode "
        f"(default {PAIRS_DEFAULT}; {PAIRS_QUICK} with --quick)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny workload and one round: a smoke run"
    )
    parser.add_argument(
        "--until-precise",
        type=int,
        default=None,
        metavar="MAX",
        help="add rounds (whole runs) or runs of a configuration (paired mode), up to MAX in "
        "all, until each ratio's 95 %% confidence interval is narrower than its target's "
        "margin (target - 1)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1 if args.quick or not args.whole_runs else DEFAULT_REPEATS
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.pairs is None:
        args.pairs = PAIRS_QUICK if args.quick else PAIRS_DEFAULT
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    return args


def parse_workload_seconds(stdout: str) -> float | None:
    matches = SECONDS_LINE.findall(stdout)
    return float(matches[-1]) if matches else None


def render_source_cpu(results: dict[str, list[Measurement]]) -> list[str]:
    """The sources' own CPU time per second of workload process: a noise-free cost figure."""
    lines = ["Sources' own CPU time (kernel accounting), per second of the recorded process:"]
    for config in CONFIGS:
        # os_sampler.machine: the sampler's machine readings, a part of its own time
        for source in ("os_sampler", "os_sampler.machine", "pyspy"):
            shares = [
                m.source_cpu_s[source] / m.process_s
                for m in results[config.name]
                if source in m.source_cpu_s
            ]
            if shares:
                lines.append(
                    f"  {config.name:<15}{source:<20}{100 * statistics.median(shares):6.2f} %"
                    " of one core"
                )
    return lines


def run_once(
    config: Config, workload_args: tuple[str, ...], scratch: Path, index: int
) -> Measurement:
    run = run_config(config, workload_args, scratch, index)
    seconds = parse_workload_seconds(run.stdout)
    if seconds is None:
        raise RunFailed(
            f"{config.name} run printed no WORKLOAD_SECONDS line\n"
            f"--- stdout ---\n{tail(run.stdout)}"
        )
    return Measurement(seconds, run.process_s, run.problems, run.source_cpu_s)


def measure(
    repeats: int, workload_args: tuple[str, ...], scratch: Path, until_precise: int | None = None
) -> dict[str, list[Measurement]]:
    """``repeats`` rounds; with ``until_precise``, more (up to that many in all) until every
    ratio is ``precise``."""
    results: dict[str, list[Measurement]] = {c.name: [] for c in CONFIGS}
    print("warm-up: one untimed plain run (loads TensorFlow into the page cache)", file=sys.stderr)
    run_once(CONFIGS[0], workload_args, scratch, 0)
    index = 0
    last = max(repeats, until_precise or 0)
    for round_no in range(1, last + 1):
        if round_no > repeats and all(precise(results, c) for c in COMPARISONS):
            break
        for config in CONFIGS:
            index += 1
            m = run_once(config, workload_args, scratch, index)
            results[config.name].append(m)
            print(
                f"round {round_no}/{last}  {config.name:<14} workload {m.workload_s:8.3f} s"
                f"  process {m.process_s:8.3f} s",
                file=sys.stderr,
            )
    return results


def paired_ratio(values: list[float], baselines: list[float]) -> float:
    return statistics.median(v / b for v, b in zip(values, baselines, strict=True))


def ratio_ci(values: list[float], baselines: list[float]) -> tuple[float, float]:
    """The 95 % confidence interval of the median paired ratio (``median_ci``); NaNs with too
    few rounds (fewer than 6)."""
    return median_ci([v / b for v, b in zip(values, baselines, strict=True)])


def precise(results: dict[str, list[Measurement]], comp: Comparison) -> bool:
    """The ratio's confidence interval is narrower than the target's margin (target - 1)."""
    lo, hi = ratio_ci(
        metric(results[comp.config], "workload_s"), metric(results[comp.baseline], "workload_s")
    )
    return not math.isnan(lo) and hi - lo <= comp.target - 1


def metric(ms: list[Measurement], name: str) -> list[float]:
    return [getattr(m, name) for m in ms]


def comparison_for(config: str) -> Comparison | None:
    return next((c for c in COMPARISONS if c.config == config), None)


def problems_of(results: dict[str, list[Measurement]], comp: Comparison) -> list[str]:
    found: list[str] = []
    for name in (comp.config, comp.baseline):
        for m in results[name]:
            found += [f"{name}: {p}" for p in m.problems if f"{name}: {p}" not in found]
    return found


def verdict(ratio: float, comp: Comparison, problems: list[str]) -> str:
    if problems:
        return "INVALID"
    return "PASS" if ratio <= comp.target else "FAIL  <-- over target"


def render_table(
    results: dict[str, list[Measurement]], field_name: str, title: str, with_targets: bool
) -> list[str]:
    lines = [
        title,
        f"  {'configuration':<15}{'median s':>10}  {'vs':<13}{'ratio':>7}  {'95 % CI':<13}  target",
    ]
    for config in CONFIGS:
        values = metric(results[config.name], field_name)
        row = f"  {config.name:<15}{statistics.median(values):>10.3f}"
        comp = comparison_for(config.name)
        if comp is not None:
            base = metric(results[comp.baseline], field_name)
            ratio = paired_ratio(values, base)
            lo, hi = ratio_ci(values, base)
            ci = f"{lo:.3f}-{hi:.3f}" if not math.isnan(lo) else "-"
            row += f"  {comp.baseline:<13}{ratio:>7.3f}  {ci:<13}"
            if with_targets:
                row += f"  <= {comp.target:.2f}  {comp.label} "
                row += verdict(ratio, comp, problems_of(results, comp))
            else:
                row += "  -     (info)"
        lines.append(row)
    return lines


def render(results: dict[str, list[Measurement]], repeats: int, quick: bool) -> str:
    rounds = f"median of {repeats} round{'s' if repeats > 1 else ''}"
    header = "tftrace record overhead"
    if quick:
        header += "  [--quick: tiny workload, a smoke run; the ratios mean nothing]"
    lines = [
        header,
        "",
        *render_table(
            results,
            "workload_s",
            f"Workload steady state (its own WORKLOAD_SECONDS, {rounds}):",
            with_targets=True,
        ),
        "",
        *render_table(
            results,
            "process_s",
            f"Whole process wall time (start-up, TF import and trace flush included, {rounds}):",
            with_targets=False,
        ),
        "",
        *render_source_cpu(results),
        "",
        "ratio = median over rounds of (time / baseline time in the same round)",
        "configurations:",
        *[f"  {c.name:<15}{c.describe()}" for c in CONFIGS],
        "  (tf-profiler is the TF profiler alone, started and stopped around the workload",
        "   by tftrace's bootstrap: the baseline for 'everything on vs the TF profiler alone')",
    ]
    for comp in COMPARISONS:
        for problem in problems_of(results, comp):
            lines.append(f"warning: {comp.label} is not a valid comparison: {problem}")
    return "\n".join(lines)


def to_json(
    results: dict[str, list[Measurement]], args: argparse.Namespace, workload_args: tuple[str, ...]
) -> dict[str, Any]:
    configs: dict[str, Any] = {}
    for c in CONFIGS:
        ms = results[c.name]
        configs[c.name] = {
            "command": c.describe(),
            "workload_seconds": metric(ms, "workload_s"),
            "process_seconds": metric(ms, "process_s"),
            "median_workload_seconds": statistics.median(metric(ms, "workload_s")),
            "median_process_seconds": statistics.median(metric(ms, "process_s")),
        }
    comparisons = []
    for comp in COMPARISONS:
        a, b = results[comp.config], results[comp.baseline]
        ratio = paired_ratio(metric(a, "workload_s"), metric(b, "workload_s"))
        lo, hi = ratio_ci(metric(a, "workload_s"), metric(b, "workload_s"))
        problems = problems_of(results, comp)
        comparisons.append(
            {
                "label": comp.label,
                "config": comp.config,
                "baseline": comp.baseline,
                "target": comp.target,
                "workload_ratio": ratio,
                "workload_ratio_ci95": None if math.isnan(lo) else [lo, hi],
                "process_ratio": paired_ratio(metric(a, "process_s"), metric(b, "process_s")),
                "passed": ratio <= comp.target and not problems,
                "problems": problems,
            }
        )
    return {
        "repeats": len(results["plain"]),
        "quick": args.quick,
        "workload": {"path": str(WORKLOAD), "args": list(workload_args)},
        "host": host(),
        "configurations": configs,
        "comparisons": comparisons,
    }


def whole_runs_mode(args: argparse.Namespace, scratch: Path) -> tuple[str, dict[str, Any]]:
    """The report and the JSON results of rounds of whole runs."""
    workload_args = QUICK_WORKLOAD_ARGS if args.quick else FULL_WORKLOAD_ARGS
    results = measure(args.repeats, workload_args, scratch, args.until_precise)
    report = render(results, len(results["plain"]), args.quick)
    return report, to_json(results, args, workload_args)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if importlib.util.find_spec("tftrace") is None:
        print(f"error: tftrace is not importable by {sys.executable}", file=sys.stderr)
        return 1
    mode = whole_runs_mode if args.whole_runs else paired_mode
    with tempfile.TemporaryDirectory(prefix="tftrace-overhead-") as tmp:
        try:
            report, data = mode(args, Path(tmp))
        except (RunFailed, subprocess.TimeoutExpired) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    print(report)
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
