"""A multi-worker TensorFlow job on localhost, each worker under ``tftrace record -o
DIR/{task}``: what the multi-host tests launch."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import WORKLOADS, quiet_env

JOB = WORKLOADS / "multi_worker.py"
TIMEOUT_S = 300


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def record_job(
    out: Path, *job_args: str, workers: int = 2, prefix: dict[int, list[str]] | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """Run the job with one ``tftrace record -o out/{task}`` per worker, side by side; the
    finished processes, by worker index. ``prefix``: a command put before a worker's (e.g.
    ``taskset -c 1``)."""
    cluster = {"worker": [f"localhost:{p}" for p in free_ports(workers)]}
    procs = []
    for i in range(workers):
        config = {"cluster": cluster, "task": {"type": "worker", "index": i}}
        env = quiet_env(TF_CONFIG=json.dumps(config))
        argv = [sys.executable, "-m", "tftrace", "record", "--no-pyspy", "-o", f"{out}/{{task}}"]
        procs.append(
            subprocess.Popen(
                [*(prefix or {}).get(i, []), *argv, str(JOB), *job_args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    done = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=TIMEOUT_S)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return done


def record_clean_job(
    out: Path, *job_args: str, prefix: dict[int, list[str]] | None = None, tries: int = 3
) -> list[subprocess.CompletedProcess[str]]:
    """``record_job`` with every worker ending normally. A worker still dies at times in
    TensorFlow's teardown after its last step (SIGSEGV, SIGBUS or abort, about 1 run in 4 on
    the test machine, more under load; docs/many-hosts.md), after its trace is written: up
    to ``tries`` tries. ``test_a_worker_that_dies`` is where a worker's death is tested."""
    for _ in range(tries):
        shutil.rmtree(out, ignore_errors=True)
        done = record_job(out, *job_args, prefix=prefix)
        if all(p.returncode == 0 for p in done):
            return done
    pytest.fail(f"the job failed {tries} times: {[p.stderr[-1500:] for p in done]}")
