"""Shared helpers: run ``tftrace`` end to end in a subprocess, read what it wrote."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics

ROOT = Path(__file__).resolve().parent.parent
# Layers whose tests time nothing: ``make test`` runs them side by side (pytest-xdist) before
# the end-to-end known answers, which run one at a time with the cores to themselves.
SIDE_BY_SIDE_LAYERS = ("unit", "golden", "layout")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of a layer in ``SIDE_BY_SIDE_LAYERS`` is marked ``side_by_side`` (an
    end-to-end file that times nothing says so in its own ``pytestmark``)."""
    tests = Path(__file__).resolve().parent
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.is_relative_to(tests) and path.relative_to(tests).parts[0] in SIDE_BY_SIDE_LAYERS:
            item.add_marker(pytest.mark.side_by_side)


# A known answer that needs every core to itself (a parallel speedup, a pool's concurrency on
# 2 cores) is retried up to twice: the test machines are virtual, and the host takes CPU from
# them in bursts (steal time, about 5 % of all CPU time on the 2-core test machine, in
# /proc/stat), which leaves a "2-core" workload one core for seconds. Three misses in a row
# still fail the test.
NEEDS_QUIET_CORES = pytest.mark.flaky(reruns=2)
# Cores other programs (and the host's steal) may hold over a measured window before a known
# answer that needs quiet cores stops being one: it is skipped, saying so.
MOST_HELD_BY_OTHERS = 0.15


# The share of a core each of two CPUs must give, spinning side by side against one alone,
# for a known answer that needs them to hold: a virtual machine's host can take a CPU from
# it in a way its kernel does not count as steal (on one 2-vCPU guest two spinning
# processes made 1.6x one's progress for minutes, and a product split over two workers
# kept 1.6 of them busy where it keeps 2.0).
LEAST_CORE_DELIVERED = 0.85
_SPIN = (
    "import time\nend = time.perf_counter() + {s}\nn = 0\n"
    "while time.perf_counter() < end: n += 1\nprint(n)"
)


def _spin(k: int, seconds: float) -> list[int]:
    code = _SPIN.format(s=seconds)
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(k)
    ]
    return [int(p.communicate()[0]) for p in procs]


def cores_delivered(cpus: int = 2, seconds: float = 0.25, probes: int = 3) -> float:
    """How many cores' worth ``cpus`` processes spinning side by side get, against one alone
    just before and after; the best of ``probes`` (the host's hold comes and goes within a
    second: one probe alone read 1.4 to 2.6 on the same guest)."""
    best = 0.0
    for _ in range(probes):
        before = _spin(1, seconds)[0]
        side_by_side = sum(_spin(cpus, seconds))
        alone = (before + _spin(1, seconds)[0]) / 2
        best = max(best, side_by_side / alone if alone > 0 else 0.0)
    return best


def skip_unless_cores_deliver(what: str, cpus: int = 2) -> None:
    """Skip, saying so, where ``cpus`` CPUs do not give each at least
    ``LEAST_CORE_DELIVERED`` of a core side by side (a host holding them unseen)."""
    got = cores_delivered(cpus)
    if got < LEAST_CORE_DELIVERED * cpus:
        pytest.skip(
            f"{what}: {cpus} CPUs spinning side by side made {got:.2f}x one's progress "
            "(the host holds part of them; a known answer that needs quiet cores)"
        )


def skip_unless_quiet(metrics: Metrics, what: str, over: tuple[int, int] | None = None) -> None:
    """Skip, saying so, where a recording's own count (``metrics``: its ``measure``) shows
    other programs (or the host's steal) held the cores over its window (or ``over``, ns on
    the run's axis, where the known answer reaches beyond it); tftrace's recorder is the
    recording's, not noise. The cores are then probed side by side as well
    (``skip_unless_cores_deliver``)."""
    from tftrace.analysis.metrics.contention import contention_of

    window = over or metrics.window
    held = contention_of(metrics.run, window)
    if held is not None:
        seconds = (window[1] - window[0]) / 1e9
        others = (
            held.others_core_s - held.tftrace_core_s + held.steal_core_s + held.throttled_core_s
        )
        if others / seconds > MOST_HELD_BY_OTHERS:
            pytest.skip(
                f"{what}: other programs held {others / seconds:.2f} cores over its window "
                "(a known answer that needs quiet cores)"
            )
    # the probe (seconds of spinning) only where the recording's own count did not skip
    if len(os.sched_getaffinity(0)) >= 2:
        skip_unless_cores_deliver(what)


