"""Recording from inside the code: ``tftrace.profile`` and ``tftrace.keras.ProfileCallback``
against ``tftrace record`` of the same work, on real TensorFlow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import WORKLOADS, host_lines, identity_by_tf_name, quiet_env, tftrace

pytestmark = pytest.mark.slow

EIGEN = re.compile(r"^tf_numa_-?\d+_Eigen")
POOLS = {"TF_NUM_INTRAOP_THREADS": "3", "TF_NUM_INTEROP_THREADS": "2"}


def _python(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        env=env or quiet_env(),
        cwd=cwd,
        timeout=300,
    )


def _manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def _pool_threads(run: Path) -> dict[str, list[dict]]:
    """The pools' OS threads that the trace shows a line for, by pool."""
    by_name = identity_by_tf_name(run)
    lines = {line_id for line_id, _, _ in host_lines(run)}
    eigen = [t for name, ts in by_name.items() if EIGEN.match(name) for t in ts]
    return {
        "intra_op": [t for t in eigen if t["trace_line_id"] in lines],
        "inter_op": [t for t in by_name.get("tf_Compute", []) if t["trace_line_id"] in lines],
    }


def test_a_block_recorded_in_code_loads_like_tftrace_record_of_the_same_code(tmp_path):
    in_code, launched = tmp_path / "in_code", tmp_path / "launched"
    env = quiet_env(**POOLS)
    done = _python(WORKLOADS / "in_code.py", "--in-code", in_code, env=env)
    assert done.returncode == 0, done.stderr
    assert f"tftrace: recorded {in_code}" in done.stderr
    recorded = tftrace("record", "-o", launched, WORKLOADS / "in_code.py", env=env)
    assert recorded.returncode == 0, recorded.stderr

    a, b = _manifest(in_code), _manifest(launched)
    assert a["recording"]["how"] == "profile" and a["target"]["kind"] == "code"
    assert {s["state"] for s in a["sources"].values()} == {"recorded"}
    for pool, size in (("intra_op", 3), ("inter_op", 2)):
        assert a["pools"][pool]["size"] == b["pools"][pool]["size"] == size
        # every thread of the pool, known by its TF name, on its own trace line
        assert len(_pool_threads(in_code)[pool]) == len(_pool_threads(launched)[pool]) == size
    for run in (in_code, launched):
        summary = tftrace("summary", run)
        assert summary.returncode == 0, summary.stderr
        assert "2 inter-op, 3 intra-op" in summary.stdout
        analyzed = tftrace("analyze", run)
        assert analyzed.returncode == 0, analyzed.stderr
    shown = tftrace("summary", in_code).stdout
    assert "recorded   tftrace.profile (a block of the program)" in shown
    # The block's own threads (the sampler is in the helper process) are not the user's.
    threads = json.loads((in_code / "thread_identity.json").read_text())["threads"]
    ours = {t["python_name"] for t in threads if (t["python_name"] or "").startswith("tftrace-")}
    assert ours == {"tftrace-identity"}


def test_the_keras_callback_records_exactly_its_window_of_batches(tmp_path):
    run = tmp_path / "fit"
    done = _python(WORKLOADS / "keras_window.py", run, 25, 30)  # in the second epoch
    assert done.returncode == 0, done.stderr
    assert f"FIT_DONE path={run}" in done.stdout
    m = _manifest(run)
    assert m["recording"] == {
        "how": "keras",
        "steps": [25, 30],
        "steps_counted": "model.fit batches, across epochs",
        "recorded_steps": [25, 30],
    }
    assert m["sources"]["tf_profiler"]["state"] == "recorded"
    summary = tftrace("summary", run).stdout
    assert "recorded   tftrace.keras.ProfileCallback, batches 25:30" in summary

    import tftrace as api

    steps = api.analyze(api.load(run)).steps
    assert steps.found == 5 and steps.source == "annotation train"


def test_a_keras_window_that_never_arrives_says_so_and_training_goes_on(tmp_path):
    run = tmp_path / "never"
    done = _python(WORKLOADS / "keras_window.py", run, 100, 120)  # 40 batches in all
    assert done.returncode == 0, done.stderr
    assert "FIT_DONE path=None" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith("tftrace:")]
    assert warnings == [
        "tftrace: warning: ProfileCallback: training ended after 40 batches, before batch 100: "
        "nothing was recorded"
    ]
    assert not run.exists()


def test_bad_use_prints_one_line_each_and_the_code_goes_on(tmp_path):
    done = _python(WORKLOADS / "in_code_bad_use.py", tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "NESTED outer=complete inner=None" in out
    assert "UNWRITABLE path=None" in out
    assert "BUSY tf_profiler=failed" in out
    assert "RAISED the user's own error status=ValueError" in out
    warnings = [line for line in done.stderr.splitlines() if "tftrace: warning" in line]
    assert len(warnings) == 3, done.stderr
    assert "a recording is already running" in warnings[0]
    assert "cannot create run directory" in warnings[1]
    assert "the TF profiler did not start" in warnings[2] and "Another profiler" in warnings[2]
    assert "Traceback" not in done.stderr
    busy = _manifest(tmp_path / "busy")
    assert busy["sources"]["os_sampler"]["state"] == "recorded"  # the rest still recorded


def test_a_block_recorded_in_a_jupyter_kernel(tmp_path):
    jupyter_client = pytest.importorskip("jupyter_client")
    manager, client = jupyter_client.manager.start_new_kernel(
        kernel_name="python3", cwd=str(tmp_path), env=quiet_env()
    )
    try:
        code = (
            "import tensorflow as tf, tftrace\n"
            "x = tf.random.normal((200, 200))\n"
            "with tftrace.profile('nb') as p:\n"
            "    for _ in range(10): tf.matmul(x, x)\n"
            "print('STATUS', p.manifest['status'])\n"
        )
        reply = client.execute_interactive(code, timeout=240, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    m = _manifest(tmp_path / "nb")
    assert m["status"] == "complete"
    assert m["target"] == {"kind": "code", "value": "<interactive>", "args": []}
    assert {s["state"] for s in m["sources"].values()} == {"recorded"}


def test_a_block_inside_a_tftrace_record_run_is_part_of_that_run(tmp_path):
    launched, block = tmp_path / "launched", tmp_path / "block"
    done = tftrace("record", "-o", launched, WORKLOADS / "in_code.py", "--in-code", block)
    assert done.returncode == 0, done.stderr
    assert f"tftrace: warning: tftrace record ({launched.resolve()}) records this program" in (
        done.stderr
    )
    assert not block.exists()
    assert _manifest(launched)["sources"]["tf_profiler"]["state"] == "recorded"
