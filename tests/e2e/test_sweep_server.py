"""``tftrace sweep`` of a server, on real TensorFlow: requests on several Python threads at
once (``workloads/server.py``: K client threads x N requests of a tf.function after W warm-up
calls), concrete-function calls (a SavedModel's signature), objectives, and several copies
pinned to their own CPUs. Only counts and ratios between two clocks of the same run are
checked, never an absolute time."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import WORKLOADS, tftrace
from tftrace.tracer.options import Target
from tftrace.tracer.recorder import record
from tftrace.tracer.sweep import timing_options

pytestmark = pytest.mark.slow

CPUS = len(os.sched_getaffinity(0))
SERVER = WORKLOADS / "server.py"
CLIENTS, REQUESTS, WARMUP = 4, 150, 3


def sweep(out: Path, *args: str | Path) -> dict[str, Any]:
    done = tftrace("sweep", "-o", out, "--json", "--no-explain", *args, timeout=600)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def serve_rows(run: Path) -> list[list[int]]:
    """The step timer's rows of the workload's 'serve' calls: [thread, start, end]."""
    data = json.loads((run / "workload" / "steps.json").read_text())
    return [[r[3], r[4], r[5]] for r in data["rows"] if r[1] == "serve"]


def requests_in_window(rows: list[list[int]], warmup: int) -> tuple[int, float, int]:
    """Worked out here from the rows alone: (requests that ended after the warm-up, window
    seconds, window start): the warm-up ends with the first ``warmup`` calls (by start)."""
    ordered = sorted(rows, key=lambda r: r[1])
    start = max(r[2] for r in ordered[:warmup])
    after = [r for r in ordered if r[2] > start]
    return len(after), (max(r[2] for r in after) - start) / 1e9, start


def test_step_timer_times_concrete_function_calls(tmp_path: Path):
    """A ConcreteFunction called as it is, and a SavedModel's signature on three threads, are
    steps; the concrete function called inside a tf.function is part of that call."""
    run = tmp_path / "run"
    target = Target("script", str(WORKLOADS / "concrete_calls.py"))
    result = record(timing_options(target, run, {}))
    assert result.exit_code == 0
    counts = json.loads((run / "workload" / "stdout.log").read_text().splitlines()[-1])
    data = json.loads((run / "workload" / "steps.json").read_text())
    assert data["errors"] == []
    rows = data["rows"]
    named = {n: [r for r in rows if r[1] == n] for n in {r[1] for r in rows}}
    assert len(named["double"]) == counts["direct"]  # the concrete function alone
    assert len(named["outer"]) == counts["outer"]  # its calls inside outer are not steps
    signature = named["signature_wrapper_serve"]
    assert len(signature) == counts["signature"]
    assert len({r[3] for r in signature}) == counts["signature_threads"]
    assert {r[0] for r in rows} == {"tf.function"}


def test_a_servers_requests_rate_and_latency_match_its_own(tmp_path: Path):
    """K x N requests after W warm-up calls: tftrace counts K x N in its window; its
    requests/s is within 5 % of the workload's own count over its own span (first request's
    start to last one's end), its p50 within 10 % of the workload's own p50."""
    own = tmp_path / "own.json"
    out = tmp_path / "s"
    data = sweep(
        out,
        "--intra",
        "1",
        "--repeat",
        "1",
        "--warmup-steps",
        str(WARMUP),
        SERVER,
        "--clients",
        str(CLIENTS),
        "--requests",
        str(REQUESTS),
        "--warmup",
        str(WARMUP),
        "--own",
        own,
    )
    assert (data["workload"], data["objective"]) == ("server", "throughput")
    assert data["decided_by"] == "throughput (requests/s)"
    (run,) = data["runs"]
    assert run["basis"].startswith("server: tf.function 'serve' calls on every thread")
    assert run["requests"] == CLIENTS * REQUESTS
    mine = json.loads(own.read_text())["requests"]
    assert len(mine) == CLIENTS * REQUESTS
    starts = np.array([r[1] for r in mine])
    ends = np.array([r[2] for r in mine])
    own_rate = len(mine) / ((ends.max() - starts.min()) / 1e9)
    assert run["requests_per_s"] == pytest.approx(own_rate, rel=0.05)
    own_p50 = float(np.percentile((ends - starts) / 1e6, 50))
    assert run["p50_ms"] == pytest.approx(own_p50, rel=0.10)
    # The window, worked out again from the step timer's rows: the same requests and rate,
    # and every one of the workload's own requests ended in it.
    count, seconds, start = requests_in_window(serve_rows(out / run["path"]), WARMUP)
    assert count == run["requests"]
    assert run["requests_per_s"] == pytest.approx(count / seconds, rel=1e-9)
    assert (ends > start).all() and run["time_s"] == pytest.approx(1 / run["requests_per_s"])
    assert run["p99_ms"] >= run["p90_ms"] >= run["p50_ms"] > 0
    # The sweep directory shows it again, the objective named.
    shown = tftrace("summary", out)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())  # the console wraps long lines
    assert "decided by: throughput (requests/s)" in text and "req/s*" in text


def test_objective_p99_decides_and_is_named(tmp_path: Path):
    out = tmp_path / "s"
    done = tftrace(
        "sweep",
        "-o",
        out,
        "--no-explain",
        "--intra",
        "1,2",
        "--repeat",
        "1",
        "--objective",
        "p99",
        SERVER,
        "--clients",
        "2",
        "--requests",
        "60",
        "--warmup",
        "1",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # the console wraps long lines
    assert "decided by: p99 latency" in text and "p99 ms*" in text
    assert "Best median p99 latency" in text  # one run each: too few to judge
    data = json.loads((out / "sweep.json").read_text())
    assert data["objective"] == "p99" and data["options"]["objective"] == "p99"
    assert data["unit"] == "s (p99 latency)"
    for run in data["runs"]:
        assert run["requests"] == 2 * 60 and run["time_s"] == pytest.approx(run["p99_ms"] / 1e3)


@pytest.mark.skipif(CPUS < 2, reason="two copies need two CPUs")
def test_two_instances_each_on_its_own_cpus(tmp_path: Path):
    """--instances 2: one process on every CPU (the baseline, its pools sized to all of them)
    and two copies at once, each pinned to its own half with pools of that size; the run's
    requests/s is the sum of the copies' own, each worked out again from its step timer."""
    out = tmp_path / "s"
    clients, requests = 2, 150
    data = sweep(
        out,
        "--instances",
        "2",
        "--repeat",
        "1",
        "--warmup-steps",
        "1",
        SERVER,
        "--clients",
        str(clients),
        "--requests",
        str(requests),
        "--warmup",
        "1",
    )
    half = CPUS // 2
    assert [(s["instances"], s["cores"], s["intra"], s["inter"]) for s in data["settings"]] == [
        (1, CPUS, CPUS, CPUS),
        (2, half, half, half),
    ]
    one, two = data["runs"]
    assert [len(one["copies"]), len(two["copies"])] == [1, 2]
    pinned = []
    for copy in two["copies"]:
        manifest = json.loads((out / copy["path"] / "manifest.json").read_text())
        # the workload's own view of its affinity, and the recording's
        assert manifest["workload"]["cpu_affinity"] == copy["cpus"]
        assert manifest["host"]["cpu_affinity"] == copy["cpus"]
        assert manifest["recording"]["pinned_cpus"] == copy["cpus"]
        assert len(copy["cpus"]) == half
        assert {p: manifest["pools"][p]["size"] for p in ("intra_op", "inter_op")} == {
            "intra_op": half,
            "inter_op": half,
        }
        pinned.append(set(copy["cpus"]))
        count, seconds, _ = requests_in_window(serve_rows(out / copy["path"]), 1)
        assert count == copy["requests"] == clients * requests
        assert copy["requests_per_s"] == pytest.approx(count / seconds, rel=1e-9)
    assert not pinned[0] & pinned[1]  # distinct CPUs
    total = sum(c["requests_per_s"] for c in two["copies"])
    assert two["requests_per_s"] == pytest.approx(total, rel=1e-9)
    assert two["requests"] == 2 * clients * requests
    base = json.loads((out / one["copies"][0]["path"] / "manifest.json").read_text())
    assert len(base["workload"]["cpu_affinity"]) == CPUS
    assert data["verdict"]["text"][0].startswith("Only 1 run(s) per setting")
