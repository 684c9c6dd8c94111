"""``sources.running``: the one way every recording starts and stops its sources (the
recorder, tftrace.profile's helper, tftrace.serve's helper), and the states it reports."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from tftrace.tracer import rundir
from tftrace.tracer.options import RecordOptions, Target
from tftrace.tracer.os_sampler import OsThreadSampler
from tftrace.tracer.pyspy import PySpySource
from tftrace.tracer.record_sources import build, chosen, disabled
from tftrace.tracer.sources import (
    SourceState,
    SourceStatus,
    running,
    states_from_json,
    states_json,
    unavailable,
)


class Fake:
    """A source that writes what happens to it into ``log``."""

    def __init__(
        self,
        name: str,
        log: list[str],
        attaches: bool = False,
        problem: str | None = None,
        start_error: Exception | None = None,
        stop_error: Exception | None = None,
    ) -> None:
        self.name, self.log, self.attaches = name, log, attaches
        self.problem, self.start_error, self.stop_error = problem, start_error, stop_error

    def availability(self) -> str | None:
        self.log.append(f"check {self.name}")
        return self.problem

    def start(self, pid: int) -> None:
        self.log.append(f"start {self.name} {pid}")
        if self.start_error is not None:
            raise self.start_error

    def stop(self) -> SourceStatus:
        self.log.append(f"stop {self.name}")
        if self.stop_error is not None:
            raise self.stop_error
        return SourceStatus(SourceState.RECORDED, None, {"by": self.name})


def test_sources_start_in_order_and_stop_the_last_started_first():
    log: list[str] = []
    sources = [Fake("spy", log, attaches=True), Fake("a", log), Fake("b", log)]

    def allowed() -> bool:
        log.append("allowed?")
        return True

    with running(sources, 42, allowed) as states:
        assert states == {}  # every source started
        log.append("block")
    assert log == [
        *("check spy", "check a", "check b"),  # every availability first
        *("start a 42", "start b 42", "allowed?", "start spy 42"),
        "block",
        *("stop spy", "stop b", "stop a"),
    ]
    assert {name: s.details["by"] for name, s in states.items()} == {
        "spy": "spy",
        "a": "a",
        "b": "b",
    }


def test_an_unavailable_source_is_said_with_its_reason_and_never_started():
    log: list[str] = []
    sources = [Fake("gone", log, problem="not installed"), Fake("here", log)]
    with running(sources, 1) as states:
        assert states == {"gone": SourceStatus(SourceState.UNAVAILABLE, "not installed")}
        assert unavailable(states) == ["gone unavailable: not installed"]
    assert "start gone 1" not in log and "stop gone" not in log
    assert states["gone"].state is SourceState.UNAVAILABLE
    assert states["here"].state is SourceState.RECORDED


def test_a_source_that_fails_to_start_fails_alone():
    log: list[str] = []
    broken = Fake("broken", log, start_error=OSError("no such file"))
    threadless = Fake("threadless", log, start_error=RuntimeError("can't start new thread"))
    with running([broken, threadless, Fake("ok", log)], 7) as states:
        assert states["broken"] == SourceStatus(
            SourceState.FAILED, "broken did not start: no such file"
        )
        assert states["threadless"].reason == "threadless did not start: can't start new thread"
        assert unavailable(states) == []  # failed is not unavailable
    assert "stop broken" not in log and "stop threadless" not in log
    assert states["ok"].state is SourceState.RECORDED


def test_a_process_that_never_allows_attaching_fails_only_the_attaching_sources():
    log: list[str] = []
    with running([Fake("spy", log, attaches=True), Fake("a", log)], 3, lambda: False) as states:
        reason = states["spy"].reason
        assert states["spy"].state is SourceState.FAILED
        assert reason == "the workload ended before spy could attach"
    assert "start spy 3" not in log and states["a"].state is SourceState.RECORDED


def test_allowed_is_asked_only_for_a_source_that_attaches():
    asked: list[int] = []
    log: list[str] = []
    spy = Fake("spy", log, attaches=True, problem="absent")
    with running([spy, Fake("a", log)], 3, lambda: bool(asked.append(1))):
        pass
    assert asked == []


def test_sources_stop_when_the_block_raises_and_when_a_stop_raises():
    log: list[str] = []
    sources = [Fake("a", log), Fake("bad", log, stop_error=ValueError("oops")), Fake("c", log)]
    with pytest.raises(KeyboardInterrupt), running(sources, 5) as states:
        raise KeyboardInterrupt
    assert log[-3:] == ["stop c", "stop bad", "stop a"]
    assert states["bad"] == SourceStatus(SourceState.FAILED, "bad did not stop: ValueError: oops")
    assert states["a"].state is states["c"].state is SourceState.RECORDED


def test_states_travel_as_one_json_line():
    states = {
        "pyspy": SourceStatus(SourceState.UNAVAILABLE, "not found"),
        "os_sampler": SourceStatus(SourceState.RECORDED, None, {"samples": 3}),
    }
    line = states_json(states)
    assert "\n" not in line and states_from_json(line) == states
    assert states_from_json("{}") == {}
    for not_states in ("", "started", "[1]", '{"a": 1}', '{"a": {"state": "odd"}}'):
        assert states_from_json(not_states) is None, not_states


def test_the_settings_build_the_sources_and_the_disabled_states(tmp_path: Path):
    run = rundir.create(tmp_path / "run")
    options = RecordOptions(Target("script", "x.py"), sample_hz=50.0, pyspy_path="/no/py-spy")
    sampler, pyspy = build(run, options)
    assert isinstance(sampler, OsThreadSampler) and sampler.hz == 50.0 and not sampler.attaches
    assert isinstance(pyspy, PySpySource) and pyspy.executable == "/no/py-spy" and pyspy.attaches
    assert disabled(options) == {}
    off = RecordOptions(Target("script", "x.py"), pyspy=False)
    assert chosen(off) == {"os_sampler": True, "pyspy": False}
    assert [s.name for s in build(run, off)] == ["os_sampler"]
    assert disabled(off) == {"pyspy": SourceStatus(SourceState.DISABLED, "disabled by option")}


# A py-spy that says how it ended: interrupted (SIGINT), or by itself once its target is gone.
FAKE_PYSPY = textwrap.dedent(
    """
    import os, signal, sys, time
    args = sys.argv
    out, pid = args[args.index("--output") + 1], int(args[args.index("--pid") + 1])
    def end(how):
        open(out, "w").write(how)
        print("Samples: 1 Errors: 0", flush=True)
        sys.exit(0)
    signal.signal(signal.SIGINT, lambda *_: end("interrupted"))
    print("sampling", flush=True)
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            end("ended")
        time.sleep(0.02)
    """
)


@pytest.fixture
def fake_pyspy(tmp_path: Path) -> Path:
    exe = tmp_path / "py-spy"
    exe.write_text(f"#!{sys.executable}\n{FAKE_PYSPY}")
    exe.chmod(0o755)
    return exe


def _pyspy(run: rundir.RunDir, exe: Path) -> PySpySource:
    return PySpySource(run / rundir.PYSPY_TRACE, run / rundir.PYSPY_LOG, 20, False, False, str(exe))


def _sampling(run: rundir.RunDir) -> None:
    """Until the fake has its SIGINT handler (a real py-spy has it at once)."""
    deadline = time.monotonic() + 30
    while "sampling" not in (run / rundir.PYSPY_LOG).read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_pyspy_is_interrupted_while_its_workload_runs_on(tmp_path, fake_pyspy, target):
    run = rundir.create(tmp_path / "run")
    with running([_pyspy(run, fake_pyspy)], target.pid) as states:
        _sampling(run)
    assert target.poll() is None  # the workload goes on (a block recorded in code)
    assert (run / rundir.PYSPY_TRACE).read_text() == "interrupted"
    assert states["pyspy"].state is SourceState.RECORDED
    assert states["pyspy"].details["samples_line"] == "Samples: 1 Errors: 0"


def test_pyspy_ends_by_itself_after_its_workload(tmp_path, fake_pyspy, target):
    run = rundir.create(tmp_path / "run")
    with running([_pyspy(run, fake_pyspy)], target.pid) as states:
        _sampling(run)
        target.kill()
        target.wait()  # reaped, as the recorder reaps its workload
    assert (run / rundir.PYSPY_TRACE).read_text() == "ended"
    assert states["pyspy"].state is SourceState.RECORDED


def test_the_real_sources_report_as_the_manifest_records_them(tmp_path: Path, target):
    run = rundir.create(tmp_path / "run")
    settings = RecordOptions(
        Target("script", "x.py"), machine_hz=0, pyspy_path=str(tmp_path / "no-py-spy")
    )
    with running(build(run, settings), target.pid) as states:
        assert states["pyspy"].state is SourceState.UNAVAILABLE
        assert "not found" in (states["pyspy"].reason or "")
        time.sleep(0.3)
    sampler = states["os_sampler"]
    assert sampler.state is SourceState.RECORDED and sampler.details["samples"] > 0
    assert (run / rundir.OS_THREADS_TABLE).exists()
