"""The paired-chunk mode of ``record_overhead.py`` (its default): the sources' cost measured
within one run, where whole runs are too noisy.

Whole runs of one configuration differ by 5-10 % on a shared 2-core machine, while
adjacent fractions of a second of one run share its conditions. The /proc sampler (a
thread of the ``tftrace record`` process) and py-spy (the recorder's child process) run
outside the workload's process, so the workload switches them off and on itself
(``overhead_workload.py --paired N --toggle recorder``): SIGSTOP to the recorder and
py-spy for the "off" chunks of steps, SIGCONT for the "on" chunks, in ABBA order (off on,
on off, ...) so that a linear drift cancels. The in-code path (``tftrace.profile``) runs
the same two sources in a helper child process of the workload (py-spy the helper's
child), which the workload toggles the same way (``--toggle helper --in-code DIR``). Each
pair is two adjacent chunks, one of each; a ratio is the median over pairs of on time /
off time, with its 95 % confidence interval. One run per configuration:

    A/A   plain          python overhead_workload.py, nothing toggled: the ratio must be
                         ~1.000 (the estimator's noise floor and bias check)
    (a)   sampler        tftrace record --no-tf-profiler --no-pyspy        <= 1.02
    (b)   sampler+pyspy  tftrace record --no-tf-profiler                   <= 1.03
    (c)   all            tftrace record: the TF profiler and tftrace's in-process
                         bootstrap stay on in both states, so this is what the
                         out-of-process sources add on top of them          <= 1.03
    (a')  in-code sampler
                         the paired chunks in ``with tftrace.profile(DIR,
                         tf_profiler=False, pyspy=False)``: its helper toggled  <= 1.02
    (b')  in-code sampler+pyspy
                         the same with pyspy=True: the helper and py-spy       <= 1.03

In (a') and (b') the in-process part of the recording (the thread identity watcher) stays
on in both states, as tftrace's bootstrap does in (a) to (c).

``--until-precise MAX`` repeats the runs of a configuration (pooling their pairs) until its
interval is narrower than the target's margin (0.02 for the A/A control), or MAX runs.
Beside the ratios: the whole workload process's involuntary context switches per second
and CPU seconds per second, on and off (more preemption of the workload's threads, or more
CPU work of its own?), and the sources' own CPU time from the run manifests.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overhead_runs import (
    CONFIG,
    WORKLOAD,
    Config,
    Run,
    RunFailed,
    host,
    median_ci,
    run_config,
    tail,
)

PAIRS_DEFAULT = 400  # ~50 s of chunks per run: ~8 min for the six runs on 2 cores
PAIRS_QUICK = 8
QUICK_WORKLOAD_ARGS = (
    "--warmup=2",
    "--small-size=16",
    "--big-size=128",
    "--big-every=10",
    "--chunk-steps=10",
    "--settle-steps=2",
)
CONTROL_MARGIN = 0.02  # the A/A control is held to the tightest target's margin
PAIRED_LINE = re.compile(r"^PAIRED_CHUNKS=(\{.*\})\s*$", re.MULTILINE)


@dataclass(frozen=True)
class PairedComparison:
    label: str
    config: Config
    target: float | None  # None: the A/A control

    @property
    def toggle(self) -> str:
        """The workload's ``--toggle``: the recorder, the in-code helper, or nothing."""
        if self.config.in_code_flags is not None:
            return "helper"
        return "none" if self.config.record_flags is None else "recorder"

    @property
    def expected_toggled(self) -> tuple[str, ...]:
        """What the workload must report having stopped for the "off" chunks."""
        if self.toggle == "none":
            return ()
        return (self.toggle, "py-spy") if "pyspy" in self.config.sources else (self.toggle,)

    @property
    def margin(self) -> float:
        return CONTROL_MARGIN if self.target is None else self.target - 1


COMPARISONS = (
    PairedComparison("A/A", CONFIG["plain"], None),
    PairedComparison("(a)", CONFIG["sampler"], 1.02),
    PairedComparison("(b)", CONFIG["sampler+pyspy"], 1.03),
    PairedComparison("(c)", CONFIG["all"], 1.03),
    PairedComparison("(a')", CONFIG["in-code sampler"], 1.02),
    PairedComparison("(b')", CONFIG["in-code sampler+pyspy"], 1.03),
)
NAME_WIDTH = max(len(c.config.name) for c in COMPARISONS) + 2


