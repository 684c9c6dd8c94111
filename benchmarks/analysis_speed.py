"""How long the commands that read a run take on a large real trace, side by side.

Run it from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/analysis_speed.py               # 2 M events, 3 rounds
    .venv/bin/python benchmarks/analysis_speed.py --scale 10    # also 20 M events: linearity
    .venv/bin/python benchmarks/analysis_speed.py --quick       # smoke run: small trace, 1 round

The trace is ``large_trace.py``'s (a tf.function of 20 small matmuls per step, one call per
step), recorded once and cached. Methods, each in a fresh interpreter with its imports done
before the clock starts (so that they compare the work, not the start-up), on a symlink to the
trace in a scratch directory (so that nothing is written beside the cached trace):

    load          tftrace.load(path): decode and build every DataFrame
    analyze       `tftrace analyze PATH` (load, every metric, the per-step breakdown, the
                  findings, the terminal report, to /dev/null)
    report        `tftrace report PATH -o ...` (analyze, the figures, the HTML page)
    tensorboard   `tftrace tensorboard PATH --no-serve` (analyze, the figures, the summaries)
    export        `tftrace export PATH -o trace.json.gz` (the Perfetto trace)
    trace_viewer  TensorBoard's own conversion of the file for its trace viewer

Printed, with the issue's targets: analyze / load (<= 3), trace_viewer / analyze (>= 10),
report, tensorboard and export / analyze (<= 2), analyze's added peak memory per host event
(<= 200 bytes), and with ``--scale K`` the trace laid end to end K times (K times the events
and steps; ``large_trace.replicated_trace`` says why it is not recorded): analyze's time there
over here (<= 1.2 K: linear). Medians over the rounds; rounds interleave
the methods so that a slow patch of the machine hits all of them. Absolute times depend on the
machine and are never checked: the exit status is 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from large_trace import (
    DEFAULT_STEPS,
    QUICK_STEPS,
    cached_trace,
    default_cache,
    measure_in_child,
    replicated_trace,
)

METHODS = ("load", "analyze", "report", "tensorboard", "export", "trace_viewer")
TARGETS = {
    "analyze / load": ("<=", 3.0),
    "trace_viewer / analyze": (">=", 10.0),
    "report / analyze": ("<=", 2.0),
    "tensorboard / analyze": ("<=", 2.0),
    "export / analyze": ("<=", 2.0),
}
BYTES_PER_EVENT_TARGET = 200
LINEAR_SLACK = 1.2  # K times the events may cost 1.2 K times the time

# Runs in a fresh interpreter: argv = method, trace path. Prints one JSON line.
MEASURE = r"""
import contextlib, gc, io, json, os, resource, sys, tempfile, time

method, path = sys.argv[1], sys.argv[2]

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024

def cli(*args):
    from tftrace import cli as tftrace_cli
    for name in ("analyze", "report", "tensorboard", "export"):
        __import__(f"tftrace.commands.{name}")
    import tftrace.analysis.analyze, tftrace.analysis.render.html, tftrace.analysis.render.plots
    import tftrace.analysis.render.tensorboard, tftrace.analysis.export.trace

    def run(scratch, trace):
        words = [a.format(trace=trace, scratch=scratch) for a in args]
        with contextlib.redirect_stdout(io.StringIO()):
            code = tftrace_cli.main(words)
        if code != 0:
            raise RuntimeError(f"tftrace {' '.join(words)} exited with {code}")
        return {}

    return run

def load():
    from tftrace.analysis.model.memory import small_pages
    from tftrace.analysis.model.run import load

    small_pages()  # as the command line does before it loads

    def run(scratch, trace):
        return {"host_events": len(load(trace).events)}

    return run

def trace_viewer():
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

    def run(scratch, trace):
        options = {"use_saved_result": False}
        data, ok = plugin.xspace_to_tools_data([trace], "trace_viewer@", options)
        if not ok:
            raise RuntimeError(bytes(data[:300]).decode(errors="replace"))
        return {}

    return run

