"""A run directory is a TensorBoard log directory: the profile plugin lists and serves the trace."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import EXAMPLES

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return bytes(body)


def test_tensorboard_profile_plugin_reads_the_run(record):
    done = record(
        EXAMPLES / "eager_matmul.py", "--size", "300", "--repeat", "2", options=("--no-pyspy",)
    )
    assert done.returncode == 0, done.stderr
    port = _free_port()
    tb = Path(sys.executable).with_name("tensorboard")
    server = subprocess.Popen(
        [tb, "--logdir", str(done.run), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/data/plugin/profile"
    try:
        runs: list[str] = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not runs:
            try:
                runs = json.loads(_get(f"{base}/runs"))
            except OSError:
                time.sleep(0.5)
        (session,) = [p.name for p in done.run.glob("plugins/profile/*")]
        assert any(session in run for run in runs), runs
        tools = json.loads(_get(f"{base}/run_tools?run={runs[0]}"))
        assert "trace_viewer@" in tools or "trace_viewer" in tools, tools
    finally:
        server.terminate()
        server.wait(timeout=30)