@dataclass(frozen=True)
class ChunkSeries:
    """The "on" or the "off" chunks of one run, pair by pair."""

    seconds: list[float]
    nivcsw: list[int]  # involuntary context switches of the workload process
    cpu_seconds: list[float]  # its user + system time


@dataclass(frozen=True)
class PairedChunks:
    toggled: tuple[str, ...]
    on: ChunkSeries
    off: ChunkSeries
    stopped_seconds: float  # how long the toggled processes were stopped

    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.on.seconds, self.off.seconds, strict=True)]


@dataclass(frozen=True)
class PairedRun:
    chunks: PairedChunks
    run: Run


def parse_paired_chunks(stdout: str) -> PairedChunks | None:
    """The workload's last PAIRED_CHUNKS line; None without one, ValueError when malformed."""
    matches = PAIRED_LINE.findall(stdout)
    if not matches:
        return None
    try:
        data = json.loads(matches[-1])
        chunks = PairedChunks(
            tuple(str(name) for name in data["toggled"]),
            _series(data["on"]),
            _series(data["off"]),
            float(data["stopped_seconds"]),
        )
    except (KeyError, TypeError) as e:
        raise ValueError(f"malformed PAIRED_CHUNKS line: {e!r}") from None
    if len(chunks.on.seconds) != len(chunks.off.seconds):
        raise ValueError("malformed PAIRED_CHUNKS line: as many on as off chunks expected")
    return chunks


def _series(data: dict[str, list[Any]]) -> ChunkSeries:
    series = ChunkSeries(
        [float(v) for v in data["seconds"]],
        [int(v) for v in data["nivcsw"]],
        [float(v) for v in data["cpu_seconds"]],
    )
    if not len(series.seconds) == len(series.nivcsw) == len(series.cpu_seconds):
        raise ValueError("malformed PAIRED_CHUNKS line: series of different lengths")
    return series


def paired_workload_args(quick: bool, pairs: int) -> tuple[str, ...]:
    return (*(QUICK_WORKLOAD_ARGS if quick else ()), f"--paired={pairs}")


def run_paired(
    comp: PairedComparison, workload_args: tuple[str, ...], scratch: Path, index: int
) -> PairedRun:
    run = run_config(comp.config, (*workload_args, f"--toggle={comp.toggle}"), scratch, index)
    try:
        chunks = parse_paired_chunks(run.stdout)
    except ValueError as e:
        raise RunFailed(f"{comp.config.name} run: {e}") from None
    if chunks is None:
        raise RunFailed(
            f"{comp.config.name} run printed no PAIRED_CHUNKS line\n"
            f"--- stdout ---\n{tail(run.stdout)}"
        )
    return PairedRun(chunks, run)


def pooled_ratios(runs: list[PairedRun]) -> list[float]:
    return [ratio for run in runs for ratio in run.chunks.ratios()]


def precise(runs: list[PairedRun], comp: PairedComparison) -> bool:
    """The pooled ratio's confidence interval is narrower than the comparison's margin."""
    lo, hi = median_ci(pooled_ratios(runs))
    return not math.isnan(lo) and hi - lo <= comp.margin


def measure_paired(
    run: Callable[[PairedComparison, int], PairedRun], repeats: int, until_precise: int | None
) -> dict[str, list[PairedRun]]:
    """``repeats`` runs of each configuration; with ``until_precise``, more runs of those not
    yet ``precise`` (up to that many each), in rounds so that machine noise spreads."""
    results: dict[str, list[PairedRun]] = {c.label: [] for c in COMPARISONS}
    last = max(repeats, until_precise or 0)
    index = 0
    for round_no in range(1, last + 1):
        for comp in COMPARISONS:
            if round_no > repeats and precise(results[comp.label], comp):
                continue
            index += 1
            result = run(comp, index)
            results[comp.label].append(result)
            print(
                f"run {round_no}/{last}  {comp.config.name:<{NAME_WIDTH}}"
                f" on/off {statistics.median(result.chunks.ratios()):6.3f}"
                f"  ({len(result.chunks.on.seconds)} pairs, {result.run.process_s:6.1f} s)",
                file=sys.stderr,
            )
    return results


