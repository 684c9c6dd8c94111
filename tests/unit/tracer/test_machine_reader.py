"""The machine beside the workload: the machine reading on a fake /proc and /sys (no mocks:
the reader takes a root), the cgroup it picks, the chunks it writes and ``Run.machine`` read
back from them, window growth of cumulative counters; and one recording with a busy process
beside the workload, checked against the kernel's own count of that process's CPU time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import WORKLOADS, quiet_env, tftrace_command
from tftrace.analysis.model.counters import growth, without_resets
from tftrace.analysis.model.machine_samples import Machine, read_machine
from tftrace.analysis.model.run import _machine, load
from tftrace.tracer import rundir
from tftrace.tracer.cgroup import cpu_cgroup, parse_cpu_stat
from tftrace.tracer.machine_reader import MachineReader, parse_cpu_lines
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.os_sampler import OsThreadSampler

TICK_NS = 10**9 // os.sysconf("SC_CLK_TCK")
WORKLOAD, OWN, PYSPY, CHILD, BURNER, IDLE = 100, 200, 201, 101, 300, 400


def stat_line(pid: int, name: str, ppid: int, utime: int, stime: int, cpu: int = 0) -> str:
    """A /proc/<pid>/stat line: fields after the name as proc(5) numbers them from 3."""
    after = ["0"] * 50
    after[0], after[1], after[11], after[12] = "S", str(ppid), str(utime), str(stime)
    after[19], after[36] = "1000", str(cpu)  # starttime (ticks after boot), processor
    return f"{pid} ({name}) {' '.join(after)}\n"


def proc_stat(*cpus: tuple[int, ...]) -> str:
    lines = ["cpu  " + " ".join(["0"] * 10)]
    lines += [f"cpu{i} " + " ".join(map(str, (*c, 0, 0))) for i, c in enumerate(cpus)]
    return "\n".join([*lines, "intr 12345 0 0", "ctxt 99", ""])


def fake_root(tmp: Path, quota_us: int = 150000) -> Path:
    """A machine of two CPUs; the workload (pid 100, with a child 101) in cgroup v1
    /job/task whose parent /job has a quota of 1.5 CPUs; the recorder (200, with py-spy 201);
    a busy process (300) that the recorder's program started itself (a neighbour, not
    tftrace's cost) and an idle one (400)."""
    root = tmp / "root"
    proc = root / "proc"
    processes = {
        WORKLOAD: ("python", 1),
        CHILD: ("worker", WORKLOAD),
        OWN: ("python", 1),
        PYSPY: ("py-spy", OWN),
        BURNER: ("burn", OWN),
        IDLE: ("sshd", 1),
    }
    for pid, (name, ppid) in processes.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(stat_line(pid, name, ppid, 10, 5))
    (proc / str(WORKLOAD) / "cgroup").write_text("4:memory:/job/task\n3:cpu,cpuacct:/job/task\n")
    (proc / "stat").write_text(
        proc_stat((100, 0, 50, 800, 10, 1, 2, 3), (200, 5, 60, 700, 0, 0, 0, 0))
    )
    cpu = root / "sys/fs/cgroup/cpu,cpuacct/job"
    (cpu / "task").mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
    (cpu / "cpu.cfs_period_us").write_text("100000\n")
    for directory in (cpu, cpu / "task"):
        (directory / "cpu.stat").write_text("nr_periods 10\nnr_throttled 2\nthrottled_time 5000\n")
        (directory / "cpuacct.usage").write_text("123456789\n")
    return root


def set_cpu(root: Path, pid: int, utime: int, stime: int, cpu: int = 1) -> None:
    path = root / "proc" / str(pid) / "stat"
    name = path.read_text().split("(")[1].split(")")[0]
    ppid = int(path.read_text().split(")")[1].split()[1])
    path.write_text(stat_line(pid, name, ppid, utime, stime, cpu))


# --- parsing -----------------------------------------------------------------------------------


