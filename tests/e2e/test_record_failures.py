"""Bad input and failing workloads: one clear line, the right exit code, nothing recorded lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, WORKLOADS, host_lines, quiet_env, tftrace, tftrace_command

pytestmark = [pytest.mark.slow, pytest.mark.side_by_side]  # times nothing


def one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_workload_exception_is_recorded_and_trace_kept(record):
    done = record(WORKLOADS / "raises.py")
    assert done.returncode == 1
    assert "ValueError: workload failed on purpose" in done.stderr
    # Python's traceback, without the recorder's own frames.
    assert "raises.py" in done.stderr and "bootstrap.py" not in done.stderr
    assert "runpy" not in done.stderr  # "<frozen runpy>" since Python 3.11
    m = done.manifest()
    assert m["status"] == "complete"
    assert m["workload"]["exception"]["type"] == "ValueError"
    assert m["workload"]["exception"]["message"] == "workload failed on purpose"
    assert m["workload"]["exit_code"] == 1
    assert m["sources"]["tf_profiler"]["state"] == "recorded"
    assert sum(n for _, _, n in host_lines(done.run)) > 0
    assert "about to fail" in (done.run / "workload/stdout.log").read_text()
    assert "ValueError" in (done.run / "workload/stderr.log").read_text()


def test_sys_exit_code_is_passed_on(record):
    done = record(WORKLOADS / "exits_3.py", options=("--no-pyspy",))
    assert done.returncode == 3, done.stderr
    m = done.manifest()
    assert m["workload"]["exit_code"] == 3 and m["workload"]["exception"] is None
    assert m["sources"]["tf_profiler"]["state"] == "recorded"


def test_missing_script(tmp_path: Path):
    proc = tftrace("record", "-o", tmp_path / "run", tmp_path / "nope.py")
    assert proc.returncode == 2
    assert "script not found" in one_line_error(proc.stderr)
    assert not (tmp_path / "run").exists()


def test_module_that_cannot_be_imported(tmp_path: Path):
    proc = tftrace("record", "--no-pyspy", "-o", tmp_path / "run", "-m", "no_such_module_xyz")
    assert proc.returncode == 2
    assert "no_such_module_xyz" in one_line_error(proc.stderr)
    assert not (tmp_path / "run").exists()


def test_no_target(tmp_path: Path):
    proc = tftrace("record", "-o", tmp_path / "run")
    assert proc.returncode == 2
    one_line_error(proc.stderr)


def _installed_layout(tmp_path: Path) -> Path:
    """The tftrace package as installed, as a tree of links an interpreter can import."""
    tree = tmp_path / "site" / "tftrace"
    tree.mkdir(parents=True)
    for item in (ROOT / "src" / "tftrace").iterdir():
        if item.suffix == ".py" or (item / "__init__.py").exists():
            (tree / item.name).symlink_to(item)
    (tree / "tracer").symlink_to(ROOT / "tracer")
    (tree / "analysis").symlink_to(ROOT / "analysis")
    return tree.parent


def test_tensorflow_not_importable(tmp_path: Path):
    # The base interpreter this test environment was made from has no TensorFlow.
    base = Path(sys._base_executable)  # type: ignore[attr-defined]
    probe = subprocess.run([base, "-c", "import tensorflow"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the base interpreter has TensorFlow")
    env = quiet_env(PYTHONPATH=str(_installed_layout(tmp_path)))
    script = tmp_path / "w.py"
    script.write_text("print('hi')\n")
    proc = subprocess.run(
        [base, "-m", "tftrace", "record", "-o", str(tmp_path / "run"), script],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "TensorFlow is not importable" in one_line_error(proc.stderr)


def test_pyspy_absent_run_goes_on(record, tmp_path: Path):
    done = record(WORKLOADS / "exits_3.py", options=("--pyspy-path", str(tmp_path / "no-py-spy")))
    assert done.returncode == 3
    m = done.manifest()
    assert m["sources"]["pyspy"]["state"] == "unavailable"
    assert "not found" in m["sources"]["pyspy"]["reason"]
    assert m["sources"]["tf_profiler"]["state"] == "recorded"
    assert m["sources"]["os_sampler"]["state"] == "recorded"


def _setpriv() -> str | None:
    from shutil import which

    return which("setpriv")


@pytest.mark.skipif(os.geteuid() != 0 or _setpriv() is None, reason="needs root and setpriv")
def test_pyspy_refused_run_goes_on(tmp_path: Path):
    """A real refusal: without CAP_SYS_PTRACE nobody may read a non-dumpable process."""
    script = tmp_path / "hardened.py"
    script.write_text(
        "import ctypes, time\n"
        "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE=0, as hardened services do\n"
        "import tensorflow as tf\n"
        "end = time.monotonic() + 2\n"
        "while time.monotonic() < end:\n"
        "    tf.matmul(tf.ones((200, 200)), tf.ones((200, 200)))\n"
    )
    run = tmp_path / "run"
    proc = subprocess.run(
        [_setpriv(), "--bounding-set=-sys_ptrace", *tftrace_command("record", "-o", run, script)],
        capture_output=True,
        text=True,
        env=quiet_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    m = json.loads((run / "manifest.json").read_text())
    assert m["sources"]["pyspy"]["state"] == "failed"
    assert "permission denied" in m["sources"]["pyspy"]["reason"]
    assert m["sources"]["tf_profiler"]["state"] == "recorded"
    assert m["sources"]["os_sampler"]["state"] == "recorded"
    assert "pyspy            failed" in proc.stderr


@pytest.mark.parametrize(
    ("target", "cwd"),
    [((str(WORKLOADS / "show_invocation.py"),), None), (("-m", "invocation_pkg"), WORKLOADS)],
    ids=["script", "module"],
)
def test_invocation_matches_python(tmp_path: Path, record, target, cwd):
    """sys.argv, __name__, __file__, cwd and sys.path[0] as under plain python."""
    cwd = cwd or tmp_path
    out, plain = tmp_path / "seen.json", tmp_path / "plain.json"
    options = ("--no-tf-profiler", "--no-pyspy")
    done = record(*target, str(out), "--flag", options=options, cwd=cwd)
    assert done.returncode == 0, done.stderr
    subprocess.run([sys.executable, *target, str(plain), "--flag"], cwd=cwd, check=True)
    seen, expected = json.loads(out.read_text()), json.loads(plain.read_text())
    expected["argv"][1] = str(out)
    assert seen == expected


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "no such run directory"),
        (lambda d: d.mkdir(), "no manifest.json"),
        (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{not json")), "not readable JSON"),
        (
            lambda d: (d.mkdir(), (d / "manifest.json").write_text('{"kind": "x"}')),
            "not a tftrace manifest",
        ),
    ],
)
def test_summary_of_bad_run_directory(tmp_path: Path, setup, message):
    run = tmp_path / "run"
    setup(run)
    proc = tftrace("summary", run)
    assert proc.returncode == 2
    assert message in one_line_error(proc.stderr)


def test_workload_killed_keeps_what_the_recorder_saw(record):
    done = record(WORKLOADS / "kills_itself.py", options=("--no-pyspy",))
    assert done.returncode == 128 + 9
    m = done.manifest()
    assert m["status"] == "crashed"
    assert m["workload"]["signal"] == 9
    assert "missing" in m["workload"]["report"]
    assert m["sources"]["tf_profiler"]["state"] == "failed"
    assert "died" in m["sources"]["tf_profiler"]["reason"]
    assert m["sources"]["os_sampler"]["state"] == "recorded"
    assert list((done.run / "os_threads").glob("samples-*.npz"))


def test_default_output_directory_uses_the_name(tmp_path: Path):
    proc = tftrace(
        "record",
        "--name",
        "probe",
        "--no-tf-profiler",
        "--no-pyspy",
        WORKLOADS / "show_invocation.py",
        tmp_path / "seen.json",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = (tmp_path / "tftrace-runs").iterdir()
    assert run.name.endswith("-probe")
    assert json.loads((run / "manifest.json").read_text())["name"] == "probe"
