"""Core use on real TensorFlow: the headline's CPU figure against the workload's own CPU clock,
and underused-cores on a model too small for its intra-op pool (also from a bare copy of its
trace with --cpus), checked by running its advice, not on big products that keep the cores
busy."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import NEEDS_QUIET_CORES, WORKLOADS, quiet_env, tftrace
from tftrace.analysis.analyze import analyze
from tftrace.analysis.findings.finding import Expect, Status
from tftrace.analysis.model.run import load
from tftrace.analysis.sweep.verify import last_verification, verify

pytestmark = pytest.mark.slow

CPUS = len(os.sched_getaffinity(0))


def _record(tmp_path: Path, name: str, *target: str, intra: int = CPUS) -> Path:
    run = tmp_path / name
    proc = tftrace(
        "record",
        "--no-pyspy",
        "-o",
        run,
        *target,
        env=quiet_env(TF_NUM_INTRAOP_THREADS=str(intra), TF_NUM_INTEROP_THREADS=str(CPUS)),
    )
    assert proc.returncode == 0, proc.stderr
    return run


def test_headline_cpu_is_the_kernels_cpu_time(tmp_path: Path):
    """The workload reads its own CPU clock (all its threads, from the kernel) around a span of
    eager products; the headline over that span agrees within 10 %."""
    truth = tmp_path / "truth.json"
    run_dir = _record(tmp_path, "span", str(WORKLOADS / "cpu_span.py"), str(truth))
    span = json.loads(truth.read_text())
    run = load(run_dir)
    t0, t1 = ((m - run.origin.monotonic_ns) / 1e9 for m in span["monotonic_ns"])
    use = analyze(run, window=f"{t0:.6f}:{t1:.6f}").core_use
    kernel_s = (span["cpu_ns"][1] - span["cpu_ns"][0]) / 1e9
    assert use.busy_source == "os sampler"
    assert use.busy_core_s == pytest.approx(kernel_s, rel=0.1)


@NEEDS_QUIET_CORES  # another process on the cores is demand: then the cores are not underused
@pytest.mark.skipif(CPUS < 2, reason="one CPU cannot be underused by a lack of threads")
def test_underused_cores_on_a_model_too_small_for_its_pool(tmp_path: Path):
    """A chain of small products, intra = CPUs: underused-cores fires, advises fewer intra-op
    threads, and run beside the run's own setting that is not slower beyond noise."""
    small = _record(tmp_path, "small", str(WORKLOADS / "small_ops.py"))
    run = load(small)
    found = {f.id: f for f in analyze(run).findings}
    assert "underused-cores" in found, list(found)
    advice = found["underused-cores"].setting
    assert advice is not None and advice.expect is Expect.NOT_SLOWER
    assert advice.intra is not None and advice.intra < CPUS
    checked = {f.id: f for f in verify(run, repeat=3).findings}
    check = checked["underused-cores"].verification
    assert check is not None and check.advised[0] == advice.intra, check
    # intra 1 and 2 run these ops equally fast (a sweep of 10 runs each: 1.01x), with a
    # 10-30 % spread between runs: the advice is never refuted beyond noise; a verdict that
    # noise left open ran as many times again (verify/more) and was judged over all the runs
    more = (small / "verify" / "more" / "sweep.json").is_file()
    assert check.runs == (6 if more else 3) and (small / "verify" / "sweep.json").is_file()
    if check.status is not Status.CONFIRMED:
        assert more and "within noise, but typically" in check.reason, check.reason
    again = {f.id: f for f in last_verification(run, analyze(run)).findings}
    assert again["underused-cores"].verification == check
    bare = tmp_path / "bare"
    bare.mkdir()
    (trace,) = small.glob("plugins/profile/*/*.xplane.pb")
    shutil.copy(trace, bare / trace.name)
    proc = tftrace("analyze", "--json", "--cpus", str(CPUS), bare / trace.name)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "underused-cores" in [f["id"] for f in out["findings"]]
    assert out["core_use"]["busy_source"] == "trace" and out["core_use"]["cores"] == CPUS
    assert "eigen-spin: needs the OS sampler (not in a bare trace)" in out["not_checked"]
    big = _record(tmp_path, "big", str(WORKLOADS / "eager_big_matmul.py"))
    ids = {f.id for f in analyze(load(big)).findings}
    assert "underused-cores" not in ids, ids
