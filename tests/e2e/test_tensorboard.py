"""A run directory is a TensorBoard log directory: the profile plugin lists and serves the trace."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, free_port, http_get

pytestmark = [pytest.mark.slow, pytest.mark.side_by_side]  # times nothing


def test_tensorboard_profile_plugin_reads_the_run(record):
    done = record(
        EXAMPLES / "eager_matmul.py", "--size", "300", "--repeat", "2", options=("--no-pyspy",)
    )
    assert done.returncode == 0, done.stderr
    port = free_port()
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
                runs = json.loads(http_get(f"{base}/runs"))
            except OSError:
                time.sleep(0.5)
        (session,) = [p.name for p in done.run.glob("plugins/profile/*")]
        assert any(session in run for run in runs), runs
        tools = json.loads(http_get(f"{base}/run_tools?run={runs[0]}"))
        assert "trace_viewer@" in tools or "trace_viewer" in tools, tools
    finally:
        server.terminate()
        server.wait(timeout=30)
