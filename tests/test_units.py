"""Unit tests on small pure functions: command-line splitting, /proc parsing, pool rules."""

from __future__ import annotations

import os

import pytest

from tftrace.analysis.model.pools import Pool, pool_of_identity, pool_of_tf_name
from tftrace.cli import build_parser
from tftrace.target import split_target
from tftrace.tracer.environment import relevant_env, resolve_pool_size
from tftrace.tracer.manifest import pools
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.os_sampler import parse_stat


@pytest.fixture(scope="module")
def record_parser():
    return build_parser()[1]["record"]


@pytest.mark.parametrize(
    ("argv", "own", "target"),
    [
        (["train.py", "--lr", "3"], [], ["train.py", "--lr", "3"]),
        (
            ["-o", "out", "--name", "x", "t.py", "-o", "y"],
            ["-o", "out", "--name", "x"],
            ["t.py", "-o", "y"],
        ),
        (["--no-pyspy", "-m", "pkg.mod", "--flag"], ["--no-pyspy"], ["-m", "pkg.mod", "--flag"]),
        (["--delay=2", "t.py"], ["--delay=2"], ["t.py"]),
        (["--sample-hz", "50", "--", "-weird.py"], ["--sample-hz", "50"], ["-weird.py"]),
        (["--no-sampler"], ["--no-sampler"], []),
    ],
)
def test_split_target(record_parser, argv, own, target):
    assert split_target(record_parser, argv) == (own, target)


def test_parse_stat_with_awkward_thread_name():
    # A name may hold spaces and parentheses; fields are counted after the last ')'.
    fields = ["S"] + [str(i) for i in range(4, 53)]
    fields[14 - 3] = "250"  # utime
    fields[15 - 3] = "17"  # stime
    fields[22 - 3] = "9999"  # starttime
    fields[39 - 3] = "1"  # processor
    line = "1234 (my (odd) name) " + " ".join(fields) + "\n"
    assert parse_stat(line) == ("my (odd) name", "S", 250, 17, 9999, 1)


def test_parse_stat_on_a_real_thread():
    with open(f"/proc/self/task/{os.getpid()}/stat") as f:
        comm, state, utime, stime, starttime, cpu = parse_stat(f.read())
    with open(f"/proc/self/task/{os.getpid()}/comm") as f:
        assert comm == f.read().strip()
    assert state == "R"  # reading its own stat, it is running
    assert utime + stime > 0 and starttime > 0 and cpu in os.sched_getaffinity(0)


@pytest.mark.parametrize(
    ("configured", "env", "cpus", "expected"),
    [
        (4, "2", 8, {"size": 4, "source": "config"}),
        (0, "2", 8, {"size": 2, "source": "env"}),
        (0, None, 8, {"size": 8, "source": "default (schedulable CPUs)"}),
        (0, "0", 8, {"size": 8, "source": "default (schedulable CPUs)"}),
        (0, "lots", 8, {"size": 8, "source": "default (schedulable CPUs)"}),
    ],
)
def test_resolve_pool_size(configured, env, cpus, expected):
    assert resolve_pool_size(configured, env, cpus) == expected


def test_manifest_pools_use_the_workload_report():
    report = {"configured_pools": {"inter_op": 0, "intra_op": 3}, "cpu_affinity": [0, 1, 2, 3]}
    out = pools(report, {"TF_NUM_INTEROP_THREADS": "2"}, affinity=[0])
    assert out["intra_op"]["size"] == 3 and out["intra_op"]["source"] == "config"
    assert out["inter_op"]["size"] == 2 and out["inter_op"]["source"] == "env"
    assert pools(None, {}, affinity=[0, 1])["inter_op"]["size"] == 2


