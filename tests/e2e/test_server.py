"""Servers on real TensorFlow: requests on several Python threads, known by construction.

``workloads/server.py`` runs K client threads of N requests each (one tf.function call per
request) after W warm-up calls on the main thread, and times itself: tftrace must find its
requests, window, throughput and latency as the workload's own clock has them, and its
findings must fire on the pool settings that make them true and only there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tftrace
from conftest import NEEDS_QUIET_CORES, WORKLOADS, quiet_env
from conftest import tftrace as run_tftrace

pytestmark = pytest.mark.slow

CPUS = len(os.sched_getaffinity(0))
SERVER = WORKLOADS / "server.py"
CLIENTS, REQUESTS, WARMUP = 4, 80, 3


def record_server(
    out: Path, intra: int, inter: int, *args: str, cpus: int | None = None
) -> tftrace.Analysis:
    own = out.with_suffix(".own.json")
    proc = run_tftrace(
        "record",
        "--no-pyspy",
        "-o",
        out,
        SERVER,
        "--clients",
        str(CLIENTS),
        "--requests",
        str(REQUESTS),
        "--warmup",
        str(WARMUP),
        "--own",
        own,
        *args,
        env=quiet_env(TF_NUM_INTRAOP_THREADS=str(intra), TF_NUM_INTEROP_THREADS=str(inter)),
    )
    assert proc.returncode == 0, proc.stderr
    return tftrace.analyze(tftrace.load(out), cpus=cpus)


def own_requests(out: Path, run: tftrace.Run) -> np.ndarray:
    """The workload's own (start, end) of every client request, on the run's axis (ns)."""
    rows: list[Any] = json.loads(out.with_suffix(".own.json").read_text())["requests"]
    assert run.origin.monotonic_ns is not None
    return np.array([(s, e) for _, s, e in rows], dtype=np.int64) - run.origin.monotonic_ns


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tftrace.Analysis]:
    """Both pools sized to the cores, K clients: two pools on the same cores."""
    out = tmp_path_factory.mktemp("server") / "crowded"
    return out, record_server(out, CPUS, CLIENTS)


def test_requests_throughput_and_latency_match_the_workloads_own(crowded):
    out, analysis = crowded
    assert analysis.shape == "server"
    requests = analysis.requests
    assert requests is not None
    # every call is a unit of work: the clients' requests and the main thread's warm-up
    assert requests.found == CLIENTS * REQUESTS + WARMUP
    assert requests.threads == CLIENTS + 1
    # the window starts where the first (tracing) call ends and runs to the last request
    assert analysis.window_basis.startswith("server:")
    assert "warm-up" in analysis.window_basis
    own = own_requests(out, analysis.run)
    lo, hi = analysis.window
    assert hi == requests.table["end_ns"].max()
    # the clients' requests all start after the main thread's warm-up calls: all counted
    clients = requests.table[requests.table["thread"] != requests.table["thread"].iloc[0]]
    assert len(clients) == CLIENTS * REQUESTS
    mine = own[(own[:, 0] >= lo) & (own[:, 0] < hi)]
    own_rate = len(mine) / ((hi - lo) / 1e9)
    assert requests.throughput == pytest.approx(own_rate, rel=0.05)
    own_p50 = float(np.median(mine[:, 1] - mine[:, 0])) / 1e6
    p50 = float(np.median(clients["latency_ns"])) / 1e6
    assert p50 == pytest.approx(own_p50, rel=0.10)
    # each request's time is split into shares that add up to it
    shares = requests.table[list(tftrace.analysis.metrics.requests.REQUEST_CATEGORIES)]
    assert np.allclose(shares.sum(axis=1), 1.0, atol=1e-6)
    # K clients with no pause: more than one request in flight, at most K + the main thread
    assert 1.0 < requests.mean_in_flight() <= CLIENTS + 1
    assert requests.peak_in_flight() <= CLIENTS + 1


@NEEDS_QUIET_CORES
@pytest.mark.skipif(CPUS < 2, reason="one CPU: one pool cannot crowd another")
def test_pools_crowd_the_cores_fires_at_intra_cores_and_its_advice_is_confirmed(crowded):
    out, analysis = crowded
    found = {f.id: f for f in analysis.findings}
    assert "pools-crowd-cores" in found, [f.id for f in analysis.findings]
    crowd = found["pools-crowd-cores"]
    assert crowd.evidence["busy_over_cores"] > 1.0
    assert crowd.setting is not None
    assert (crowd.setting.intra, crowd.setting.objective) == (1, "throughput")
    # one inter-op thread per request in flight, at most the cores the clients' Python leaves
    python = crowd.evidence["python_on_cpu"]
    assert 0 < python < CPUS
    assert crowd.setting.inter == max(1, min(CLIENTS, round(CPUS - python)))
    proc = run_tftrace("analyze", "--verify", "--verify-repeat", "5", "--json", out, timeout=900)
    assert proc.returncode == 0, proc.stderr
    verified = {f["id"]: f for f in json.loads(proc.stdout)["findings"]}
    check = verified["pools-crowd-cores"]["verification"]
    assert check["status"] == "confirmed", check["reason"]
    assert check["advised"] == {"intra": 1, "inter": crowd.setting.inter, "env": {}, "cpus": None}


@NEEDS_QUIET_CORES
def test_at_intra_1_the_pools_do_not_crowd_and_the_server_is_not_told_to_split(tmp_path):
    analysis = record_server(tmp_path / "intra1", 1, CLIENTS)
    assert analysis.shape == "server"
    ids = [f.id for f in analysis.findings]
    assert "pools-crowd-cores" not in ids
    # K requests in flight on CPUS <= K cores: no rule may advise splitting ops
    assert analysis.requests is not None and analysis.requests.mean_in_flight() >= 1.5
    raise_intra = [f.id for f in analysis.findings if f.setting and (f.setting.intra or 0) > 1]
    if analysis.requests.mean_in_flight() >= CPUS:
        assert raise_intra == []
    assert "requests-queue-for-inter-op" not in ids  # K inter-op threads for K clients


@NEEDS_QUIET_CORES
def test_requests_queue_for_one_inter_op_thread(tmp_path):
    analysis = record_server(tmp_path / "inter1", 1, 1)
    found = {f.id: f for f in analysis.findings}
    assert "requests-queue-for-inter-op" in found, list(found)
    queue = found["requests-queue-for-inter-op"]
    assert queue.evidence["requests_in_flight"] > 1
    assert queue.setting is not None and queue.setting.inter == CLIENTS


def test_one_request_at_a_time_on_many_cores(tmp_path):
    # two clients that wait 20 ms between requests of about 1-2 ms: mostly one at a time
    out = tmp_path / "alone"
    on_many = record_server(out, 1, 2, "--pause-ms", "20", cpus=16)
    assert on_many.requests is not None and on_many.requests.mean_in_flight() < 1.2
    assert "one-request-at-a-time" in [f.id for f in on_many.findings]
    alone = next(f for f in on_many.findings if f.id == "one-request-at-a-time")
    assert alone.setting is None  # batching or concurrency, not threads
    # the same run on its own 2 cores is not "many cores"
    on_two = tftrace.analyze(tftrace.load(out), cpus=2)
    assert "one-request-at-a-time" not in [f.id for f in on_two.findings]


def test_the_users_step_markers_win(tmp_path):
    out = tmp_path / "marked"
    proc = run_tftrace("record", "--no-pyspy", "-o", out, WORKLOADS / "user_steps.py")
    assert proc.returncode == 0, proc.stderr
    analysis = tftrace.analyze(tftrace.load(out))
    assert analysis.shape == "loop"
    assert (analysis.steps.found, analysis.steps.source) == (3, "annotation train")
    assert len(analysis.steps.table) == 2  # steps 2-3: the first is the warm-up
    assert analysis.window_basis == (
        "steady: steps 2-3 of 3 (annotation train), after 1 warm-up step"
    )