def per_second(series: list[ChunkSeries], counts: Callable[[ChunkSeries], list[Any]]) -> float:
    """A count summed over chunks, per second of those chunks."""
    return sum(sum(counts(s)) for s in series) / sum(sum(s.seconds) for s in series)


def on_off(
    runs: list[PairedRun], counts: Callable[[ChunkSeries], list[Any]]
) -> tuple[float, float]:
    on = per_second([r.chunks.on for r in runs], counts)
    off = per_second([r.chunks.off for r in runs], counts)
    return on, off


def quotient(on: float, off: float) -> float:
    return on / off if off else math.nan


def source_cpu_shares(runs: list[PairedRun]) -> dict[str, float]:
    """Each source's own CPU seconds per second it ran: the recording's time (the manifest's;
    the process's without one), less the time the workload kept it stopped."""
    ran_s = sum((r.run.recorded_s or r.run.process_s) - r.chunks.stopped_seconds for r in runs)
    names = sorted({name for r in runs for name in r.run.source_cpu_s})
    return {name: sum(r.run.source_cpu_s.get(name, 0.0) for r in runs) / ran_s for name in names}


def problems_of(runs: list[PairedRun], comp: PairedComparison) -> list[str]:
    found: list[str] = []
    for r in runs:
        toggled = r.chunks.toggled
        problems = list(r.run.problems)
        if toggled != comp.expected_toggled:
            stopped = ", ".join(toggled) or "nothing"
            problems.append(
                f"the workload stopped {stopped}, not {', '.join(comp.expected_toggled)}"
            )
        found += [p for p in problems if p not in found]
    return found


def verdict(
    ratio: float, ci: tuple[float, float], comp: PairedComparison, problems: list[str]
) -> str:
    lo, hi = ci
    if problems:
        return "INVALID"
    if comp.target is None:
        if math.isnan(lo):
            return "-"
        return "ok (holds 1)" if lo <= 1 <= hi else "BIASED? the interval excludes 1"
    result = "PASS" if ratio <= comp.target else "FAIL  <-- over target"
    if math.isnan(lo) or hi - lo > comp.margin:
        result += " (interval wider than the margin)"
    return result


def summary(runs: list[PairedRun]) -> tuple[float, tuple[float, float]]:
    ratios = pooled_ratios(runs)
    return statistics.median(ratios), median_ci(ratios)


def render_ratios(results: dict[str, list[PairedRun]]) -> list[str]:
    lines = [
        "Workload chunk time, sources on / off (median over pairs, 95 % CI):",
        f"  {'':<6}{'configuration':<{NAME_WIDTH}}{'runs':>4}{'pairs':>7}{'on/off':>8}  "
        f"{'95 % CI':<13}  target",
    ]
    for comp in COMPARISONS:
        runs = results[comp.label]
        ratio, (lo, hi) = summary(runs)
        ci = f"{lo:.3f}-{hi:.3f}" if not math.isnan(lo) else "-"
        target = "~ 1" if comp.target is None else f"<= {comp.target:.2f}"
        pairs = len(pooled_ratios(runs))
        lines.append(
            f"  {comp.label:<6}{comp.config.name:<{NAME_WIDTH}}{len(runs):>4}{pairs:>7}"
            f"{ratio:>8.3f}  "
            f"{ci:<13}  {target:<8} {verdict(ratio, (lo, hi), comp, problems_of(runs, comp))}"
        )
    return lines


def render_causes(results: dict[str, list[PairedRun]]) -> list[str]:
    lines = [
        "Where a slowdown comes from (the workload process, over all its chunks):",
        f"  {'':<{NAME_WIDTH}}{'involuntary switches/s':>24}      {'CPU seconds/s':>20}",
        f"  {'configuration':<{NAME_WIDTH}}{'on':>8}{'off':>8}{'ratio':>8}      "
        f"{'on':>6}{'off':>7}{'ratio':>7}",
    ]
    for comp in COMPARISONS:
        runs = results[comp.label]
        switches = on_off(runs, lambda s: s.nivcsw)
        cpu = on_off(runs, lambda s: s.cpu_seconds)
        lines.append(
            f"  {comp.config.name:<{NAME_WIDTH}}{switches[0]:>8.0f}{switches[1]:>8.0f}"
            f"{quotient(*switches):>8.3f}      {cpu[0]:>6.2f}{cpu[1]:>7.2f}{quotient(*cpu):>7.3f}"
        )
    return lines


