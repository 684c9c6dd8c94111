"""Pool sizes from settings and the environment, the thread settings kept, the cgroup's CPU
quota and memory headroom."""

from __future__ import annotations

import pytest

from tftrace.tracer.environment import relevant_env, resolve_pool_size


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
