"""Everything on the cores, end to end: a busy process pinned to one of the recorded
process's CPUs is named with its pid, its core-seconds match its own CPU clock over the
window, and the headline's bound leaves its share out; NumPy's OpenBLAS pool beside TF's
pools on 2 CPUs is named with its variable, and its advice is confirmed by a verification."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import NEEDS_QUIET_CORES, WORKLOADS, quiet_env, tftrace
from tftrace import analyze, load, predict
from tftrace.analysis.metrics.core_use import core_use
from tftrace.analysis.render.formatting import printable

CPUS = sorted(os.sched_getaffinity(0))


def _own_cpu_over(log: Path, lo_mono: int, hi_mono: int) -> float:
    """The burner's CPU seconds between two monotonic times, from its own clock's log."""
    rows = np.loadtxt(log, dtype=np.int64)
    t, cpu = rows[:, 0], rows[:, 1]
    return float(np.interp(hi_mono, t, cpu) - np.interp(lo_mono, t, cpu)) / 1e9


@pytest.mark.slow
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs: one shared with the other process")
def test_another_process_is_named_and_left_out_of_the_bound(tmp_path: Path):
    log, run_dir = tmp_path / "burner.log", tmp_path / "run"
    burner = subprocess.Popen(
        [sys.executable, str(WORKLOADS / "burner.py"), "--cpu", str(CPUS[-1]), "--log", str(log)]
    )
    try:
        time.sleep(0.5)  # spinning before the recording starts
        proc = tftrace(
            "record", "--no-pyspy", "-o", run_dir, WORKLOADS / "eager_big_matmul.py", "8",
            env=quiet_env(TF_NUM_INTRAOP_THREADS=str(len(CPUS))),
        )  # fmt: skip
    finally:
        burner.kill()
        burner.wait()
    assert proc.returncode == 0, proc.stderr
    run = load(run_dir)
    analysis = analyze(run, window="all")
    held = analysis.contention
    assert held is not None, run.missing
    rows = held.processes.set_index("pid")
    assert burner.pid in rows.index, held.processes
    assert rows.loc[burner.pid, "role"] == "other"
    lo, hi = (run.origin.monotonic_ns + t for t in analysis.window)
    own = _own_cpu_over(log, lo, hi)
    assert own > 0.2 * analysis.core_use.seconds  # it did take its CPU
    assert rows.loc[burner.pid, "core_s"] == pytest.approx(own, rel=0.1)

    use = analysis.core_use
    causes = use.causes.set_index("cause")["core_s"]
    assert causes["other_processes"] > 0
    alone = core_use(run, analysis.window, analysis.concurrency)  # as if nobody else ran
    assert use.max_speedup < alone.max_speedup
    assert use.held_elsewhere_core_s > 0 and use.recoverable_share < alone.recoverable_share

    found = {f.id: f for f in analysis.findings}
    assert "other-processes-take-cores" in found, [f.id for f in analysis.findings]
    assert f"pid {burner.pid}" in found["other-processes-take-cores"].message
    assert found["other-processes-take-cores"].setting is None
    text = tftrace("analyze", "--window", "all", run_dir)
    assert f"(pid {burner.pid})" in text.stdout


def _on_two_cpus() -> None:
    os.sched_setaffinity(0, CPUS[:2])


@NEEDS_QUIET_CORES
@pytest.mark.slow
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs: two pools to crowd them")
def test_a_blas_pool_beside_tf_pools_is_named_and_its_advice_confirmed(tmp_path: Path):
    """OPENBLAS_NUM_THREADS=2 beside TF's default pools (2 and 2 on the 2 CPUs the run is
    pinned to): each NumPy product, split in two, waits for the half whose thread sits behind
    one of TF's.
    The finding advises OPENBLAS_NUM_THREADS=1, confirmed by --verify; TF's pools at 1 are named
    beside it as the other fix."""
    run_dir = tmp_path / "run"
    env = quiet_env(OPENBLAS_NUM_THREADS="2")
    record = subprocess.run(
        [sys.executable, "-m", "tftrace", "record", "--no-pyspy", "-o", str(run_dir),
         str(WORKLOADS / "blas_step.py"), "--steps", "30"],
        env=env, capture_output=True, text=True, timeout=300, preexec_fn=_on_two_cpus,
    )  # fmt: skip
    assert record.returncode == 0, record.stderr
    run = load(run_dir)
    found = {f.id: f for f in analyze(run).findings}
    assert "library-pool-crowds-cores" in found, [(f.id, f.message) for f in found.values()]
    library = found["library-pool-crowds-cores"]
    assert library.setting is not None
    assert dict(library.setting.env) == {"OPENBLAS_NUM_THREADS": "1"}
    assert "openblas" in library.message.lower()
    # the prediction runs the library's pool beside the numpy_function that calls it
    guess = predict(run, intra=(2,), inter=(1, 2))
    assert any("BLAS library's pool used" in note for note in guess.notes), guess.notes
    # TF's threads waited for the cores the library's held: its variable is the one advice
    assert "tf-pools-beside-library-pool" not in found
    assert "Else one thread per TF pool" in library.action
    verify = subprocess.run(
        [sys.executable, "-m", "tftrace", "analyze", "--verify", "--verify-repeat", "5",
         "--json", str(run_dir)],
        env=env, capture_output=True, text=True, timeout=600, preexec_fn=_on_two_cpus,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr
    checked = {f["id"]: f["verification"] for f in json.loads(verify.stdout)["findings"]}
    check = checked["library-pool-crowds-cores"]
    assert check["status"] == "confirmed", check["reason"]
    assert check["advised"]["env"] == {"OPENBLAS_NUM_THREADS": "1"}
    assert check["current"]["env"] == {"OPENBLAS_NUM_THREADS": "2"}


@NEEDS_QUIET_CORES
@pytest.mark.slow
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs: two pools to crowd them")
def test_a_sweep_over_the_blas_variable_never_puts_1_behind_2(tmp_path: Path):
    """--env OPENBLAS_NUM_THREADS=1,2 on the BLAS workload at TF's pools of 2 and 2, 2 pinned
    CPUs: the one-thread library is ahead, or within noise (the ranges of its runs and 2's
    overlap), never behind. The pools are given: the default, a ladder of intra-op sizes,
    would put each variable's value in several settings."""
    out = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "tftrace", "sweep", "-o", str(out), "--json", "--repeat", "3",
         "--no-explain", "--intra", "2", "--inter", "2", "--env", "OPENBLAS_NUM_THREADS=1,2",
         str(WORKLOADS / "blas_step.py"),
         "--steps", "30"],
        env=quiet_env(), capture_output=True, text=True, timeout=600, preexec_fn=_on_two_cpus,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    by_value = {s["env"]["OPENBLAS_NUM_THREADS"]: s for s in json.loads(done.stdout)["settings"]}
    one, two = by_value["1"], by_value["2"]
    assert one["min_s"] <= two["max_s"], (one, two)  # not slower in every run than 2's slowest


def test_names_from_a_run_cannot_move_the_cursor():
    assert printable("burner\x1b[2J\nCRITICAL") == "burner\\x1b[2J\\nCRITICAL"
    assert printable("tf_Compute") == "tf_Compute"
