"""How long ``load()`` takes on a large real trace, next to a plain parse and TF's trace viewer.

Run it from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/load_speed.py                  # cached 2 M-event trace, 5 repeats
    .venv/bin/python benchmarks/load_speed.py --trace PATH     # a cache dir or an .xplane.pb
    .venv/bin/python benchmarks/load_speed.py --quick          # smoke run: small trace, 1 repeat

Why these three: ``parse`` is the floor any reader of the file pays (the protobuf runtime, in
C), so ``load / parse`` says what tftrace adds on top of reading the trace at all (target: 2.0
or less). ``trace_viewer`` is what TensorBoard does with the same file, the alternative a user
would otherwise wait for.

    parse         XSpace().ParseFromString(data), tftrace's classes (analysis/xplane/schema.py);
                  the file is read before the clock starts
    load          tftrace.analysis.model.run.load(path): read, decode, build every DataFrame
    trace_viewer  TF's conversion for the trace viewer, _pywrap_profiler_plugin
                  .xspace_to_tools_data([path], "trace_viewer@", {"use_saved_result": False}),
                  on a symlink in a scratch directory (it writes a .SSTABLE cache beside the
                  trace, which would otherwise be reused by the next run)

Every run is a fresh interpreter running one method once, so nothing is warm (page cache
aside: the file is read before each run) and the peak RSS belongs to that method alone. The
methods are interleaved (parse, load, trace_viewer, parse, ...) so that a slow patch of the
machine hits all of them. Reported per method over the ``--repeats`` runs: median and min time;
the highest peak RSS (``ru_maxrss`` of the child, interpreter and imports included, TensorFlow
for trace_viewer) and "+RSS", that peak minus the RSS after the imports, before the file is
read. Absolute figures depend on the machine and are never checked: the exit status is 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from large_trace import (
    DEFAULT_STEPS,
    QUICK_STEPS,
    cached_trace,
    default_cache,
    measure_in_child,
)

METHODS = ("parse", "load", "trace_viewer")
LOAD_OVER_PARSE_TARGET = 2.0
LOAD_PEAK_TARGET_MB = 1536  # 1.5 GB

# Runs in a fresh interpreter: argv = method, trace path. Prints one JSON line.
MEASURE = r"""
import gc, json, os, resource, sys, tempfile, time

method, path = sys.argv[1], sys.argv[2]

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024

def parse():
    from tftrace.analysis.xplane.schema import XSpace

    def run():
        with open(path, "rb") as f:
            data = f.read()
        space = XSpace()
        t0 = time.perf_counter()
        space.ParseFromString(data)
        return time.perf_counter() - t0, {}

    return run

def load():
    from tftrace.analysis.model.run import load
    from tftrace.analysis.xplane.decode import native_available

    def run():
        t0 = time.perf_counter()
        result = load(path)
        seconds = time.perf_counter() - t0
        return seconds, {"native": native_available(), "host_events": len(result.events)}

    return run

def trace_viewer():
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

    def run():
        with tempfile.TemporaryDirectory() as scratch:
            link = os.path.join(scratch, os.path.basename(path))
            os.symlink(os.path.abspath(path), link)
            options = {"use_saved_result": False}
            t0 = time.perf_counter()
            data, ok = plugin.xspace_to_tools_data([link], "trace_viewer@", options)
            seconds = time.perf_counter() - t0
        if not ok:
            raise RuntimeError(bytes(data[:300]).decode(errors="replace"))
        key = b'"returnedEventsSize":'
        at = data.find(key)
        size = data[at + len(key) : data.find(b",", at)] if at >= 0 else b"-1"
        return seconds, {"output_bytes": len(data), "returned_events": int(size)}

    return run