def test_cpu_lines_are_read_in_ticks_and_a_cut_read_asks_for_more():
    text = proc_stat((1, 2, 3, 4, 5, 6, 7, 8), (9, 10, 11, 12, 13, 14, 15, 16)).encode()
    assert parse_cpu_lines(text) == [(0, 1, 2, 3, 4, 5, 6, 7, 8), (1, *range(9, 17))]
    cut = text[: text.index(b"cpu1") + 8]  # the second CPU's line cut
    assert parse_cpu_lines(cut, whole=False) is None
    assert parse_cpu_lines(text, whole=False) == parse_cpu_lines(text)  # intr follows: all in


def test_cpu_stat_of_both_versions_in_ns():
    v2 = b"usage_usec 1000\nuser_usec 600\nnr_periods 7\nnr_throttled 3\nthrottled_usec 250\n"
    assert parse_cpu_stat(v2, 2) == (7, 3, 250_000, 1_000_000)
    assert parse_cpu_stat(b"usage_usec 42\nuser_usec 40\n", 2) == (-1, -1, -1, 42_000)
    v1 = b"nr_periods 9\nnr_throttled 1\nthrottled_time 777\n"
    assert parse_cpu_stat(v1, 1, b"555") == (9, 1, 777, 555)
    assert parse_cpu_stat(v1, 1, None) == (9, 1, 777, -1)


def test_the_cgroup_read_is_the_one_whose_quota_binds(tmp_path):
    root = fake_root(tmp_path)
    cgroup = cpu_cgroup(root / "proc/100/cgroup", root / "sys/fs/cgroup")
    assert cgroup is not None
    assert (cgroup.version, cgroup.quota) == (1, 1.5)
    assert cgroup.directory == root / "sys/fs/cgroup/cpu,cpuacct/job"  # the parent: its quota
    assert cgroup.usage == cgroup.directory / "cpuacct.usage"
    (cgroup.directory / "cpu.cfs_quota_us").write_text("-1\n")  # no quota: its own cgroup
    unlimited = cpu_cgroup(root / "proc/100/cgroup", root / "sys/fs/cgroup")
    assert unlimited is not None and unlimited.quota is None
    assert unlimited.directory == root / "sys/fs/cgroup/cpu,cpuacct/job/task"


def test_cgroup_v2_in_a_unified_mount(tmp_path):
    base = tmp_path / "cgroup"
    (base / "unified/app/job").mkdir(parents=True)
    (base / "unified/app/cpu.max").write_text("200000 100000\n")
    (base / "unified/app/cpu.stat").write_text("usage_usec 5\nnr_periods 1\n")
    (base / "unified/app/job/cpu.stat").write_text("usage_usec 3\n")
    proc = tmp_path / "cgroup.txt"
    proc.write_text("1:name=systemd:/\n0::/app/job\n")
    cgroup = cpu_cgroup(proc, base)
    assert cgroup is not None
    assert (cgroup.version, cgroup.quota, cgroup.usage) == (2, 2.0, None)
    assert cgroup.stat == base / "unified/app/cpu.stat"
    proc.write_text("0::/gone/deeper\n")  # not there (a container's view): the mount's root
    assert cpu_cgroup(proc, base) is None  # ... which has no cpu.stat here
    (base / "unified/cpu.stat").write_text("usage_usec 1\n")
    root_cgroup = cpu_cgroup(proc, base)
    assert root_cgroup is not None and root_cgroup.directory == base / "unified"


# --- window growth -----------------------------------------------------------------------------


def test_growth_interpolates_and_is_flat_outside_the_readings():
    t = np.array([10, 20, 30])
    value = np.array([100, 200, 200])
    assert growth(t, value, 10, 30) == 100
    assert growth(t, value, 15, 25) == 50  # linear between readings
    assert growth(t, value, 0, 15) == 50  # nothing known before the first reading
    assert growth(t, value, 25, 99) == 0
    assert growth(t, value, 0, 15, zero_at=5) == 150  # born at 5: 0 -> 100 by t=10
    assert np.isnan(growth(t[:0], value[:0], 0, 1))


