"""Each finding on a real workload that triggers it, and on one that must not.

Recordings are shared between rules (one fresh process per configuration).
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from conftest import EXAMPLES, NEEDS_QUIET_CORES, SAMPLE_RUN, WORKLOADS, quiet_env, tftrace_command
from tftrace.analysis.analyze import measure as analyze
from tftrace.analysis.findings import Finding, Severity, diagnose
from tftrace.analysis.findings.pool_rules import eigen_spin
from tftrace.analysis.findings.settings_rules import pinned_sizes_vs_cpus
from tftrace.analysis.model.run import load
from tftrace.tracer.manifest_reader import Manifest

pytestmark = pytest.mark.slow

# name -> (workload and its arguments, TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS)
RECORDINGS: dict[str, tuple[tuple[str, ...], int | None, int | None]] = {
    "big-intra1": (("eager_big_matmul.py",), 1, 2),
    "big-intra2": (("eager_big_matmul.py",), 2, 2),
    "big-intra4": (("eager_big_matmul.py",), 4, 1),
    "branches-inter1": (("two_big_branches.py",), 1, 1),
    "branches-inter2": (("two_big_branches.py",), 1, 2),
    "chains-intra2-inter2": (("branches.py",), 2, 2),
    "small-ops": (("small_ops.py",), 2, 2),
    "py-function": (("py_function_loop.py",), 1, 1),
    "py-function-intra2": (("py_function_loop.py",), 2, 2),
    "data-sequential": (("data_sequential.py",), 2, 2),
    "data-parallel": (("data_parallel_heavy_step.py",), 2, 2),
    "data-heavy-map": (("data_heavy_map.py",), 2, 2),
    "map-autotune": (("data_map_parallel.py", "autotune"), 2, 2),
    "late-setter": (("late_setter.py",), 2, 2),
    "own-settings": (("own_settings.py",), None, None),
    "small-elementwise": (("eager_small_elementwise.py",), 2, 2),
    "large-elementwise": (("eager_small_elementwise.py", "4000000", "75"), 2, 2),
}

# rule id -> (a recording that must trigger it, one that must not)
CASES = {
    "idle-cores-while-work-waited": ("branches-inter1", "branches-inter2"),
    "ops-too-small-to-split": ("small-ops", "big-intra2"),
    "intra-pool-oversubscribed": ("big-intra4", "big-intra2"),
    "ops-run-inline": ("big-intra1", "big-intra2"),
    "python-bound": ("py-function", "big-intra2"),
    "input-pipeline-starves-step": ("data-sequential", "data-parallel"),
    "intra-op-pinned-vs-cpus": ("big-intra4", "big-intra2"),
    "threading-set-too-late": ("late-setter", "own-settings"),
    "eigen-spin": ("small-elementwise", "large-elementwise"),
    # a map of heavy elements on tf.data's threads beside heavy steps; a light map
    "tf-data-competes-with-step": ("data-heavy-map", "data-parallel"),
}


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory) -> dict[str, list[Finding]]:
    """The findings of every recording, recorded once for the whole module."""
    import subprocess

    out = {}
    for name, (target, intra, inter) in RECORDINGS.items():
        env = quiet_env(
            **({"TF_NUM_INTRAOP_THREADS": str(intra)} if intra else {}),
            **({"TF_NUM_INTEROP_THREADS": str(inter)} if inter else {}),
        )
        run_dir = tmp_path_factory.mktemp(name) / "run"
        script = WORKLOADS / target[0] if (WORKLOADS / target[0]).exists() else EXAMPLES / target[0]
        proc = subprocess.run(
            tftrace_command("record", "--no-pyspy", "-o", run_dir, script, *target[1:]),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        run = load(run_dir)
        out[name] = diagnose(run, analyze(run))
    return out


@pytest.fixture(scope="module")
def findings(diagnosed) -> dict[str, list[str]]:
    """Finding ids of every recording."""
    return {name: [f.id for f in found] for name, found in diagnosed.items()}


@pytest.mark.parametrize("rule", CASES)
def test_rule_triggers_on_its_workload_only(findings, rule: str):
    triggers, quiet = CASES[rule]
    if triggers is not None:
        assert rule in findings[triggers], findings[triggers]
    assert rule not in findings[quiet], findings[quiet]


def test_python_ops_are_python_bound_not_too_small_to_split(findings):
    """A tf.py_function holds the GIL: no Eigen split was possible, so that rule stays quiet."""
    assert "python-bound" in findings["py-function-intra2"]
    assert "ops-too-small-to-split" not in findings["py-function-intra2"]


def test_two_chains_side_by_side_keep_both_cores_busy(findings):
    """Two independent matmul chains at inter 2 / intra 2 on 2 cores: each op gets about one
    Eigen worker because the other chain holds the other core. No core was free, so the ops
    were not too small to split (the rule once said "the ops taking 150% of the time")."""
    assert "ops-too-small-to-split" not in findings["chains-intra2-inter2"]


def test_input_pipeline_says_how_parallel_its_map_ran(diagnosed):
    """A map with num_parallel_calls=AUTOTUNE is measured running elements side by side; a map
    without num_parallel_calls is measured running one at a time."""
    by_id = {
        name: {f.id: f for f in diagnosed[name]} for name in ("map-autotune", "data-sequential")
    }
    parallel = by_id["map-autotune"]["input-pipeline-starves-step"]
    assert "its map runs in parallel" in parallel.message, parallel.message
    assert "one element at a time" not in parallel.message
    assert parallel.evidence["tf_data_parallelism"] >= 1.3
    sequential = by_id["data-sequential"]["input-pipeline-starves-step"]
    assert "its map runs one element at a time" in sequential.message, sequential.message
    assert sequential.evidence["tf_data_parallelism"] < 1.3


def test_causes_come_before_their_consequences(diagnosed):
    """Small ops in an input-starved step follow from the pipeline; a consequence names its
    causes and comes after them, in every recording."""
    for name, found in diagnosed.items():
        ids = [f.id for f in found]
        for k, f in enumerate(found):
            assert set(f.consequence_of) <= set(ids[:k]), (name, ids)
    small = {f.id: f for f in diagnosed["data-sequential"]}.get("ops-too-small-to-split")
    assert small is None or "input-pipeline-starves-step" in small.consequence_of


def test_pasted_classic_experiment_recorded_as_written(tmp_path: Path):
    """The blog script's setter, called after ops ran, raises inside the script: the recording
    keeps its exit code, its traceback as python shows it, and the trace; the findings say
    first that its time is Python and that the setter came too late."""
    run_dir = tmp_path / "run"
    script = WORKLOADS / "classic_threads_experiment.py"
    proc = subprocess.run(
        tftrace_command("record", "--no-pyspy", "-o", run_dir, script),
        env=quiet_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert "as it comes:" in proc.stdout and "intra_op_parallelism_threads=" not in proc.stdout
    traceback = proc.stderr.split("Traceback (most recent call last):")[1]
    assert "classic_threads_experiment.py" in traceback
    assert "RuntimeError: Intra op parallelism cannot be modified" in traceback
    assert "runpy" not in traceback and "setter_calls.py" not in traceback  # tftrace's frames
    run = load(run_dir)
    assert run.manifest.workload.exit_code == 1
    (call,) = run.manifest.workload.setter_calls
    assert (call.setter, call.value) == ("set_intra_op_parallelism_threads", 1) and call.error
    found = [f.id for f in diagnose(run, analyze(run))]
    assert set(found[:2]) == {"python-bound", "threading-set-too-late"}, found


def test_findings_are_ordered_by_severity():
    """Causes first (findings that are no other's consequence), then most severe first."""
    run = load(SAMPLE_RUN)
    found = diagnose(run, analyze(run, window="all"))
    order = [(bool(f.consequence_of), list(Severity).index(f.severity)) for f in found]
    assert order == sorted(order)
    assert all(f.action and f.message and f.evidence for f in found)


def _with_cpu(analysis, cpu_s: float, outside_s: float, busy_s: float = 0.5):
    cpu = pd.DataFrame(
        [
            {
                "pool": "intra-op",
                "threads": 2,
                "cpu_s": cpu_s,
                "busy_s": busy_s,
                "cpu_per_busy": cpu_s / busy_s,
                "wait_s": 0.0,
                "outside_s": outside_s,
            }
        ]
    )
    return replace(analysis, cpu=cpu)


def test_eigen_spin_rule_on_kernel_figures():
    """The spin rule's thresholds, on CPU figures set by hand: spin is CPU outside every
    closure, whatever the workers' CPU over their busy time (which run-queue wait lowers)."""
    run = load(SAMPLE_RUN)
    analysis = analyze(run)
    (spin,) = eigen_spin(run, _with_cpu(analysis, cpu_s=1.0, outside_s=0.2, busy_s=2.0))
    assert spin.id == "eigen-spin"
    assert spin.evidence == {"spin_s": 0.2, "cpu_s": 1.0, "spin_share": 0.2, "busy_s": 2.0}
    assert "0.20 s of CPU (20% of their 1.00 s)" in spin.message
    assert eigen_spin(run, _with_cpu(analysis, cpu_s=2.0, outside_s=0.07)) == []  # 3.5 % < 4 %
    assert eigen_spin(run, _with_cpu(analysis, cpu_s=0.1, outside_s=0.04)) == []  # under 50 ms
    assert eigen_spin(run, _with_cpu(analysis, cpu_s=1.0, outside_s=float("nan"))) == []


def test_default_sizes_above_a_cgroup_quota():
    run = load(SAMPLE_RUN)
    recorded = run.manifest.to_json()
    manifest = {
        **recorded,
        "host": {**recorded["host"], "cpu_affinity": [0, 1, 2, 3], "cpu_quota": 1.5},
        "pools": {
            "intra_op": {"size": 4, "source": "default (schedulable CPUs)"},
            "inter_op": {"size": 4, "source": "default (schedulable CPUs)"},
        },
    }
    found = pinned_sizes_vs_cpus(replace(run, manifest=Manifest.from_json(manifest)), analyze(run))
    assert {f.id for f in found} == {"intra-op-exceeds-cpu-quota", "inter-op-exceeds-cpu-quota"}


CPU_CGROUP = Path("/sys/fs/cgroup/cpu")  # cgroup v1's cpu controller


def _can_make_cpu_cgroup() -> bool:
    probe = CPU_CGROUP / f"tftrace-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return False
    return (CPU_CGROUP / "cpu.cfs_quota_us").exists()


@NEEDS_QUIET_CORES
@pytest.mark.skipif(
    not _can_make_cpu_cgroup(), reason="needs a writable cgroup-v1 cpu controller (root)"
)
def test_default_sizes_above_a_real_cgroup_quota(tmp_path: Path):
    """A real quota, half a CPU below the CPUs the process may be scheduled on."""
    quota = len(os.sched_getaffinity(0)) - 0.5
    group = CPU_CGROUP / f"tftrace-test-{os.getpid()}"
    group.mkdir()
    run_dir = tmp_path / "run"
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text(str(int(quota * 100_000)))
        record = tftrace_command(
            "record", "--no-pyspy", "-o", run_dir, WORKLOADS / "eager_big_matmul.py"
        )
        proc = subprocess.run(
            ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *record],
            env=quiet_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        ended_ns = time.monotonic_ns()
        throttled = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
    finally:
        group.rmdir()
    assert proc.returncode == 0, proc.stderr
    assert int(throttled["nr_throttled"]) > 0  # the kernel did hold the run to its quota
    run = load(run_dir)
    assert run.manifest.host.cpu_quota == quota
    # The machine readings are cpu.stat's own counts (the group was new: they start at 0). After
    # the last reading the group can count at most one period per 100 ms until the process was
    # gone, so the file's final counts lie that close above the last reading's.
    readings = run.machine.cgroup
    assert run.machine.cgroup_info.get("quota_cpus") == quota
    last = readings.iloc[-1]
    after_last_s = (ended_ns - (int(last["t_ns"]) + (run.origin.monotonic_ns or 0))) / 1e9
    assert 0 < after_last_s < 60, after_last_s
    slack = math.ceil(after_last_s / 0.1) + 1
    assert last["periods"] > slack  # the readings saw the run, not only its start
    for column, key in (("periods", "nr_periods"), ("throttled_periods", "nr_throttled")):
        final = int(throttled[key])
        assert final - slack <= last[column] <= final, (column, final, slack)
    analysis = analyze(run)
    held = analysis.contention
    assert held is not None and held.throttled_periods > 0 and held.quota == quota
    found = {f.id: f for f in diagnose(run, analysis)}
    assert {"intra-op-exceeds-cpu-quota", "inter-op-exceeds-cpu-quota"} <= set(found)
    assert "cpu-quota-throttles" in found, list(found)
    fit = max(1, int(quota))
    setting = found["cpu-quota-throttles"].setting
    assert setting is not None and (setting.intra, setting.inter) == (fit, fit)


def _finding_ids(tmp_path: Path, script: str, intra: int) -> set[str]:
    run_dir = tmp_path / f"intra{intra}"
    proc = subprocess.run(
        tftrace_command("record", "--no-pyspy", "-o", run_dir, WORKLOADS / script),
        env=quiet_env(TF_NUM_INTRAOP_THREADS=str(intra)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    run = load(run_dir)
    return {f.id for f in diagnose(run, analyze(run))}


@pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 3, reason="needs >= 3 CPUs: an intra pool of 2..CPUs-1"
)
def test_intra_pool_smaller_than_cores(tmp_path: Path):
    cpus = len(os.sched_getaffinity(0))
    assert "intra-pool-smaller-than-cores" in _finding_ids(tmp_path, "eager_big_matmul.py", 2)
    assert "intra-pool-smaller-than-cores" not in _finding_ids(
        tmp_path, "eager_big_matmul.py", cpus
    )