def test_manifest_reads_what_is_there_and_defaults_the_rest():
    empty = Manifest.empty()  # a bare trace's
    assert not empty.exists and empty.usable_cpus is None and empty.pools == {}
    assert empty.pool("intra_op").size is None and empty.source("pyspy").state is None
    partial = Manifest.from_json(
        {
            "kind": "tftrace-run",
            "host": {"cpu_count": 8, "cpu_quota": None},
            "pools": {"intra_op": {"size": 4, "source": "env"}},
            "sources": {"pyspy": {"state": "failed", "reason": "no permission", "rate": 20}},
            "workload": {"setter_calls": [{"setter": "s", "value": 2, "error": "late"}]},
            "clock": {"start": {"wall_ns": 5}},  # no monotonic reading: no anchor
        }
    )
    assert partial.exists and partial.usable_cpus == 8  # no affinity: the machine's count
    assert partial.pool("intra_op").size == 4 and partial.pool("inter_op").source is None
    assert partial.source("pyspy").reason == "no permission"
    assert partial.source("pyspy").details["rate"] == 20
    assert [c.error for c in partial.workload.setter_calls] == ["late"]
    assert partial.clock.start is None and partial.workload.exit_code is None
    with_affinity = Manifest.from_json({"host": {"cpu_count": 8, "cpu_affinity": [0, 1]}})
    assert with_affinity.usable_cpus == 2
    copied = partial.to_json()
    copied["name"] = "changed"
    assert partial.raw.get("name") is None  # to_json() gives a copy


def test_relevant_env_keeps_thread_settings_only():
    env = {
        "TF_NUM_INTRAOP_THREADS": "2",
        "OMP_NUM_THREADS": "1",
        "HOME": "/x",
        "KMP_BLOCKTIME": "0",
        "TF_CLI_ARGS": "-no-color",  # Terraform's, not TensorFlow's
    }
    assert relevant_env(env) == {
        "KMP_BLOCKTIME": "0",
        "OMP_NUM_THREADS": "1",
        "TF_NUM_INTRAOP_THREADS": "2",
    }


@pytest.mark.parametrize(
    ("name", "pool"),
    [
        ("tf_Compute", Pool.INTER_OP),
        ("tf_numa_-1_Eigen", Pool.INTRA_OP),
        ("tf_numa_0_Eigen", Pool.INTRA_OP),
        ("tf_data_private_threadpool", Pool.TF_DATA),
        ("tf_graph_runner", Pool.TF_OTHER),
    ],
)
def test_pool_of_tf_name(name, pool):
    assert pool_of_tf_name(name) is pool


@pytest.mark.parametrize(
    ("thread", "pool"),
    [
        ({"tf_name": "tf_numa_-1_Eigen", "python_name": None}, Pool.INTRA_OP),
        ({"python_name": "MainThread"}, Pool.PYTHON_MAIN),
        ({"python_name": "Thread-1 (work)"}, Pool.PYTHON_OTHER),
        ({"python_name": "tftrace-identity"}, Pool.PROFILER),
        ({"comm": "grpc_global_tim"}, Pool.PROFILER),
        ({"start_object": "libscipy_openblas64_-32a4b2a6.so"}, Pool.BLAS_OPENMP),
        ({"start_object": "libgomp.so.1"}, Pool.BLAS_OPENMP),
        ({"start_object": "libgrpc.so"}, Pool.PROFILER),
        ({"start_object": "libfoo.so"}, Pool.OTHER),
        ({"start_object": "libpython3.11.so.1.0"}, Pool.PYTHON_OTHER),
        ({}, Pool.UNMAPPED),
    ],
)
def test_pool_of_identity(thread, pool):
    assert pool_of_identity(thread)[0] is pool


