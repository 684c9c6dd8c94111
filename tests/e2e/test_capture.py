"""On demand: ``tftrace.serve(port)`` in running programs, ``tftrace capture`` of them all at
once, on real TensorFlow; and every way a capture or a serve can go wrong."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import tftrace
from conftest import WORKLOADS, free_port_pair, http_get, quiet_env
from conftest import tftrace as cli
from tftrace.tracer.capture import parse_addresses
from tftrace.tracer.os_sampler import COLUMNS
from tftrace.tracer.sample_buffer import RollingSampler, newest_sample_ns, threads_table, window

POOLS = {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "2"}
EIGEN = re.compile(r"^tf_numa_-?\d+_Eigen")
NO_PYSPY = "py-spy: none (tftrace capture records no Python stacks)"  # all else is there


class Served:
    """A running tests/workloads/served.py."""

    def __init__(self, port: int, task: int | None = None, tf_only: bool = False) -> None:
        env = quiet_env(**POOLS)
        if task is not None:
            cluster = {"worker": ["localhost:1", "localhost:2"]}
            env["TF_CONFIG"] = json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": task}}
            )
        self.port = port
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKLOADS / "served.py"), "--port", str(port)]
            + (["--tf-only"] if tf_only else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()  # "serving", or "" when it died
        if line != "serving":
            self.proc.kill()
            _, err = self.proc.communicate()
            pytest.fail(f"the served workload did not start ({line!r}): {err[-2000:]}")

    def stop(self) -> tuple[str, str]:
        if self.proc.poll() is None:
            try:
                out, err = self.proc.communicate(input="", timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
            return out, err
        return "", ""


@pytest.fixture(scope="class")
def workers() -> Iterator[list[Served]]:
    """Two served programs, tasks worker-0 and worker-1 of a TF_CONFIG, running for the
    tests of one class."""
    started = [Served(free_port_pair(), task=0), Served(free_port_pair(), task=1)]
    try:
        for worker in started:
            worker.ready()
        yield started
    finally:
        for worker in started:
            worker.stop()


def _capture(out: Path, *addresses: str, duration: str = "2"):
    return cli("capture", ",".join(addresses), "--duration", duration, "-o", out, timeout=400)


def _pool_threads(run: tftrace.Run, pool: str):
    return run.threads[(run.threads["pool"] == pool) & run.threads["line_name"].notna()]


@pytest.mark.slow
class TestServedWorkers:
    """Both tests share the two running workers."""

    def test_a_served_program_captured_is_a_run_directory(self, tmp_path, workers):
        worker = workers[0]
        out = tmp_path / "job"
        done = _capture(out, f"grpc://localhost:{worker.port}")
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        assert "captured 1 of 1 hosts" in done.stdout
        run_dir = out / "worker-0"  # named after its TF_CONFIG task
        for rel in ("manifest.json", "thread_identity.json", "os_threads/threads.json"):
            assert (run_dir / rel).is_file(), rel
        assert len(list(run_dir.glob("plugins/profile/*/*.xplane.pb"))) == 1
        assert list(run_dir.glob("os_threads/samples-*.npz"))

        manifest = json.loads((run_dir / "manifest.json").read_text())
        recording = manifest["recording"]
        assert recording["how"] == "capture" and recording["task"] == "worker-0"
        assert manifest["cluster"]["name"] == "worker-0"  # the served process's TF_CONFIG
        assert recording["address"] == f"grpc://localhost:{worker.port}"
        assert manifest["workload"]["pid"] == worker.proc.pid  # the served process's own facts
        assert "argv" not in manifest  # a served program's arguments are its own
        assert manifest["target"]["value"].endswith("served.py")
        assert manifest["env"]["TF_NUM_INTRAOP_THREADS"] == "2"
        assert {p: manifest["pools"][p]["size"] for p in ("inter_op", "intra_op")} == {
            "inter_op": 2,
            "intra_op": 2,
        }
        states = {name: s["state"] for name, s in manifest["sources"].items()}
        assert states == {
            "os_sampler": "recorded",
            "pyspy": "disabled",
            "tf_profiler": "recorded",
            "thread_identity": "recorded",
        }

        run = tftrace.load(run_dir)
        assert run.missing == [NO_PYSPY], run.missing
        window_ns = recording["window_wall_ns"][1] - recording["window_wall_ns"][0]
        for pool, size in (("inter-op", 2), ("intra-op", 2)):
            threads = _pool_threads(run, pool)
            assert len(threads) == size, run.threads
            assert threads["tid"].notna().all()  # joined to the OS by thread identity
            sampled = run.samples[run.samples["tid"].isin(threads["tid"].astype(int))]
            assert set(sampled["tid"]) == set(threads["tid"].astype(int))
            # the samples are those of the window, on the run's axis
            assert sampled["t_ns"].between(0, window_ns).all()
        tf_names = set(run.threads["tf_name"].dropna())
        assert "tf_Compute" in tf_names and any(EIGEN.match(n) for n in tf_names)
        # the trace lies in the window and holds the workload's steps
        assert len(run.events) and run.events["start_ns"].between(0, window_ns).all()
        assert run.events["name"].str.contains("step").any()

        listing = json.loads((out / "capture.json").read_text())
        assert listing["kind"] == "tftrace-capture" and listing["duration_s"] == 2
        (host,) = listing["hosts"]
        assert (host["answered"], host["path"], host["data"]) == (True, "worker-0", "received")

        analyzed = cli("analyze", run_dir)
        assert analyzed.returncode == 0, analyzed.stderr
        shown = cli("summary", run_dir).stdout
        assert "recorded   tftrace capture" in shown and "2 inter-op, 2 intra-op" in shown

    def test_every_host_at_once_and_one_that_does_not_answer(self, tmp_path, workers):
        silent = free_port_pair()  # nothing listens there
        addresses = [f"grpc://localhost:{w.port}" for w in workers]
        out = tmp_path / "job"
        done = _capture(out, addresses[0], f"grpc://localhost:{silent}", addresses[1])
        assert done.returncode == 0, done.stderr
        (line,) = done.stderr.splitlines()  # the lost host, in one line
        assert f"grpc://localhost:{silent}" in line and "did not answer" in line
        assert "captured 2 of 3 hosts" in done.stdout
        assert sorted(p.name for p in out.iterdir()) == ["capture.json", "worker-0", "worker-1"]

        hosts = json.loads((out / "capture.json").read_text())["hosts"]
        assert [h["address"] for h in hosts] == [
            addresses[0],
            f"grpc://localhost:{silent}",
            addresses[1],
        ]
        assert [h["answered"] for h in hosts] == [True, False, True]
        assert [h["path"] for h in hosts] == ["worker-0", None, "worker-1"]
        assert hosts[1]["problem"]

        for name, worker in zip(("worker-0", "worker-1"), workers, strict=True):
            run = tftrace.load(out / name)
            assert run.missing == [NO_PYSPY], run.missing
            manifest = json.loads((out / name / "manifest.json").read_text())
            assert manifest["workload"]["pid"] == worker.proc.pid
            assert len(_pool_threads(run, "inter-op")) == 2
            assert len(_pool_threads(run, "intra-op")) == 2
        # one trace call for both: their windows overlap
        a, b = (
            json.loads((out / n / "manifest.json").read_text()) for n in ("worker-0", "worker-1")
        )
        (a0, a1), (b0, b1) = a["recording"]["window_wall_ns"], b["recording"]["window_wall_ns"]
        assert max(a0, b0) < min(a1, b1)

    def test_the_data_endpoint_answers_in_json(self, workers):
        worker = workers[1]
        base = f"http://127.0.0.1:{worker.port + 1}/tftrace/v1/"
        info = json.loads(http_get(base + "info"))
        assert (info["protocol"], info["task"], info["pid"]) == (1, "worker-1", worker.proc.pid)
        assert info["sampler"] == info["identity"] == "running"
        assert info["anchor"]["monotonic_ns"] > info["started"]["monotonic_ns"]
        for path, status in (
            ("run", 400),
            ("samples?start_wall_ns=2&end_wall_ns=1", 400),
            ("nothing", 404),
        ):
            with pytest.raises(urllib.error.HTTPError) as raised:
                http_get(base + path)
            assert raised.value.code == status, path
            assert json.loads(raised.value.read())["error"]


@pytest.mark.slow
def test_a_program_with_only_tfs_profiler_server_gives_its_trace(tmp_path):
    bare = Served(free_port_pair(), tf_only=True)
    try:
        bare.ready()
        out = tmp_path / "job"
        done = _capture(out, f"grpc://localhost:{bare.port}", duration="1")
    finally:
        bare.stop()
    assert done.returncode == 0, done.stderr
    name = f"localhost_{bare.port}"
    assert "trace only" in done.stdout and name in done.stdout
    (host,) = json.loads((out / "capture.json").read_text())["hosts"]
    assert host["answered"] and "no tftrace.serve data endpoint" in host["data"]
    run = tftrace.load(out / name)  # a bare trace, as TensorBoard's
    assert not run.manifest.exists and len(run.events)


@pytest.mark.slow
def test_no_host_answering_is_one_line_and_leaves_nothing(tmp_path):
    out = tmp_path / "job"
    done = _capture(out, f"grpc://localhost:{free_port_pair()}", duration="1")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no host answered" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "address",
    [
        "http://localhost:6009",
        "localhost",
        "grpc://localhost:port",
        "grpc://:6009",
        "grpc://h:6009?data_port=x",
        "grpc://h:6009?other=1",
        "grpc://h:6009,grpc://h:6009",
    ],
)
def test_a_bad_address_is_one_line(tmp_path, address):
    done = cli("capture", address, "-o", tmp_path / "job")
    assert done.returncode == 2
    assert done.stderr.startswith("tftrace: error: capture: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "job").exists()


def test_an_output_directory_in_use_is_refused(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "keep.txt").write_text("mine")
    done = cli("capture", "grpc://localhost:6009", "-o", tmp_path / "job")
    assert done.returncode == 2 and "not empty" in done.stderr
    assert done.stderr.count("\n") == 1
    assert [p.name for p in (tmp_path / "job").iterdir()] == ["keep.txt"]
    done = cli("capture", "grpc://localhost:6009", "--duration", "0", "-o", tmp_path / "new")
    assert done.returncode == 2 and "--duration" in done.stderr


def test_addresses_and_their_data_ports():
    a, b, c = parse_addresses("grpc://h0:6009, h1:7000?data_port=9000,grpc://[::1]:6009")
    assert (a.host, a.port, a.data_port, a.label) == ("h0", 6009, 6010, "h0_6009")
    assert (b.grpc, b.data_port) == ("grpc://h1:7000", 9000)
    assert (c.grpc, c.data_url) == ("grpc://[::1]:6009", "http://[::1]:6010/tftrace/v1/")


SERVE_TWICE = """
import socket, sys, tftrace
taken = socket.socket(); taken.bind(("0.0.0.0", {taken})); taken.listen()
print("taken", tftrace.serve({taken}), flush=True)
print("bad", tftrace.serve("6009"), flush=True)
first = tftrace.serve({port})
print("first", first.port, first.data_port, first.sampler, first.identity, flush=True)
print("again", tftrace.serve({port}) is first, flush=True)
print("other", tftrace.serve({port} + 7) is first, flush=True)
print("alive", flush=True)
"""


@pytest.mark.slow
def test_serve_never_stops_the_program_and_runs_once():
    taken, port = free_port_pair(), free_port_pair()
    code = SERVE_TWICE.format(taken=taken, port=port)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=quiet_env(), timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "taken None",
        "bad None",
        f"first {port} {port + 1} running running",
        "again True",
        "other True",
        "alive",
    ]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("tftrace: warning")]
    assert len(warnings) == 3, done.stderr  # the taken port, the bad port, the other port
    assert f"port {taken}" in warnings[0]


def test_the_sample_buffer_keeps_the_last_chunks_and_cuts_a_window(tmp_path):
    out = tmp_path / "os_threads"
    out.mkdir()
    sampler = RollingSampler(out, hz=100, keep_s=1.0)  # 1 s of 1 s chunks: the last two kept
    sampler._pid = os.getpid()  # read by hand, without the sampling thread
    sampler.threads[1] = {"tid": 1, "exited": True, "first_seen_ns": 0, "last_seen_ns": 0}
    bounds = []
    for _ in range(4):  # four chunks of three readings
        bounds.append(time.monotonic_ns())
        for _ in range(3):
            assert sampler.sample_once()
        sampler._flush()
    assert sorted(p.name for p in out.glob("samples-*.npz")) == [
        "samples-00002.npz",
        "samples-00003.npz",
    ]
    assert 1 not in sampler.threads  # exited before the buffer's start: forgotten
    newest = newest_sample_ns(tmp_path)
    assert newest is not None and newest > bounds[-1]

    me = threading.get_native_id()
    lo, hi = bounds[3], newest  # the last chunk
    body, facts = window(tmp_path, lo, hi, {me})
    with np.load(io.BytesIO(body)) as data:
        columns = {c: data[c] for c in COLUMNS}
    assert set(columns["tid"].tolist()) == {me}
    assert facts["rows"] == facts["samples"] == 3
    assert columns["t_ns"].min() >= lo and columns["t_ns"].max() <= hi
    assert facts["buffer_first_ns"] < bounds[3]  # the chunk before is still kept
    _, early = window(tmp_path, 0, bounds[1], {me})  # rotated away
    assert early["rows"] == 0
    table = threads_table(tmp_path, lo, hi)
    assert table is not None and me in {t["tid"] for t in table["threads"]}
