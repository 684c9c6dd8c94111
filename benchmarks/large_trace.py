"""A large real TF profiler trace for the benchmarks, recorded once and cached on disk.

The workload: a tf.function summing 20 independent 64x64 matmuls, run ``steps`` times under the
TF profiler. With TF 2.21 on 2 cores one step writes ~115 host events (3 KB), so the default
17500 steps give about 2 M events and 55 MB (~30 s to record). Recording takes much longer
than any measurement, so the trace is written once into a cache directory (a TensorBoard log
dir) and reused while a ``*.xplane.pb`` is there.

Imported by the benchmark scripts next to this file (run as ``python benchmarks/NAME.py``,
which puts this directory on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_STEPS = 17500  # ~2 M events, 55 MB
QUICK_STEPS = 300  # ~35 k events: a smoke run

WORKLOAD = """
import sys
import tensorflow as tf

logdir, steps = sys.argv[1], int(sys.argv[2])
weights = [tf.random.normal((64, 64)) for _ in range(20)]

@tf.function
def step(x):
    return tf.add_n([tf.matmul(x, w) for w in weights])

x = tf.random.normal((64, 64))
step(x).numpy()  # trace the function before the profiler starts
tf.profiler.experimental.start(logdir)
for _ in range(steps):
    y = step(x)
y.numpy()
tf.profiler.experimental.stop()
"""


def default_cache(quick: bool = False) -> Path:
    """The cache directory shared by the benchmarks (a separate one for --quick traces)."""
    name = "tftrace-xplane-bench-quick" if quick else "tftrace-xplane-bench"
    return Path(tempfile.gettempdir()) / name


def quiet_env() -> dict[str, str]:
    """The environment for child interpreters: TF's C++ logging off, so stderr stays readable."""
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def find_trace(directory: Path) -> Path | None:
    """The newest ``*.xplane.pb`` under ``directory`` (profile sessions sort by time)."""
    found = sorted(directory.glob("**/*.xplane.pb"))
    return found[-1] if found else None


def generate(directory: Path, steps: int) -> Path:
    """Runs the workload under the TF profiler into ``directory`` (a TensorBoard log dir)."""
    print(f"generating a trace of {steps} steps into {directory} ...", flush=True)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(directory), str(steps)],
        check=True,
        env=quiet_env(),
    )
    trace = find_trace(directory)
    if trace is None:
        raise SystemExit(f"the workload wrote no *.xplane.pb under {directory}")
    print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
    return trace


def cached_trace(path: Path | None, steps: int, quick: bool = False) -> Path:
    """The trace to measure: ``path`` itself when it is a file, else the one cached in the
    directory ``path`` (default: :func:`default_cache`), recorded there first if missing."""
    if path is not None and path.is_file():
        return path
    directory = path or default_cache(quick)
    directory.mkdir(parents=True, exist_ok=True)
    return find_trace(directory) or generate(directory, steps)


def replicated_trace(source: Path, copies: int, directory: Path) -> Path:
    """``source`` laid end to end ``copies`` times, cached in ``directory``.

    Recording K times the steps does not work: TF's profiler holds every event in memory until
    it stops, and 175,000 steps of the workload filled a 24 GB machine. So each host line's
    events are repeated, each copy shifted by the trace's span; the flow ids of a copy (the
    ``_p``/``_c`` stats that join a Record to its region) are made its own, so that every copy
    pairs as the original does. K copies are K times the events and steps of the same workload.
    """
    cached = find_trace(directory)
    if cached is not None:
        return cached
    print(f"building {copies} copies of {source} end to end ...", flush=True)
    t0 = time.perf_counter()
    from tftrace.analysis.xplane.schema import XSpace

    space = XSpace.FromString(source.read_bytes())
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        flows = {k for k, m in plane.stat_metadata.items() if m.name in ("_p", "_c")}
        starts = [ln.timestamp_ns * 1000 + ev.offset_ps for ln in plane.lines for ev in ln.events]
        ends = [
            ln.timestamp_ns * 1000 + ev.offset_ps + ev.duration_ps
            for ln in plane.lines
            for ev in ln.events
        ]
        span_ps = max(ends) - min(starts) + 1_000_000  # and a microsecond between copies
        for line in plane.lines:
            originals = list(line.events)
            for k in range(1, copies):
                for event in originals:
                    copy = line.events.add()
                    copy.CopyFrom(event)
                    copy.offset_ps += k * span_ps
                    for stat in copy.stats:
                        if stat.metadata_id in flows:
                            field = stat.WhichOneof("value")
                            setattr(stat, field, getattr(stat, field) ^ (k << 48))
            line.duration_ps = line.duration_ps + (copies - 1) * span_ps
    out = directory / "plugins" / "profile" / "replicated" / "vm.xplane.pb"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(space.SerializeToString())
    print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def measure_in_child(script: str, method: str, trace: Path) -> dict[str, Any]:
    """Run ``script`` (``python -c``, argv = method, trace) in a fresh interpreter and return
    the JSON object its last line prints; {"error": ...} when it could not run."""
    proc = subprocess.run(
        [sys.executable, "-c", script, method, str(trace)],
        capture_output=True,
        text=True,
        env=quiet_env(),
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"error": f"child exited with {proc.returncode}: {tail[0][:200]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result