def render_sources(results: dict[str, list[PairedRun]]) -> list[str]:
    lines = ["Sources' own CPU time (kernel accounting), per second they ran; what they report:"]
    for comp in COMPARISONS:
        runs = results[comp.label]
        column = f"{comp.config.name:<{NAME_WIDTH}}"
        for name, share in source_cpu_shares(runs).items():
            lines.append(f"  {column}{name:<20}{100 * share:6.2f} % of one core")
        for run_no, r in enumerate(runs, 1):
            if r.run.source_notes:
                lines.append(f"  {column}run {run_no}: {'; '.join(r.run.source_notes)}")
    return lines


def render(results: dict[str, list[PairedRun]], quick: bool) -> str:
    header = "tftrace record and tftrace.profile overhead, paired chunks"
    if quick:
        header += "  [--quick: tiny workload, a smoke run; the ratios mean nothing]"
    lines = [
        header,
        "",
        *render_ratios(results),
        "",
        *render_causes(results),
        "",
        *render_sources(results),
        "",
        "on/off = median over pairs of adjacent chunks (ABBA order) of on time / off time;",
        "off: the recorder (its /proc sampler thread) and py-spy stopped with SIGSTOP by the",
        "workload (in-code: tftrace.profile's helper process and its py-spy); the TF profiler",
        "and tftrace's in-process part stay on in both states. A stopped sampler's next tick",
        "is late: about one late tick per resume is expected. configurations:",
        *[f"  {c.config.name:<{NAME_WIDTH}}{c.config.describe()}" for c in COMPARISONS],
    ]
    for comp in COMPARISONS:
        for problem in problems_of(results[comp.label], comp):
            lines.append(f"warning: {comp.label} is not a valid comparison: {problem}")
    return "\n".join(lines)


def comparison_json(comp: PairedComparison, runs: list[PairedRun]) -> dict[str, Any]:
    ratio, (lo, hi) = summary(runs)
    problems = problems_of(runs, comp)
    switches = on_off(runs, lambda s: s.nivcsw)
    cpu = on_off(runs, lambda s: s.cpu_seconds)
    return {
        "label": comp.label,
        "config": comp.config.name,
        "command": comp.config.describe(),
        "target": comp.target,
        "ratio": ratio,
        "ratio_ci95": None if math.isnan(lo) else [lo, hi],
        "passed": None if comp.target is None else ratio <= comp.target and not problems,
        "problems": problems,
        "involuntary_switches_per_s": {"on": switches[0], "off": switches[1]},
        "cpu_seconds_per_s": {"on": cpu[0], "off": cpu[1]},
        "source_cpu_share": source_cpu_shares(runs),
        "runs": [
            {
                "process_seconds": r.run.process_s,
                "recorded_seconds": r.run.recorded_s,
                "stopped_seconds": r.chunks.stopped_seconds,
                "toggled": list(r.chunks.toggled),
                "on": vars(r.chunks.on),
                "off": vars(r.chunks.off),
                "source_notes": r.run.source_notes,
            }
            for r in runs
        ],
    }


def paired_mode(args: argparse.Namespace, scratch: Path) -> tuple[str, dict[str, Any]]:
    """The report and the JSON results of the paired mode."""
    workload_args = paired_workload_args(args.quick, args.pairs)
    results = measure_paired(
        lambda comp, index: run_paired(comp, workload_args, scratch, index),
        args.repeats,
        args.until_precise,
    )
    data = {
        "mode": "paired",
        "quick": args.quick,
        "workload": {"path": str(WORKLOAD), "args": list(workload_args)},
        "host": host(),
        "comparisons": [comparison_json(c, results[c.label]) for c in COMPARISONS],
    }
    return render(results, args.quick), data
