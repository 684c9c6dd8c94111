"""The OS thread sampler against a real child process whose threads are known: their names,
a rename, an exit. The C reader and the Python loop must write the same rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tftrace.tracer import os_sampler
from tftrace.tracer.os_sampler import COLUMNS, OsThreadSampler, parse_stat

CHILD = textwrap.dedent(
    """
    import sys, threading

    def comm(tid, name):
        with open(f"/proc/self/task/{tid}/comm", "w") as f:
            f.write(name)

    tids, done = {}, threading.Event()

    def worker(name, ready):
        tids[name] = threading.get_native_id()
        comm(tids[name], name)
        ready.set()
        done.wait() if name == "leaver" else threading.Event().wait()

    threads = {}
    for name in ("stayer", "leaver"):
        ready = threading.Event()
        threads[name] = threading.Thread(target=worker, args=(name, ready), daemon=True)
        threads[name].start()
        ready.wait()
    print(tids["stayer"], tids["leaver"], flush=True)
    for line in sys.stdin:
        if line.strip() == "rename":
            comm(tids["stayer"], "renamed")
        elif line.strip() == "leave":
            done.set()
            threads["leaver"].join()
        print("ok", flush=True)
    """
)

needs_c = pytest.mark.skipif(os_sampler._procstat is None, reason="the C reader is not built")


@pytest.fixture
def child() -> Iterator[tuple[subprocess.Popen[str], int, int]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    stayer, leaver = map(int, proc.stdout.readline().split())
    yield proc, stayer, leaver
    proc.kill()
    proc.wait()


def _ask(proc: subprocess.Popen[str], command: str) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "ok"


def _sampler(tmp: Path, pid: int, native: bool) -> OsThreadSampler:
    out = tmp / ("c" if native else "py") / "os_threads"
    out.mkdir(parents=True)
    sampler = OsThreadSampler(out, hz=100, native=native)
    sampler._pid = pid  # sampled by hand with sample_once, no thread
    return sampler


def _wait_until_stopped(pid: int) -> None:
    """SIGSTOP reaches each thread in its own time."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        tasks = os.listdir(f"/proc/{pid}/task")
        states = {parse_stat(Path(f"/proc/{pid}/task/{t}/stat").read_text())[1] for t in tasks}
        if states == {"T"}:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop")


def _identities(sampler: OsThreadSampler) -> dict[int, dict]:
    """The thread table without the times of sighting."""
    times = ("first_seen_ns", "last_seen_ns")
    return {t: {k: v for k, v in i.items() if k not in times} for t, i in sampler.threads.items()}


def _rows(sampler: OsThreadSampler) -> np.ndarray:
    return np.frombuffer(sampler._rows, dtype=np.int64).reshape(-1, len(COLUMNS))


@needs_c
def test_the_c_reader_and_the_python_loop_write_the_same_rows(child, tmp_path):
    proc = child[0]
    os.kill(proc.pid, signal.SIGSTOP)  # nothing changes between the two readings
    try:
        _wait_until_stopped(proc.pid)
        c, py = _sampler(tmp_path, proc.pid, True), _sampler(tmp_path, proc.pid, False)
        assert c.sample_once() and py.sample_once()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    c_rows, py_rows = _rows(c), _rows(py)
    assert len(c_rows) == len(os.listdir(f"/proc/{proc.pid}/task")) >= 3
    assert (c_rows[:, 1:] == py_rows[:, 1:]).all()  # all but the time of reading
    assert set(c_rows[:, COLUMNS.index("state")]) == {ord("T")}  # stopped
    assert _identities(c) == _identities(py)


@pytest.mark.parametrize("native", [pytest.param(True, marks=needs_c), False])
def test_names_renames_and_exits_of_threads(child, tmp_path, native):
    proc, stayer, leaver = child
    sampler = _sampler(tmp_path, proc.pid, native)
    assert sampler.sample_once()
    assert sampler.threads[stayer]["name"] == "stayer"
    assert sampler.threads[leaver]["name"] == "leaver"
    _ask(proc, "rename")
    assert sampler.sample_once()
    assert sampler.threads[stayer]["names"] == ["stayer", "renamed"]
    _ask(proc, "leave")
    # join() returns when the thread has exited, a moment before the kernel takes it out of
    # /proc: the sampler's claim is about a thread gone from there
    gone = Path(f"/proc/{proc.pid}/task/{leaver}")
    deadline = time.monotonic() + 5
    while gone.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert sampler.sample_once()
    assert sampler.threads[leaver].get("exited") is True
    assert "exited" not in sampler.threads[stayer]

    status = sampler.stop()
    assert status.details["samples"] == 3
    assert status.details["reader"] == ("c" if native else "python")
    with np.load(sampler.out_dir / "samples-00000.npz") as data:
        columns = {c: data[c] for c in COLUMNS}
    assert columns["state"].dtype == np.int8 and columns["tid"].dtype == np.int64
    leaver_rows = columns["t_ns"][columns["tid"] == leaver]
    stayer_rows = columns["t_ns"][columns["tid"] == stayer]
    assert len(leaver_rows) == 2 and len(stayer_rows) == 3  # not read once it had left
    assert sampler.threads[leaver]["last_seen_ns"] == leaver_rows.max()
    assert sampler.threads[stayer]["last_seen_ns"] == stayer_rows.max()
    # The child's own CPU ticks, as the kernel counts them, are what the rows say.
    assert (np.diff(columns["utime"][columns["tid"] == stayer]) >= 0).all()


def test_a_process_that_is_gone_ends_the_sampling(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not _sampler(tmp_path, proc.pid, native=False).sample_once()


@needs_c
def test_the_identity_watchers_wait_returns_when_the_threads_change_and_not_before():
    def wait(signature: int, timeout_s: float) -> tuple[int, float]:
        started = time.monotonic()
        found = os_sampler._procstat.wait_for_threads(
            "/proc/self/task", signature, 0.005, timeout_s
        )
        return found, time.monotonic() - started

    now, _ = wait(0, 5.0)
    assert now != 0  # no signature yet: returns at once with this one
    same, waited = wait(now, 0.2)
    assert same == now and waited >= 0.2  # nothing changed: the timeout

    leave = threading.Event()
    born = threading.Thread(target=leave.wait)
    born.start()
    with_born, waited = wait(now, 5.0)
    assert with_born != now and waited < 1.0
    leave.set()
    after, waited = wait(with_born, 5.0)  # returns when it exits, well before the timeout
    assert after != with_born and waited < 1.0
    born.join()
    assert wait(after, 0.0)[0] == now  # the same threads as at first: the same signature