WORKLOADS = Path(__file__).resolve().parent / "workloads"
EXAMPLES = ROOT / "examples"
# Real runs recorded with three TF releases (sample_traces/README.md); tf-2.21 the newest.
SAMPLE_TRACES = ROOT / "sample_traces"
SAMPLE_RUNS = sorted(SAMPLE_TRACES.glob("tf-*"))
SAMPLE_RUN = SAMPLE_TRACES / "tf-2.21"


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str
    run: Path

    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run / "manifest.json").read_text())
        return data

    def json(self, rel: str) -> Any:
        return json.loads((self.run / rel).read_text())


def quiet_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_NUM_")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.update(extra)
    return env


def tftrace_command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "tftrace", *map(str, args)]


def tftrace(
    *args: str | Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tftrace_command(*args),
        capture_output=True,
        text=True,
        env=env or quiet_env(),
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture
def record(tmp_path: Path):
    """``record(target..., env=..., options=[...])`` -> Completed, run dir under tmp_path."""

    def _record(
        *target: str | Path,
        options: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Completed:
        run = tmp_path / "run"
        proc = tftrace("record", "-o", run, *options, *target, env=env, cwd=cwd)
        return Completed(proc.returncode, proc.stdout, proc.stderr, run)

    return _record


@pytest.fixture
def sample_run_copy(tmp_path: Path) -> Path:
    """A writable copy of ``SAMPLE_RUN`` at ``tmp_path / "run"``."""
    return Path(shutil.copytree(SAMPLE_RUN, tmp_path / "run"))


def host_plane(run: Path) -> Any:
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    files = sorted(run.glob("plugins/profile/*/*.xplane.pb"))
    assert len(files) == 1, files
    space = xplane_pb2.XSpace()
    space.ParseFromString(files[0].read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    return plane


def host_lines(run: Path) -> list[tuple[int, str, int]]:
    """(line id, line name, event count) of the host plane of the run's trace."""
    return [(line.id, line.name, len(line.events)) for line in host_plane(run).lines]


def trace_span_seconds(run: Path) -> float:
    """From the first event's start to the last event's end, over all host threads."""
    starts, ends = [], []
    for line in host_plane(run).lines:
        for event in line.events:
            start = line.timestamp_ns * 1000 + event.offset_ps
            starts.append(start)
            ends.append(start + event.duration_ps)
    return (max(ends) - min(starts)) / 1e12


def identity_by_tf_name(run: Path) -> dict[str, list[dict[str, Any]]]:
    data = json.loads((run / "thread_identity.json").read_text())
    out: dict[str, list[dict[str, Any]]] = {}
    for thread in data["threads"]:
        out.setdefault(thread["tf_name"] or "", []).append(thread)
    return out


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_port_pair() -> int:
    """A port P with P + 1 free too (a served program's data endpoint's default)."""
    import socket

    for _ in range(50):
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise AssertionError("no two free ports in a row")


def http_get(url: str, timeout: float = 30) -> bytes:
    """A local server's response body (TensorBoard may gzip it)."""
    import gzip
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return bytes(body)


def modules_loaded_by(*modules: str) -> set[str]:
    """The top-level packages a fresh interpreter holds after importing ``modules``: what
    importing them costs, e.g. whether pandas or TensorFlow came along."""
    listing = "print(*sorted({m.split('.')[0] for m in sys.modules}))"
    code = f"import sys, {', '.join(modules)}\n{listing}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` (NAME may name a subfolder: ``workloads/...``) as a module
    (benchmarks are scripts, not a package), to test its scoring on hand-built data. Its
    sibling modules import as they do when it runs as a script."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    path = ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{path.stem}_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def target() -> Iterator[subprocess.Popen[bytes]]:
    """A process for a helper (the OS sampler's, py-spy's) to watch: it sleeps."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()
