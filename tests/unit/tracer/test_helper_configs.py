"""The typed configs of the helper processes, shared by the program that launches a helper and
the helper; and the helpers launched the one way (``helper_process.launch_helper``)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tftrace.errors import TftraceError
from tftrace.tracer import rundir
from tftrace.tracer.helper_configs import (
    AttachConfig,
    ConfigError,
    ServeHelperConfig,
    WorkloadConfig,
)
from tftrace.tracer.helper_process import answer, ask, end_helper, launch_helper
from tftrace.tracer.options import RecordOptions, Target
from tftrace.tracer.sources import SourceState, states_from_json

ATTACH = AttachConfig("/runs/x", 123, True, 100.0, 5.0, True, 20, False, False, None)
SERVE = ServeHelperConfig("/tmp/tftrace-serve-1", 123, 100.0, 300.0)


@pytest.mark.parametrize("config", [ATTACH, SERVE], ids=["attach", "serve"])
def test_a_config_round_trips_through_its_json(config):
    assert type(config).from_json(config.to_json()) == config
    assert type(config).from_json(json.loads(json.dumps(config.to_json()))) == config
    with pytest.raises(AttributeError):
        config.pid = 1  # frozen


def test_the_attach_config_keeps_its_file(tmp_path: Path):
    """workload/attach.json of a run directory: the same keys, in the same order."""
    options = RecordOptions(Target("code", "x.py"), pyspy_path="/bin/py-spy", sample_hz=50.0)
    config = AttachConfig.of(tmp_path, 77, options)
    assert list(config.to_json()) == [
        *("run_dir", "pid", "sampler", "sample_hz", "machine_hz", "pyspy", "pyspy_rate"),
        *("pyspy_native", "pyspy_blocking", "pyspy_path"),
    ]
    assert config.run_dir == str(tmp_path.resolve()) and config.pid == 77
    assert (config.sample_hz, config.pyspy_path, config.pyspy) == (50.0, "/bin/py-spy", True)
    assert list(SERVE.to_json()) == ["dir", "pid", "hz", "keep_s"]


def _refused(cls, data) -> str:
    with pytest.raises(ConfigError) as caught:
        cls.from_json(data)
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, TftraceError)
    return message


def test_unknown_and_missing_keys_are_refused_in_one_line():
    data = SERVE.to_json()
    assert _refused(ServeHelperConfig, {**data, "extra": 1}) == "ServeHelperConfig: unknown extra"
    del data["pid"]
    assert _refused(ServeHelperConfig, data) == "ServeHelperConfig: missing pid"
    both = _refused(ServeHelperConfig, {**data, "zz": 1, "aa": 2})
    assert both == "ServeHelperConfig: unknown aa, zz; missing pid"
    assert _refused(AttachConfig, {}).startswith("AttachConfig: missing run_dir, pid, sampler")
    assert "a JSON object expected, not list" in _refused(AttachConfig, [])


def test_values_of_the_wrong_type_are_refused():
    data = ATTACH.to_json()
    assert _refused(AttachConfig, {**data, "pid": "123"}) == "AttachConfig.pid: '123' is not int"
    assert "is not bool" in _refused(AttachConfig, {**data, "pyspy": 1})
    assert "is not int" in _refused(AttachConfig, {**data, "pyspy_rate": True})
    assert "is not str or null" in _refused(AttachConfig, {**data, "pyspy_path": 3})
    assert "is not float" in _refused(AttachConfig, {**data, "sample_hz": "fast"})
    whole = AttachConfig.from_json({**data, "sample_hz": 100, "pyspy_path": "/x"})
    assert whole.sample_hz == 100.0 and isinstance(whole.sample_hz, float)


def test_the_workload_config_carries_the_record_options(tmp_path: Path):
    """workload/config.json: what the workload's bootstrap reads, from the recorder's options."""
    options = RecordOptions(
        Target("script", "train.py", ("--steps", "5")), steps=(3, None), step_marker="train"
    )
    config = WorkloadConfig.of(tmp_path, options, 9)
    assert WorkloadConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    assert config.target() == {"kind": "script", "value": "train.py", "args": ["--steps", "5"]}
    assert (config.first_step, config.end_step, config.ready_fd) == (3, None, 9)
    assert (config.step_marker, config.delay_s, config.duration_s) == ("train", 0.0, None)
    # a profiled window times the steps, so those outside it measure the profiler's cost
    assert config.step_timer
    whole = RecordOptions(Target("script", "train.py"))
    assert not WorkloadConfig.of(tmp_path, whole, 9).step_timer
    timed = [replace(whole, delay_s=2.0), replace(whole, duration_s=1.0)]
    assert all(WorkloadConfig.of(tmp_path, o, 9).step_timer for o in timed)
    unprofiled = replace(whole, steps=(3, None), tf_profiler=False)
    assert not WorkloadConfig.of(tmp_path, unprofiled, 9).step_timer
    data = config.to_json()
    assert "a list of str" in _refused(WorkloadConfig, {**data, "target_args": ["-x", 1]})
    assert "a list of str" in _refused(WorkloadConfig, {**data, "target_args": "-x"})


def test_a_config_file_that_cannot_be_read_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="ServeHelperConfig: cannot read"):
        ServeHelperConfig.read(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read"):
        ServeHelperConfig.read(bad)


@pytest.mark.parametrize("module", ["attach", "serve_helper"])
def test_a_helper_answers_a_bad_config_in_one_line(tmp_path: Path, module: str):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"pid": 1, "surprise": True}))
    done = subprocess.run(
        [sys.executable, "-m", f"tftrace.tracer.{module}", str(config)],
        input="start\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == 1 and "unknown surprise" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_in_code_helper_reports_every_source(tmp_path: Path, target):
    run = rundir.create(tmp_path / "run")
    options = RecordOptions(
        Target("code", "x.py"), machine_hz=0, pyspy_path=str(tmp_path / "no-py-spy")
    )
    helper = launch_helper(AttachConfig.of(run.path, target.pid, options), run / "attach.json")
    try:
        said, _, not_started = ask(helper, "start").partition(" ")
        assert said == "started"
        early = states_from_json(not_started)
        assert early is not None and list(early) == ["pyspy"]
        assert early["pyspy"].state is SourceState.UNAVAILABLE
        final = states_from_json(ask(helper, "stop"))
    finally:
        end_helper(helper)
    assert helper.returncode == 0
    assert final is not None and final["pyspy"] == early["pyspy"]
    assert final["os_sampler"].state in (SourceState.RECORDED, SourceState.FAILED)
    assert (run / rundir.OS_THREADS_TABLE).exists()
    assert AttachConfig.read(run / "attach.json").pid == target.pid


def test_the_serve_helper_samples_until_its_pipe_closes(tmp_path: Path, target):
    buffer = tmp_path / "buffer"
    buffer.mkdir()
    config = ServeHelperConfig(str(buffer), target.pid, 50.0, 2.0)
    helper = launch_helper(config, buffer / "config.json")
    try:
        assert answer(helper) == "started"
    finally:
        end_helper(helper)
    assert helper.returncode == 0
    assert not buffer.exists()  # the helper removes its directory as it ends