try:
    run = {"parse": parse, "load": load, "trace_viewer": trace_viewer}[method]()
    gc.collect()
    base = rss_kib()
    seconds, extra = run()
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
    sys.exit(0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_kib": peak, "base_kib": base, **extra}))
"""


@dataclass
class Runs:
    """The runs of one method: times and memory of each success, the last error."""

    seconds: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)
    added_kib: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def add(self, result: dict[str, Any]) -> None:
        if "error" in result:
            self.error = str(result["error"])
            return
        self.seconds.append(float(result.pop("seconds")))
        peak, base = int(result.pop("peak_kib")), int(result.pop("base_kib"))
        self.peak_kib.append(peak)
        self.added_kib.append(peak - base)
        self.extra.update(result)

    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    def best(self) -> float | None:
        return min(self.seconds) if self.seconds else None


def measure(method: str, trace: Path) -> dict[str, Any]:
    """One run of ``method`` in a fresh interpreter; {"error": ...} when it could not run."""
    return measure_in_child(MEASURE, method, trace)


def measure_all(trace: Path, repeats: int) -> dict[str, Runs]:
    """``repeats`` rounds, each running every method once, in turn."""
    runs = {method: Runs() for method in METHODS}
    for round_ in range(1, repeats + 1):
        print(f"round {round_}/{repeats} ...", file=sys.stderr, flush=True)
        for method in METHODS:
            runs[method].add(measure(method, trace))
    return runs


def count_events(trace: Path) -> int:
    """XEvents in the whole file, every plane (load() keeps only the host plane's)."""
    from tftrace.analysis.xplane.decode import decode

    return len(decode(trace.read_bytes()).events["line"])


def mb(kib: float) -> str:
    return f"{kib / 1024:,.0f} MB"


def seconds(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def quotient(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def ratio(a: float | None, b: float | None) -> str:
    q = quotient(a, b)
    return f"{q:.2f}" if q is not None else "-"


def print_header(trace: Path, events: int, runs: dict[str, Runs], repeats: int) -> None:
    load = runs["load"].extra
    native = load.get("native")
    used = "yes" if native else "no (pure-Python reference)" if native is False else "unknown"
    print(f"trace            {trace}")
    print(f"file size        {trace.stat().st_size / 1e6:.1f} MB")
    print(f"events           {events:,} in the file, {load.get('host_events', 0):,} host events")
    print(f"native decoder   {used}")
    print(f"runs             {repeats} per method, each in a fresh interpreter, interleaved")


def print_table(runs: dict[str, Runs]) -> None:
    print()
    print(f"{'method':<14}{'median s':>10}{'min s':>10}{'peak RSS':>12}{'+RSS':>11}")
    for method, r in runs.items():
        if not r.seconds:
            print(f"{method:<14}  could not run: {r.error}")
            continue
        print(
            f"{method:<14}{seconds(r.median()):>10}{seconds(r.best()):>10}"
            f"{mb(max(r.peak_kib)):>12}{mb(max(r.added_kib)):>11}"
        )
        if r.error:
            print(f"{'':<14}  ({len(r.seconds)} runs; a failed one said: {r.error})")
    viewer = runs["trace_viewer"].extra
    if "returned_events" in viewer:
        print(
            f"{'':<14}  trace_viewer returned {viewer['returned_events']:,} events, "
            f"{viewer['output_bytes'] / 1e6:.0f} MB of JSON"
        )
    print()
    for method, r in runs.items():
        if r.seconds:
            print(f"{method + ' runs (s)':<22}" + " ".join(f"{t:.3f}" for t in r.seconds))


def verdict(met: bool | None) -> str:
    return "unknown" if met is None else "met" if met else "NOT met"


def print_ratios(runs: dict[str, Runs]) -> None:
    parse, load, viewer = runs["parse"], runs["load"], runs["trace_viewer"]
    over = quotient(load.median(), parse.median())
    print()
    print(f"{'':<22}{'median':>8}{'min':>8}")
    print(
        f"{'load / parse':<22}{ratio(load.median(), parse.median()):>8}"
        f"{ratio(load.best(), parse.best()):>8}   target <= {LOAD_OVER_PARSE_TARGET}: "
        f"{verdict(None if over is None else over <= LOAD_OVER_PARSE_TARGET)}"
    )
    print(
        f"{'trace_viewer / load':<22}{ratio(viewer.median(), load.median()):>8}"
        f"{ratio(viewer.best(), load.best()):>8}"
        + ("" if viewer.seconds else f"   trace_viewer could not run: {viewer.error}")
    )
    peak = max(load.peak_kib) / 1024 if load.peak_kib else None
    met = None if peak is None else peak < LOAD_PEAK_TARGET_MB
    shown = f"{peak:,.0f} MB" if peak is not None else "-"
    print(f"{'load peak RSS':<22}{shown:>16}   target < 1.5 GB: {verdict(met)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trace", type=Path, default=None, help=f"cache dir ({default_cache()}) or .xplane.pb"
    )
    parser.add_argument("--repeats", type=int, default=5, help="runs per method (default 5)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="when recording")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} steps, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeats = QUICK_STEPS, 1
    trace = cached_trace(args.trace, args.steps, args.quick)
    events = count_events(trace)
    runs = measure_all(trace, max(1, args.repeats))
    print_header(trace, events, runs, max(1, args.repeats))
    print_table(runs)
    print_ratios(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
