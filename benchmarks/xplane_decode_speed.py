"""How fast the xplane decoder reads a large real trace, next to a plain protobuf parse.

Run it from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/xplane_decode_speed.py                 # ~1.5 min the first time
    .venv/bin/python benchmarks/xplane_decode_speed.py --trace DIR     # trace cache directory
    .venv/bin/python benchmarks/xplane_decode_speed.py --quick         # smoke run: small trace

The trace (see ``large_trace.py``): a tf.function of 20 matmuls run ``--steps`` times under the
TF profiler; the default 17500 steps give about 2 M events and 55 MB. It is recorded once into
the ``--trace`` directory and reused while a ``*.xplane.pb`` is there.

Measured, each in a fresh interpreter so that peak memory belongs to that one method:

    parse (TF)       XSpace.ParseFromString with TF's own class (xplane_pb2)
    parse (ours)     the same with tftrace's class (xplane/schema.py, no TF import)
    decode native    decode(data): C pass over the wire format, numpy columns
    decode reference decode(data, prefer_native=False): a Python loop over parsed messages

Time is the best of ``--repeats`` runs (the reference runs once: it is slow). "x parse" is the
time over ``parse (TF)``; the target for ``decode native`` is about 1.5 or less. Peak RSS is
``ru_maxrss`` of the child (it includes the interpreter and, for ``parse (TF)``, TensorFlow);
"+RSS" is that peak minus the RSS just before the first measured call, i.e. what the call
itself needed on top of the input bytes. Absolute figures depend on the machine and are never
checked; the exit status is 1 only when a child fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from large_trace import DEFAULT_STEPS, QUICK_STEPS, cached_trace, default_cache, quiet_env

# Runs in a fresh interpreter: argv = method, trace path, repeats. Prints one JSON line.
MEASURE = r"""
import gc, json, resource, sys, time

method, path, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024

if method == "parse_tf":
    from tensorflow.tsl.profiler.protobuf.xplane_pb2 import XSpace
    run = lambda data: XSpace.FromString(data)
elif method == "parse_ours":
    from tftrace.analysis.xplane.schema import XSpace
    run = lambda data: XSpace.FromString(data)
else:
    from tftrace.analysis.xplane.decode import decode, native_available
    if method == "native" and not native_available():
        print(json.dumps({"error": "C extension not built"}))
        sys.exit(0)
    native = method == "native"
    run = lambda data: decode(data, prefer_native=native)

with open(path, "rb") as f:
    data = f.read()
gc.collect()
before = rss_kib()
times, result = [], None
for _ in range(repeats):
    result = None
    t0 = time.perf_counter()
    result = run(data)
    times.append(time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": min(times), "peak_kib": peak, "added_kib": peak - before}))
"""

METHODS = {
    "parse_tf": "parse (TF)",
    "parse_ours": "parse (ours)",
    "native": "decode native",
    "reference": "decode reference",
}


def measure(method: str, trace: Path, repeats: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, method, str(trace), str(repeats)],
        capture_output=True,
        text=True,
        env=quiet_env(),
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stderr[-2000:])
        return {"error": f"child exited with {proc.returncode}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def count_events(trace: Path) -> tuple[int, int]:
    from tftrace.analysis.xplane.decode import decode

    space = decode(trace.read_bytes())
    return len(space.events["line"]), len(space.stats["kind"])


def print_table(results: dict[str, dict[str, Any]]) -> None:
    base = results.get("parse_tf", {}).get("seconds")
    print(f"{'method':<18}{'seconds':>9}{'x parse':>9}{'peak RSS':>11}{'+RSS':>9}")
    for method, label in METHODS.items():
        r = results[method]
        if "error" in r:
            print(f"{label:<18}  {r['error']}")
            continue
        ratio = f"{r['seconds'] / base:.2f}" if base else "-"
        print(
            f"{label:<18}{r['seconds']:>9.3f}{ratio:>9}"
            f"{r['peak_kib'] / 1024:>8.0f} MB{r['added_kib'] / 1024:>6.0f} MB"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trace", type=Path, default=None, help=f"cache dir ({default_cache()}) or .xplane.pb"
    )
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} steps, 1 repeat")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeats = QUICK_STEPS, 1
    trace = cached_trace(args.trace, args.steps, args.quick)
    events, stats = count_events(trace)
    size_mb = trace.stat().st_size / 1e6
    print(f"trace {trace}: {size_mb:.1f} MB, {events:,} events, {stats:,} stats")
    results = {}
    for method in METHODS:
        repeats = 1 if method == "reference" else args.repeats
        results[method] = measure(method, trace, repeats)
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps({"trace": str(trace), "results": results}, indent=2))
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