def test_cpu_quota_reads_the_tightest_of_v1_and_v2_hierarchies(tmp_path):
    from tftrace.tracer.environment import cpu_quota

    root = tmp_path / "cgroup"
    (root / "cpu,cpuacct/docker/abc").mkdir(parents=True)
    (root / "cpu,cpuacct/docker/cpu.cfs_quota_us").write_text("300000\n")
    (root / "cpu,cpuacct/docker/cpu.cfs_period_us").write_text("100000\n")
    (root / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us").write_text("-1\n")  # unlimited
    (root / "cpu,cpuacct/docker/abc/cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "cgroup.txt"
    proc.write_text("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n")
    assert cpu_quota(proc, root) == 3.0  # the parent's quota binds the child
    (root / "app/job").mkdir(parents=True)
    (root / "app/cpu.max").write_text("150000 100000\n")
    (root / "app/job/cpu.max").write_text("max 100000\n")
    proc.write_text("0::/app/job\n")
    assert cpu_quota(proc, root) == 1.5
    proc.write_text("0::/\n")
    assert cpu_quota(proc, root) is None
    assert cpu_quota(tmp_path / "absent", root) is None


def test_memory_headroom_is_the_tightest_limit_less_usage(tmp_path):
    from tftrace.tracer.environment import memory_headroom

    root = tmp_path / "cgroup"
    (root / "app/job").mkdir(parents=True)
    (root / "app/memory.max").write_text("1000000\n")
    (root / "app/memory.current").write_text("400000\n")
    (root / "app/job/memory.max").write_text("max\n")
    (root / "app/job/memory.current").write_text("300000\n")
    proc = tmp_path / "cgroup.txt"
    proc.write_text("0::/app/job\n")
    assert memory_headroom(proc, root) == 600_000  # the parent's limit binds the child
    (root / "memory/docker").mkdir(parents=True)
    (root / "memory/docker/memory.limit_in_bytes").write_text("9223372036854771712\n")
    (root / "memory/docker/memory.usage_in_bytes").write_text("5000\n")
    proc.write_text("5:memory:/docker\n")
    assert memory_headroom(proc, root) is None  # v1 writes "no limit" as about 2**63
    (root / "memory/docker/memory.limit_in_bytes").write_text("8000\n")
    assert memory_headroom(proc, root) == 3000
    assert memory_headroom(tmp_path / "absent", root) is None


def _manifest_with_onednn(onednn: object) -> Manifest:
    return Manifest.from_json({"kind": "tftrace-run", "workload": {"onednn": onednn}})


@pytest.mark.parametrize(
    ("onednn", "kernels", "text"),
    [
        ({"enabled": True, "env": None}, None, "on (TensorFlow's answer; "),
        ({"enabled": False, "env": "0"}, ["_MklMatMul"], "off (TensorFlow's answer; "),
        (None, None, "unknown (not in the manifest; tftrace report infers it from op names)"),
        (None, ["AddV2", "_MklMatMul"], "on (inferred from op names: _MklMatMul)"),
        (None, ["MatMul", "AddV2"], "off (inferred from op names: MatMul ran as TF's own"),
        (None, ["AddV2"], "unknown (no op in the trace that oneDNN would have replaced)"),
        (
            {"enabled": None, "reason": "the workload did not import tensorflow"},
            None,
            "unknown (the",
        ),
    ],
)
def test_onednn_text(onednn, kernels, text):
    from tftrace.analysis.model.onednn import onednn_text

    assert onednn_text(_manifest_with_onednn(onednn), kernels).startswith(text)


def test_onednn_read_from_the_manifest():
    read = _manifest_with_onednn({"enabled": False, "env": "0"}).workload.onednn
    assert read is not None and read.enabled is False and read.env == "0"
    assert _manifest_with_onednn("yes").workload.onednn is None  # mistyped: not recorded
    assert Manifest.empty().workload.onednn is None


def test_cpu_outside_busy_counts_each_sample_interval():
    """Interval 0-10: 4 ns CPU, busy 10 (waiting for a core): adds 0, does not cancel the
    spin of 10-20 (8 ns CPU, busy 2) -> 6; the plain difference would say 12 - 12 = 0."""
    import numpy as np

    from tftrace.analysis.metrics.cpu_time import _outside_busy
    from tftrace.analysis.metrics.intervals import concurrency

    busy = concurrency([np.array([0, 10])], [np.array([10, 12])], 0, 20)
    t, cpu = np.array([0, 10, 20]), np.array([100, 104, 112])
    assert _outside_busy(t, cpu, busy, 0, 20) == 6
    assert _outside_busy(t, cpu, busy, 10, 20) == 6
    assert np.isnan(_outside_busy(np.zeros(0), np.zeros(0), busy, 0, 20))


def test_summary_says_whether_onednn_was_on():
    from pathlib import Path

    from tftrace.analysis.render.run_summary import RunSummary, summary_lines

    manifest = _manifest_with_onednn({"enabled": False, "env": "0"})
    lines = summary_lines(RunSummary(Path("run"), manifest, {}, None))
    assert "oneDNN     off (TensorFlow's answer; TF_ENABLE_ONEDNN_OPTS=0)" in lines
