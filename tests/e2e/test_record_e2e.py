"""End to end: ``tftrace record`` on real TensorFlow workloads whose thread pools are known."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import (
    EXAMPLES,
    WORKLOADS,
    host_lines,
    identity_by_tf_name,
    quiet_env,
    tftrace,
    tftrace_command,
    trace_span_seconds,
)

pytestmark = pytest.mark.slow

EIGEN = re.compile(r"^tf_numa_-?\d+_Eigen")


def test_eager_matmul_pools_sized_by_env(record):
    env = quiet_env(TF_NUM_INTRAOP_THREADS="3", TF_NUM_INTEROP_THREADS="2")
    done = record(EXAMPLES / "eager_matmul.py", "--size", "800", "--repeat", "4", env=env)
    assert done.returncode == 0, done.stderr
    m = done.manifest()
    assert m["schema_version"] == 1 and m["status"] == "complete"
    assert m["pools"]["intra_op"] == {**m["pools"]["intra_op"], "size": 3, "source": "env"}
    assert m["pools"]["inter_op"]["size"] == 2
    assert m["env"]["TF_NUM_INTRAOP_THREADS"] == "3"
    assert {s["state"] for s in m["sources"].values()} == {"recorded"}
    assert (
        m["sources"]["pyspy"]["scheduling"] == m["sources"]["os_sampler"]["scheduling"] == "batch"
    )
    assert "4 products of 800x800" in (done.run / "workload/stdout.log").read_text()
    assert "4 products of 800x800" in done.stdout  # streamed live as well as kept

    # The OS side: exactly the configured number of each pool's threads.
    by_name = identity_by_tf_name(done.run)
    eigen = [t for name, ts in by_name.items() if EIGEN.match(name) for t in ts]
    assert len(eigen) == 3
    assert len(by_name["tf_Compute"]) == 2
    # ... and the sampler saw every one of them, under the names the OS shows.
    table = done.json("os_threads/threads.json")
    sampled = {t["tid"]: t for t in table["threads"]}
    assert {t["tid"] for t in eigen} <= set(sampled)
    assert Counter(t["name"] for t in table["threads"])["tf_Compute"] == 2

    # The trace side: three Eigen lines, each mapped to one of those OS threads.
    lines = host_lines(done.run)
    eigen_lines = [line for line in lines if EIGEN.match(line[1])]
    assert len(eigen_lines) == 3
    trace_ids = {t["trace_line_id"]: t["tid"] for t in eigen}
    assert {line_id for line_id, _, _ in eigen_lines} == set(trace_ids)

    summary = tftrace("summary", done.run)
    assert summary.returncode == 0, summary.stderr
    assert "2 inter-op, 3 intra-op" in summary.stdout
    assert "intra_op   3 threads (env)" in summary.stdout


def test_tf_function_branches_have_tf_compute_and_eigen_lines(record):
    env = quiet_env(TF_NUM_INTRAOP_THREADS="2", TF_NUM_INTEROP_THREADS="2")
    done = record(WORKLOADS / "branches.py", env=env)
    assert done.returncode == 0, done.stderr
    names = [name for _, name, _ in host_lines(done.run)]
    assert sum(name.startswith("tf_Compute/") for name in names) >= 1
    assert sum(bool(EIGEN.match(name)) for name in names) >= 1
    # Every trace line is one OS thread of the workload.
    identity = {t["trace_line_id"] for ts in identity_by_tf_name(done.run).values() for t in ts}
    assert {line_id for line_id, _, _ in host_lines(done.run)} <= identity


def test_tf_data_parallel_map_threads_are_identified(record):
    done = record(WORKLOADS / "data_pipeline.py")
    assert done.returncode == 0, done.stderr
    names = identity_by_tf_name(done.run)
    assert any(name.startswith("tf_data") for name in names), sorted(names)
    assert any(name.startswith("tf_data") for _, name, _ in host_lines(done.run))


def test_workload_own_threading_settings_still_work(record):
    done = record(WORKLOADS / "own_settings.py")
    assert done.returncode == 0, done.stderr
    assert "settings 3 1" in done.stdout
    m = done.manifest()
    assert m["pools"]["intra_op"]["size"] == 3 and m["pools"]["intra_op"]["source"] == "config"
    assert m["pools"]["inter_op"]["size"] == 1
    calls = m["workload"]["setter_calls"]
    assert [(c["setter"], c["value"], c["error"]) for c in calls] == [
        ("set_intra_op_parallelism_threads", 3, None),
        ("set_inter_op_parallelism_threads", 1, None),
    ]
    by_name = identity_by_tf_name(done.run)
    assert sum(len(ts) for name, ts in by_name.items() if EIGEN.match(name)) == 3
    assert len(by_name["tf_Compute"]) == 1


def test_sampler_cpu_time_matches_the_threads_own_clock(record):
    done = record(WORKLOADS / "spin_thread.py", options=("--no-tf-profiler", "--no-pyspy"))
    assert done.returncode == 0, done.stderr
    tid = int(re.search(r"BURNER_TID=(\d+)", done.stdout).group(1))
    chunks = sorted((done.run / "os_threads").glob("samples-*.npz"))
    cols = {k: np.concatenate([np.load(c)[k] for c in chunks]) for k in ("tid", "cpu_ns", "t_ns")}
    mine = cols["tid"] == tid
    assert mine.sum() > 50  # sampled at 100 Hz for over a second
    cpu_s = cols["cpu_ns"][mine].max() / 1e9
    assert cpu_s == pytest.approx(1.0, rel=0.1)
    assert np.all(np.diff(cols["t_ns"][mine]) > 0)
    names = {t["tid"]: t for t in done.json("thread_identity.json")["threads"]}
    assert names[tid]["python_name"] == "burner"
    # The sampler yields to the workload (SCHED_BATCH); the workload keeps the normal policy.
    assert done.manifest()["sources"]["os_sampler"]["scheduling"] == "batch"
    assert f"WORKLOAD_POLICY={os.SCHED_OTHER}" in done.stdout


def test_profiler_window_delay_and_duration(record):
    done = record(
        WORKLOADS / "runs_until_stopped.py",
        "8",
        options=("--delay", "3", "--duration", "1.5", "--no-pyspy"),
    )
    assert done.returncode == 0, done.stderr
    m = done.manifest()
    status = m["sources"]["tf_profiler"]
    assert status["state"] == "recorded"
    started = m["clock"]["workload"]["code_start_anchor"]["monotonic_ns"]
    opened = status["started_anchor"]["monotonic_ns"]
    closed = status["stop_anchor"]["monotonic_ns"]
    assert (opened - started) / 1e9 == pytest.approx(3.0, abs=0.5)
    assert (closed - opened) / 1e9 == pytest.approx(1.5, abs=0.3)
    # The trace holds events of the window only, not of the eight-second run.
    span_s = trace_span_seconds(done.run)
    assert 0.5 < span_s < 2.0


@pytest.mark.parametrize(
    ("signame", "started_ignoring_sigint"),
    [("SIGTERM", False), ("SIGINT", False), ("SIGINT", True)],
)
def test_signal_stops_workload_and_keeps_the_trace(
    tmp_path: Path, signame: str, started_ignoring_sigint: bool
):
    """Also from a parent that ignores SIGINT (a shell's background job), which exec passes on
    to the recorder and could pass on to the workload."""
    import signal
    import subprocess
    import time

    run = tmp_path / "run"
    proc = subprocess.Popen(
        tftrace_command("record", "-o", run, WORKLOADS / "runs_until_stopped.py"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=quiet_env(),
        preexec_fn=(
            (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            if started_ignoring_sigint
            else None
        ),
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    for line in proc.stdout:  # wait until the workload is busy
        if "working" in line or time.monotonic() > deadline:
            break
    time.sleep(1.0)
    sig = getattr(signal, signame)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err.split("tftrace: stopping")[-1]
    import json

    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "interrupted"
    assert m["interrupted_by"] == signame
    assert m["workload"]["interrupted"] is True
    assert m["sources"]["tf_profiler"]["state"] == "recorded"
    lines = host_lines(run)
    assert sum(n for _, _, n in lines) > 100  # the trace holds the work done before the signal
    assert m["sources"]["os_sampler"]["state"] == "recorded"