def test_a_counter_that_starts_again_is_made_monotonic():
    value = np.array([5, 8, 2, 4, 1])  # the pid taken by new processes twice
    assert without_resets(value).tolist() == [5, 8, 10, 12, 13]
    assert without_resets(np.array([1, 2, 3])).tolist() == [1, 2, 3]


# --- the reader, the chunks, the model ---------------------------------------------------------


def read_fake_machine(tmp_path: Path, native: bool) -> tuple[Path, MachineReader]:
    """Three readings 100 ms apart: the burner gains 30 ticks, py-spy 2, the child 4, the
    idle process nothing; CPU 1 gains 20 busy and 5 steal ticks; the cgroup one throttle."""
    root = fake_root(tmp_path)
    out = tmp_path / "run" / "os_threads"
    out.mkdir(parents=True)
    reader = MachineReader(WORKLOAD, root=root, own_pid=OWN, native=native)
    base = 10**12
    reader.read(base)
    set_cpu(root, BURNER, 30, 5)
    set_cpu(root, PYSPY, 11, 6)
    (root / "proc/stat").write_text(
        proc_stat((100, 0, 50, 810, 10, 1, 2, 3), (210, 5, 70, 700, 0, 0, 0, 5))
    )
    cpu_stat = root / "sys/fs/cgroup/cpu,cpuacct/job/cpu.stat"
    cpu_stat.write_text("nr_periods 11\nnr_throttled 3\nthrottled_time 9000\n")
    reader.read(base + 100_000_000)
    set_cpu(root, BURNER, 40, 15)
    set_cpu(root, CHILD, 14, 5)
    reader.read(base + 200_000_000)
    reader.flush(out)
    return out.parent, reader


@pytest.mark.parametrize("native", [True, False], ids=["c", "python"])
def test_reader_writes_three_tables_and_only_processes_that_ran(tmp_path, native):
    run, reader = read_fake_machine(tmp_path, native)
    reader.close()
    with np.load(run / "os_threads/machine-00000.npz") as data:
        columns = {k: data[k] for k in data.files}
    assert columns["cpu_t_ns"].size == 6 and set(columns["cpu_id"].tolist()) == {0, 1}
    assert columns["cpu_steal"][columns["cpu_id"] == 1].tolist() == [0, 5 * TICK_NS, 5 * TICK_NS]
    assert WORKLOAD not in columns["proc_pid"] and IDLE not in columns["proc_pid"]
    burner = columns["proc_cpu_ns"][columns["proc_pid"] == BURNER]
    assert burner.tolist() == [15 * TICK_NS, 35 * TICK_NS, 55 * TICK_NS]
    assert columns["cg_throttled"].tolist() == [2, 3, 3]
    assert columns["cg_usage_ns"].tolist() == [123456789] * 3
    table = json.loads((run / rundir.MACHINE_TABLE).read_text())
    roles = {p["pid"]: (p["name"], p["role"]) for p in table["processes"]}
    assert roles == {
        BURNER: ("burn", "other"),
        PYSPY: ("py-spy", "recorder"),
        CHILD: ("worker", "workload-child"),
    }
    assert table["cgroup"]["version"] == 1 and table["cgroup"]["quota_cpus"] == 1.5
    assert table["processes_seen"] == 5  # all but the workload itself
    assert all("ppid" not in p and "head" not in p for p in table["processes"])