METHODS = {
    "load": load,
    "analyze": lambda: cli("analyze", "{trace}"),
    "report": lambda: cli("report", "{trace}", "-o", "{scratch}/report.html"),
    "tensorboard": lambda: cli("tensorboard", "{trace}", "--no-serve"),
    "export": lambda: cli("export", "{trace}", "--format", "perfetto", "-o", "{scratch}/t.json.gz"),
    "trace_viewer": trace_viewer,
}
try:
    run = METHODS[method]()
    with tempfile.TemporaryDirectory() as scratch:
        trace = os.path.join(scratch, os.path.basename(path))
        os.symlink(os.path.abspath(path), trace)
        gc.collect()
        base = rss_kib()
        t0 = time.perf_counter()
        extra = run(scratch, trace)
        seconds = time.perf_counter() - t0
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
    sys.exit(0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "added_kib": peak - base, **extra}))
"""


def measure(method: str, trace: Path) -> dict[str, Any]:
    """One run of ``method`` in a fresh interpreter; {"error": ...} when it could not run."""
    return measure_in_child(MEASURE, method, trace)


def measure_all(trace: Path, methods: tuple[str, ...], rounds: int) -> dict[str, list[dict]]:
    """``rounds`` rounds, each running every method once, in turn."""
    results: dict[str, list[dict]] = {m: [] for m in methods}
    for r in range(1, rounds + 1):
        print(f"{trace.name}: round {r}/{rounds} ...", file=sys.stderr, flush=True)
        for method in methods:
            results[method].append(measure(method, trace))
    return results


def median(results: list[dict]) -> float | None:
    times = [r["seconds"] for r in results if "seconds" in r]
    return statistics.median(times) if times else None


def verdict(value: float | None, op: str, target: float) -> str:
    if value is None:
        return "unknown"
    return "met" if (value <= target if op == "<=" else value >= target) else "NOT met"


def report(trace: Path, results: dict[str, list[dict]]) -> dict[str, float | None]:
    """Print one trace's table and ratios; the medians by method."""
    events = next((r["host_events"] for r in results.get("load", []) if "host_events" in r), None)
    print(f"\ntrace   {trace}  ({trace.stat().st_size / 1e6:.0f} MB, {events or 0:,} host events)")
    print(f"{'method':<14}{'median s':>10}{'min s':>10}{'+peak RSS':>12}")
    medians = {}
    for method, runs in results.items():
        ok = [r for r in runs if "seconds" in r]
        medians[method] = median(runs)
        if not ok:
            print(f"{method:<14}  could not run: {runs[-1].get('error')}")
            continue
        added = max(r["added_kib"] for r in ok) / 1024
        best = min(r["seconds"] for r in ok)
        print(f"{method:<14}{medians[method]:>10.2f}{best:>10.2f}{added:>10,.0f} MB")
    print()
    for name, (op, target) in TARGETS.items():
        a, b = name.split(" / ")
        if a not in medians or b not in medians:
            continue
        q = medians[a] / medians[b] if medians.get(a) and medians.get(b) else None
        shown = f"{q:.2f}" if q is not None else "-"
        print(f"{name:<26}{shown:>8}   target {op} {target}: {verdict(q, op, target)}")
    analyzed = [r for r in results.get("analyze", []) if "added_kib" in r]
    if events and analyzed:
        per_event = max(r["added_kib"] for r in analyzed) * 1024 / events
        met = verdict(per_event, "<=", BYTES_PER_EVENT_TARGET)
        print(f"{'analyze bytes / event':<26}{per_event:>8.0f}   target <= 200: {met}")
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs per method (default 3)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="steps of the trace")
    parser.add_argument(
        "--scale", type=int, default=0, help="also a trace with K times the steps (analyze only)"
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} steps, 1 round")
    parser.add_argument(
        "--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}"
    )
    args = parser.parse_args()
    methods = tuple(m for m in METHODS if m in args.methods.split(","))
    if args.quick:
        args.steps, args.rounds = QUICK_STEPS, 1
    rounds = max(1, args.rounds)
    trace = cached_trace(None, args.steps, args.quick)
    base = report(trace, measure_all(trace, methods, rounds))
    if args.scale > 1:
        cache = default_cache(args.quick)
        big = replicated_trace(trace, args.scale, cache.with_name(f"{cache.name}-x{args.scale}"))
        scaled = report(big, measure_all(big, ("load", "analyze"), rounds))
        if base.get("analyze") and scaled.get("analyze"):
            q = scaled["analyze"] / base["analyze"]
            limit = LINEAR_SLACK * args.scale
            name = f"analyze, x{args.scale} steps"
            print(f"\n{name:<26}{q:>8.2f}   target <= {limit:g}: {verdict(q, '<=', limit)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
