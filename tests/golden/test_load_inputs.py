"""What ``load`` accepts, and one clear line for everything it cannot read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLE_RUN, tftrace
from tftrace.analysis.model.run import load
from tftrace.errors import TraceError

XPLANE = next(SAMPLE_RUN.glob("plugins/profile/*/*.xplane.pb"))


def one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_run_directory_log_directory_and_file_agree(tmp_path: Path):
    logdir = tmp_path / "logs"
    shutil.copytree(SAMPLE_RUN / "plugins", logdir / "plugins")  # TensorBoard's layout, no manifest
    from_run, from_logdir, from_file = load(SAMPLE_RUN), load(logdir), load(XPLANE)
    assert len(from_run.events) == len(from_logdir.events) == len(from_file.events)
    # Without the recorder's files the trace still says which line is which pool...
    python = {"python-main", "python-other"}

    def pools(run) -> list[str]:  # which Python thread is the main one needs OS evidence
        lines = run.threads.dropna(subset=["line_id"])
        return sorted("python" if p in python else p for p in lines["pool"])

    assert pools(from_logdir) == pools(from_run)
    # ... but no OS thread is known, and nothing is claimed about one.
    assert from_logdir.threads["tid"].isna().all() and from_logdir.samples.empty
    assert not from_logdir.manifest.exists and from_logdir.manifest.usable_cpus is None
    # The bare file next to its run directory finds the run's other files.
    assert from_file.manifest.exists and not from_file.samples.empty


def test_newest_session_or_the_named_one(tmp_path: Path):
    logdir = tmp_path / "logs"
    old = logdir / "plugins" / "profile" / "2020_01_01_00_00_00"
    new = logdir / "plugins" / "profile" / "2030_01_01_00_00_00"
    for session in (old, new):
        session.mkdir(parents=True)
        shutil.copy(XPLANE, session / "host.xplane.pb")
    (new / "host.xplane.pb").write_bytes(b"")  # the newest is broken: it must be the one read
    with pytest.raises(TraceError, match="empty file"):
        load(logdir)
    assert len(load(logdir, session=old.name).events) > 0
    with pytest.raises(TraceError, match="no profile session 'nope'"):
        load(logdir, session="nope")


def test_partial_run_loads_what_is_there(sample_run_copy: Path):
    run = sample_run_copy
    shutil.rmtree(run / "plugins")
    (run / "pyspy" / "trace.json").unlink()
    loaded = load(run)
    assert loaded.events.empty and not loaded.samples.empty
    assert any(m.startswith("trace: none") for m in loaded.missing)
    assert any(m.startswith("py-spy: none") for m in loaded.missing)
    proc = tftrace("threads", run)
    assert proc.returncode == 0, proc.stderr
    assert "missing: trace: none" in proc.stdout


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


BAD_INPUTS = {
    "absent": (lambda d: d / "absent", "no such file or directory"),
    "empty-dir": (lambda d: _mkdir(d / "empty"), "empty directory"),
    "no-profile": (lambda d: _write(d / "x" / "notes.txt", b"hi").parent, "no profile found"),
    "empty-file": (lambda d: _write(d / "t.xplane.pb", b""), "empty file"),
    "text-file": (
        lambda d: _write(d / "t.xplane.pb", b"this is not a trace\n" * 50),
        "not a valid xplane trace",
    ),
    "truncated": (
        lambda d: _write(d / "t.xplane.pb", XPLANE.read_bytes()[:5000]),
        "not a valid xplane trace",
    ),
    "bad-json": (lambda d: _write(d / "m" / "manifest.json", b"{").parent, "not readable JSON"),
}


@pytest.mark.parametrize(("make", "message"), BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, make, message):
    path = make(tmp_path)
    with pytest.raises(TraceError, match=message):
        load(path)
    proc = tftrace("threads", path)
    assert proc.returncode == 2
    line = one_line_error(proc.stderr)
    assert message in line and str(path.name) in line


def test_a_trace_without_a_host_plane(tmp_path: Path):
    from tftrace.analysis.xplane.schema import XSpace

    space = XSpace()
    space.planes.add(name="/device:GPU:0", id=1)
    path = tmp_path / "gpu.xplane.pb"
    path.write_bytes(space.SerializeToString())
    with pytest.raises(TraceError, match="no /host:CPU plane"):
        load(path)