def test_a_process_first_written_late_keeps_its_row_from_before(tmp_path):
    """Idle through one flush, busy in the next: its last row before the growth is written
    with it, so the growth falls in the right interval."""
    root = fake_root(tmp_path)
    out = tmp_path / "run" / "os_threads"
    out.mkdir(parents=True)
    reader = MachineReader(WORKLOAD, root=root, own_pid=OWN)
    reader.read(1000)
    reader.read(2000)
    reader.flush(out)
    set_cpu(root, IDLE, 20, 5)
    reader.read(3000)
    reader.flush(out)
    reader.close()
    machine = read_machine(out.parent, 0, [])
    assert machine is not None
    idle = machine.processes[machine.processes["pid"] == IDLE]
    assert idle["t_ns"].tolist() == [2000, 3000]
    assert idle["cpu_ns"].tolist() == [15 * TICK_NS, 25 * TICK_NS]
    by_pid = machine.process_time(2000, 3000).set_index("pid")
    assert by_pid.loc[IDLE, "cpu_ns"] == 10 * TICK_NS


def test_machine_loads_with_window_helpers(tmp_path):
    run, reader = read_fake_machine(tmp_path, native=True)
    reader.close()
    missing: list[str] = []
    origin = 10**12
    machine = read_machine(run, origin, missing)
    assert machine is not None and machine.recorded and not missing
    cpus = machine.cpu_time(0, 200_000_000).set_index("cpu")
    assert cpus.loc[1, "busy_ns"] == 20 * TICK_NS  # user +10, system +10
    assert cpus.loc[1, "steal_ns"] == 5 * TICK_NS
    assert cpus.loc[0, "idle_ns"] == 10 * TICK_NS
    assert machine.cpu_time(0, 200_000_000, cpus=[0])["cpu"].tolist() == [0]
    half = machine.process_time(50_000_000, 100_000_000).set_index("pid")
    assert half.loc[BURNER, "cpu_ns"] == 10 * TICK_NS  # half of the first interval's 20
    whole = machine.process_time(-(10**9), 10**9)
    assert whole.iloc[0]["pid"] == BURNER and whole.iloc[0]["role"] == "other"
    assert whole.set_index("pid").loc[BURNER, "cpu_ns"] == 40 * TICK_NS
    cgroup = machine.cgroup_time(0, 200_000_000)
    assert cgroup["throttled_periods"] == 1 and cgroup["throttled_ns"] == 4000
    assert cgroup["usage_ns"] == 0
    assert machine.cgroup_info["quota_cpus"] == 1.5


def test_a_damaged_chunk_is_skipped_and_said(tmp_path):
    run, reader = read_fake_machine(tmp_path, native=True)
    reader.close()
    (run / "os_threads/machine-00001.npz").write_bytes(b"PK\x03\x04 truncated")
    missing: list[str] = []
    machine = read_machine(run, 0, missing)
    assert machine is not None and len(machine.cpus) == 6
    assert missing == ["machine: machine-00001.npz unreadable (BadZipFile), skipped"]


def test_a_run_without_readings_notes_them_only_where_they_were_taken(tmp_path):
    def manifest(machine: dict[str, object] | None) -> Manifest:
        sampler = {"state": "recorded", **({"machine": machine} if machine else {})}
        return Manifest.from_json({"sources": {"os_sampler": sampler}})

    from tftrace.analysis.model.run import Origin

    origin = Origin(0, 0)
    for details, noted in (
        ({"hz": 5.0, "error": "OSError: gone"}, ["machine: none (OSError: gone)"]),
        ({"hz": 0}, []),
        (None, []),  # a run recorded before machine readings existed
    ):
        missing: list[str] = []
        machine = _machine(tmp_path, manifest(details), origin, missing)
        assert not machine.recorded and missing == noted
    assert Machine.empty().process_time(0, 1).empty


