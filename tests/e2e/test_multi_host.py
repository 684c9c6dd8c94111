"""Many hosts: the cross-host view on hand-built host summaries (matched steps, collective
wait, the straggler and its cause), the directory layout, then known answers from a real
2-worker MultiWorkerMirroredStrategy job on localhost, each worker under
``tftrace record -o DIR/{task}``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from multi_host import record_clean_job, record_job

import tftrace
from conftest import NEEDS_QUIET_CORES, SAMPLE_RUN, WORKLOADS, quiet_env
from conftest import tftrace as run_tftrace
from tftrace.analysis.cluster import NotAClusterDir, analyze_cluster, is_cluster_dir
from tftrace.analysis.cluster.analyze import cross_host
from tftrace.analysis.cluster.host import STEP_COLUMNS, HostSummary
from tftrace.analysis.cluster.layout import find_hosts
from tftrace.tracer.cluster_task import TaskError, expand_task, task_of

# --- the cross-host view on hand-built hosts ------------------------------------------------


def _host(
    name: str, own_ms: float, collective_ms: float, between_ms: float = 0.1, n: int = 10, **kw
) -> HostSummary:
    """A host whose steps last own + collective ms, ``between_ms`` of it between calls."""
    period = own_ms + collective_ms
    start = np.arange(n) * period * 1e6
    steps = pd.DataFrame(
        {
            "step": np.arange(2, n + 2),
            "start_wall_ns": start.astype(np.int64),
            "end_wall_ns": (start + (period - between_ms) * 1e6).astype(np.int64),
            "call_ms": np.full(n, period - between_ms),
            "period_ms": np.full(n, period),
            "collective_ms": np.full(n, collective_ms),
        },
        columns=list(STEP_COLUMNS),
    )
    defaults = {"hostname": "h", "usable_cpus": 8, "pool_sizes": {"inter_op": 8, "intra_op": 8}}
    return HostSummary(name, f"/runs/{name}", steps=steps, **{**defaults, **kw})


def test_the_waits_match_the_stragglers_lead():
    # worker-1 spends 60 ms more of its own per step; worker-0 waits that in the all-reduce
    hosts = [_host("worker-0", 10, 63), _host("worker-1", 70, 3, between_ms=60)]
    c = cross_host(Path("/runs"), hosts, ())
    w = c.workers.set_index("host")
    assert w.loc["worker-0", "wait_ms"] == pytest.approx(60)
    assert w.loc["worker-1", "wait_ms"] == 0
    assert c.straggler is not None and c.straggler["host"] == "worker-1"
    assert c.straggler["lead_ms"] == pytest.approx(60)
    assert c.straggler["others_wait_ms"] == pytest.approx(60)
    f = c.findings[0]
    assert f.id == "straggler" and "worker-1 is the straggler" in f.message
    assert "Python between steps" in f.message  # 60 ms between its calls


@pytest.mark.parametrize(
    ("kw", "cause"),
    [
        ({"usable_cpus": 4}, "may use 4 CPUs, the others 8"),
        ({"pool_sizes": {"inter_op": 8, "intra_op": 2}}, "intra_op pool has 2 threads"),
        (
            {"cpu": pd.DataFrame({"pool": ["inter-op"], "wait_s": [0.5]})},
            "waited 50.0 ms per step for a CPU",
        ),
        ({}, "its step's own work takes"),
    ],
)
def test_the_stragglers_cause_is_found_on_its_host(kw: dict, cause: str):
    quiet = {"cpu": pd.DataFrame({"pool": ["inter-op"], "wait_s": [0.0]})}
    hosts = [
        _host("worker-0", 10, 63, **quiet),
        _host("worker-1", 10, 63, **quiet),
        _host("worker-2", 70, 3, **{**quiet, **kw}),
    ]
    c = cross_host(Path("/runs"), hosts, ())
    assert c.straggler is not None and c.straggler["host"] == "worker-2"
    assert cause in c.findings[0].message, c.findings[0].message


def test_equal_hosts_have_no_straggler():
    c = cross_host(Path("/runs"), [_host("worker-0", 10, 5), _host("worker-1", 10.2, 4.8)], ())
    assert c.straggler is None and not c.findings


def test_a_host_without_data_is_named(tmp_path: Path):
    lost = HostSummary(
        "worker-1", "/runs/worker-1", status="crashed", returncode=3, error="no trace"
    )
    c = cross_host(Path("/runs"), [_host("worker-0", 10, 5), lost], ("worker-2",))
    assert c.lost == ("worker-2", "worker-1")
    ids = {f.id: f for f in c.findings}
    assert "worker-2 is missing" in ids["host-missing"].message
    assert "died" in ids["host-died"].message and "kept" in ids["host-died"].message
    assert "missing: worker-2, worker-1" in str(c)
    json.dumps(c.to_json())


# --- the directory and the task name --------------------------------------------------------


def _config(index: int, workers: int = 3) -> dict[str, str]:
    cluster = {"worker": [f"localhost:{9000 + i}" for i in range(workers)]}
    return {
        "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
    }


def test_task_names_come_from_tf_config():
    assert expand_task("runs/{task}", _config(1)) == "runs/worker-1"
    assert expand_task("runs/plain", {}) == "runs/plain"
    with pytest.raises(TaskError, match="needs TF_CONFIG"):
        expand_task("runs/{task}", {})
    with pytest.raises(TaskError, match="no task type"):
        task_of({"TF_CONFIG": '{"cluster": {}}'})


def test_the_layout_names_hosts_by_task_and_the_tasks_missing(tmp_path: Path):
    for i in (1, 0):  # worker-2 of the spec was never recorded
        host = tmp_path / f"dir{i}"
        shutil.copytree(SAMPLE_RUN, host)
        data = json.loads((host / "manifest.json").read_text())
        data["cluster"] = task_of(_config(i))
        (host / "manifest.json").write_text(json.dumps(data))
    assert is_cluster_dir(tmp_path) and not is_cluster_dir(tmp_path / "dir0")
    layout = find_hosts(tmp_path)
    assert [h.name for h in layout.hosts] == ["worker-0", "worker-1"]
    assert layout.missing == ("worker-2",)
    # the sample run's 3 steady steps, analysed in threads here (any executor will do)
    with ThreadPoolExecutor(2) as pool:
        c = analyze_cluster(tmp_path, executor=pool)
    assert [h.name for h in c.hosts] == ["worker-0", "worker-1"] and c.lost == ("worker-2",)
    assert c.workers["steps"].tolist() == [3, 3]
    with pytest.raises(NotAClusterDir, match="holds no host's run directory"):
        find_hosts(tmp_path / "dir0" / "plugins")


@pytest.mark.slow
def test_hosts_analysed_on_a_local_dask_cluster(tmp_path: Path):
    distributed = pytest.importorskip("distributed")
    for i in (0, 1):
        shutil.copytree(SAMPLE_RUN, tmp_path / f"worker-{i}")
    pooled = analyze_cluster(tmp_path)  # the default process pool
    with (
        distributed.LocalCluster(n_workers=2, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = analyze_cluster(tmp_path, executor=client.get_executor())
        ran_on = client.run(lambda: "tftrace.analysis.cluster.host" in __import__("sys").modules)
    assert any(ran_on.values())  # the hosts were analysed in Dask's worker processes
    pd.testing.assert_frame_equal(on_dask.workers, pooled.workers)
    assert [h.name for h in on_dask.hosts] == ["worker-0", "worker-1"]
    out = run_tftrace("analyze", tmp_path, "--dask", "local", "--json")
    assert out.returncode == 0, out.stderr
    assert [h["name"] for h in json.loads(out.stdout)["hosts"]] == ["worker-0", "worker-1"]


def test_the_command_refuses_in_one_line(tmp_path: Path):
    script = WORKLOADS / "diff_steps.py"
    done = run_tftrace("record", "-o", tmp_path / "{task}", script, env=quiet_env(TF_CONFIG=""))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "{task} needs TF_CONFIG" in done.stderr.strip().splitlines()[-1]


# --- a real job on localhost -----------------------------------------------------------------

DELAY_MS = 60.0


def _assert_steps_line_up(c) -> None:
    """The same steps matched on both hosts: a collective releases the workers together, so
    the ends of a step lie far closer than a period (steps numbered one off would be a
    period apart; a worker on a busy core ends its step a few ms late)."""
    period = float(c.workers["period_ms"].median())
    assert c.clocks["step_end_gap_ms"].abs().max() < 0.5 * period, (c.clocks, period)


@pytest.mark.slow
@NEEDS_QUIET_CORES
def test_a_two_worker_job(tmp_path: Path):
    done = record_clean_job(tmp_path, "--steps", "12")
    assert [d.returncode for d in done] == [0, 0], [d.stderr[-2000:] for d in done]
    c = analyze_cluster(tmp_path)
    assert [h.name for h in c.hosts] == ["worker-0", "worker-1"] and not c.lost
    assert c.workers["steps"].tolist() == [12, 12]  # the steady steps, matched
    for h in c.hosts:
        assert h.collective_ops >= 12, h  # an all-reduce each step, found on both hosts
        assert (h.steps["collective_ms"] > 0).all()
        assert h.pool_sizes["inter_op"] is not None
    assert c.clocks["same_clock"].all()  # one machine: one clock
    _assert_steps_line_up(c)
    assert c.hosts[0].steps["step"].tolist() == c.hosts[1].steps["step"].tolist()


# TF's profiler stop itself crashes the delayed worker at its end in about 1 run of 6 (with
# TF's profiler alone too; docs/many-hosts.md): record_clean_job records the job again.
@pytest.mark.slow
@NEEDS_QUIET_CORES
def test_a_straggler_by_construction(tmp_path: Path):
    done = record_clean_job(
        tmp_path, "--steps", "12", "--delay-task", "1", "--delay-ms", str(DELAY_MS)
    )
    assert [d.returncode for d in done] == [0, 0], [d.stderr[-2000:] for d in done]
    out = run_tftrace("analyze", tmp_path, "--json")
    assert out.returncode == 0, out.stderr
    c = json.loads(out.stdout)
    straggler = next(f for f in c["findings"] if f["id"] == "straggler")
    assert straggler["evidence"]["host"] == "worker-1", straggler
    assert "Python between steps" in straggler["message"]  # it sleeps between its calls
    wait = {w["host"]: w["wait_ms"] for w in c["workers"]}
    assert wait["worker-0"] == pytest.approx(DELAY_MS, rel=0.2), c["workers"]
    assert wait["worker-1"] < 0.2 * DELAY_MS


@pytest.mark.slow
@NEEDS_QUIET_CORES
@pytest.mark.skipif(
    shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2,
    reason="needs taskset, 2 CPUs",
)
def test_a_worker_sharing_its_core_with_another_process(tmp_path: Path):
    # each worker on a core of its own, and two busy loops on worker-1's core: it gets a third
    # of the core, and its threads wait in the run queue for most of its step
    cpus = sorted(os.sched_getaffinity(0))[:2]
    pin = {i: ["taskset", "-c", str(cpu)] for i, cpu in enumerate(cpus)}
    burners = [
        subprocess.Popen([*pin[1], sys.executable, "-c", "while True: pass"]) for _ in range(2)
    ]
    try:
        done = record_clean_job(tmp_path, "--steps", "20", prefix=pin)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert [d.returncode for d in done] == [0, 0], [d.stderr[-2000:] for d in done]
    c = analyze_cluster(tmp_path)
    assert c.workers["steps"].tolist() == [20, 20]  # the same steps on both, matched
    _assert_steps_line_up(c)
    assert c.straggler is not None and c.straggler["host"] == "worker-1", c.workers
    assert "another process shares its cores" in c.findings[0].message, c.findings[0].message


@pytest.mark.slow
def test_a_worker_that_dies(tmp_path: Path):
    done = record_job(
        tmp_path, "--steps", "30", "--delay-task", "1", "--die-after", "8", "--timeout-s", "5"
    )
    assert done[1].returncode != 0  # worker-1 exited mid-run, before flushing its trace
    c = analyze_cluster(tmp_path)
    assert c.lost == ("worker-1",)
    survivor = c.host("worker-0")
    assert survivor.error is None and len(survivor.steps) >= 5  # its steps until then
    died = next(f for f in c.findings if f.evidence.get("host") == "worker-1")
    assert died.id == "host-died" and "worker-1" in died.message
    text = run_tftrace("analyze", tmp_path)
    assert text.returncode == 0 and "missing: worker-1" in text.stdout
    assert tftrace.load(tmp_path / "worker-0").events.size  # the survivor loads alone too