def test_sampler_takes_machine_readings_at_their_own_rate(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        out = tmp_path / "os_threads"
        out.mkdir()
        # one chunk whatever the wait below: a flush every minute
        sampler = OsThreadSampler(out, hz=100, machine_hz=20, flush_every_s=60)
        sampler.start(sleeper.pid)
        # This process, the recorder, uses CPU between readings; on a loaded machine the
        # readings widen (their cost budget), so spin until three were taken, not for a time.
        end, give_up = time.monotonic() + 0.5, time.monotonic() + 30
        while time.monotonic() < end or sampler.machine_readings < 3:
            if time.monotonic() > give_up:
                break
        status = sampler.stop()
    finally:
        sleeper.kill()
        sleeper.wait()
    machine = status.details["machine"]
    samples = status.details["samples"]
    assert machine["hz"] == 20 and 1 <= machine["readings"] <= samples // 5 + 1, status
    assert machine["chunks"] == 1 and machine["cpu_seconds"] > 0
    loaded = read_machine(tmp_path, 0, [])
    assert loaded is not None
    assert set(loaded.cpus["cpu"]) >= os.sched_getaffinity(0)
    assert sleeper.pid not in set(loaded.processes["pid"])
    roles = loaded.process_names.set_index("pid")["role"]
    assert roles.get(os.getpid()) == "recorder"  # this process ran the sampler


# --- end to end --------------------------------------------------------------------------------

BURN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def own_cpu_ns(pid: int) -> int:
    """utime + stime of ``pid`` as the kernel counts them, in ns."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_NS


class KernelCount(threading.Thread):
    """The kernel's count of a process's CPU time, read every 20 ms: (monotonic ns, cpu ns)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.readings, self.done = pid, [], threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.02):
            self.readings.append((time.monotonic_ns(), own_cpu_ns(self.pid)))

    def grew(self, lo: int, hi: int) -> float:
        t, cpu = np.array(self.readings).T
        return float(np.interp(hi, t, cpu) - np.interp(lo, t, cpu))


@pytest.mark.slow
def test_a_busy_process_beside_the_workload_is_seen_with_its_cpu_time(tmp_path):
    cpu = max(os.sched_getaffinity(0))
    burner = subprocess.Popen([sys.executable, "-c", BURN, str(cpu)])
    kernel = KernelCount(burner.pid)
    try:
        time.sleep(0.3)  # pinned and spinning
        kernel.start()
        run = tmp_path / "run"
        proc = subprocess.run(
            tftrace_command(
                "record", "-o", run, "--no-pyspy", WORKLOADS / "eager_big_matmul.py", "2"
            ),
            capture_output=True,
            text=True,
            env=quiet_env(),
            timeout=120,
        )
    finally:
        kernel.done.set()
        kernel.join()
        burner.kill()
        burner.wait()
    assert proc.returncode == 0, proc.stderr
    loaded = load(run)
    machine = loaded.machine
    assert machine.recorded, loaded.missing
    lo, hi = int(machine.cpus["t_ns"].min()), int(machine.cpus["t_ns"].max())
    assert hi - lo > 1e9
    assert machine.process_names.set_index("pid").loc[burner.pid, "role"] == "other"
    # Over the readings' span, on the monotonic clock: the run's axis starts at its origin.
    origin = loaded.origin.monotonic_ns or 0
    truth = kernel.grew(lo + origin, hi + origin)
    seen = machine.process_time(lo, hi).set_index("pid").loc[burner.pid, "cpu_ns"]
    assert truth > 0.3 * (hi - lo) and seen == pytest.approx(truth, rel=0.10)
    usable = loaded.manifest.host.cpu_affinity
    cpus = machine.cpu_time(lo, hi, usable).set_index("cpu")
    assert len(cpus) == len(usable)
    wall = (hi - lo) * len(usable)
    assert 0.8 * wall <= cpus[["busy_ns", "idle_ns", "steal_ns"]].to_numpy().sum() <= 1.2 * wall
    assert cpus.loc[cpu, "busy_ns"] >= 0.8 * (hi - lo)  # the burner's CPU: never idle
    assert (cpus["steal_ns"] >= 0).all()
    details = loaded.manifest.source("os_sampler").details["machine"]
    assert details["readings"] >= 2 and "error" not in details
    assert pd.api.types.is_integer_dtype(machine.processes["cpu_ns"])
