"""``tftrace sweep`` end to end on real workloads whose answer is known by construction."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, NEEDS_QUIET_CORES, WORKLOADS, quiet_env, tftrace, tftrace_command

pytestmark = pytest.mark.slow


def sweep(out: Path, *args: str | Path) -> dict[str, Any]:
    done = tftrace("sweep", "-o", out, "--json", *args, timeout=900)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    assert json.loads((out / "sweep.json").read_text()) == data
    return data


def setting(data: dict[str, Any], intra: int | None, inter: int | None = None) -> dict[str, Any]:
    (row,) = [s for s in data["settings"] if (s["intra"], s["inter"]) == (intra, inter)]
    return row


def one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@NEEDS_QUIET_CORES
def test_steps_of_known_length(tmp_path: Path):
    """100 ms steps that use half a core on this machine's CPUs; the first call is excluded."""
    data = sweep(tmp_path / "s", "--intra", "1", "--repeat", "1", WORKLOADS / "timed_steps.py")
    (run,) = data["runs"]
    assert run["basis"] == "steady state over tf.function 'step' calls"
    assert run["steps"] == 5
    assert run["time_s"] == pytest.approx(0.1, rel=0.1)
    # Each step burns 50 ms of one thread's CPU (by that thread's clock), plus the runtime's
    # own small overhead: the process CPU per step, back from the utilisation.
    cpu_per_step = run["cpu_util"] * data["cpus"] * run["time_s"]
    assert 0.0495 <= cpu_per_step <= 0.06
    warm = sweep(
        tmp_path / "w",
        "--intra",
        "1",
        "--repeat",
        "1",
        "--warmup-steps",
        "3",
        WORKLOADS / "timed_steps.py",
    )
    (run,) = warm["runs"]
    assert run["steps"] == 3 and run["time_s"] == pytest.approx(0.1, rel=0.1)
    assert warm["options"]["warmup_steps"] == 3
    marker = sweep(
        tmp_path / "m",
        "--intra",
        "1",
        "--repeat",
        "1",
        "--marker",
        "measure",
        WORKLOADS / "timed_steps.py",
    )
    (run,) = marker["runs"]
    assert run["basis"].startswith("marker 'measure'") and run["steps"] is None
    assert run["time_s"] == pytest.approx(0.3, rel=0.1)
    assert run["cpu_util"] < 0.1  # it sleeps


@NEEDS_QUIET_CORES
def test_matmul_intra2_beats_intra1(tmp_path: Path):
    out = tmp_path / "s"
    data = sweep(
        out,
        "--intra",
        "1,2",
        "--inter",
        "1",
        "--repeat",
        "3",
        EXAMPLES / "matmul_scaling.py",
        "--size",
        "2000",
    )
    one, two = setting(data, 1, 1), setting(data, 2, 1)
    assert two["speedup"] >= 1.5, data["settings"]
    assert data["verdict"]["kind"] == "faster"
    assert data["verdict"]["recommended"] == {"intra": 2, "inter": 1}
    assert data["verdict"]["text"][0].startswith("Use intra 2 · inter 1")
    assert "Trace('product', step_num=...)" in data["timed"][0]
    # Both pools' workers run during a product at intra 2; the caller alone at intra 1.
    assert two["cpu_util"] > 0.8 and one["cpu_util"] < 0.6
    # Explained from the recorded runs: the baseline ran its ops inline.
    assert one["main_finding"] == "ops-run-inline"
    assert two["intra_concurrency"] > 1.3
    (why,) = [line for line in data["verdict"]["text"] if line.startswith("Why:")]
    assert "intra_op_parallelism_threads is 1: every op ran on the thread that called it" in why
    # Interleaved order: A B A B A B.
    names = sorted(p.name for p in (out / "runs").iterdir())
    assert [n.split("-", 1)[1] for n in names] == ["intra1-inter1", "intra2-inter1"] * 3
    assert (out / "speedup.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@NEEDS_QUIET_CORES
def test_python_bound_workload_shows_no_significant_difference(tmp_path: Path):
    # Five repeats each: two settings with the same time distribution come out "different"
    # (disjoint ranges) with probability 2 / C(10, 5) = 0.8 %, before the 3 % gain rule.
    data = sweep(
        tmp_path / "s", "--intra", "1,2", "--repeat", "5", WORKLOADS / "py_function_loop.py"
    )
    assert data["verdict"]["kind"] == "no-difference", data["settings"]
    text = " ".join(data["verdict"]["text"])
    assert "No significant difference" in text
    assert "Python" in text and "no thread setting" in text


def test_script_that_sets_its_own_pool_sizes(tmp_path: Path):
    # By default the sweep owns the pools: the script's calls are recorded, not applied.
    data = sweep(
        tmp_path / "d",
        "--intra",
        "2",
        "--repeat",
        "1",
        "--no-explain",
        WORKLOADS / "own_settings.py",
    )
    (run,) = data["runs"]
    assert (run["intra_effective"], run["inter_effective"]) == (2, data["cpus"])
    manifest = json.loads((tmp_path / "d" / run["path"] / "manifest.json").read_text())
    assert [c["applied"] for c in manifest["workload"]["setter_calls"]] == [False, False]
    assert data["warnings"] == [
        "the script calls set_intra_op_parallelism_threads(3), set_inter_op_parallelism_threads(1)"
        " itself: ignored, the sweep sets the pools; use --keep-script-settings to apply them"
    ]
    data = sweep(
        tmp_path / "s",
        "--intra",
        "1,2",
        "--repeat",
        "1",
        "--no-explain",
        "--keep-script-settings",
        WORKLOADS / "own_settings.py",
    )
    assert {r["intra_effective"] for r in data["runs"]} == {3}
    warnings = " ".join(data["warnings"])
    assert "set_intra_op_parallelism_threads(3) itself, which overrides" in warnings
    assert "compared one setting with itself" in warnings
    assert "--keep-script-settings" not in warnings


def test_script_whose_setter_comes_too_late(tmp_path: Path):
    data = sweep(
        tmp_path / "s",
        "--intra",
        "2",
        "--repeat",
        "1",
        "--no-explain",
        "--keep-script-settings",
        WORKLOADS / "late_setter.py",
    )
    assert [r["intra_effective"] for r in data["runs"]] == [2]  # the sweep's setting held
    assert any("after TensorFlow started" in w and "ignored" in w for w in data["warnings"])


def test_pasted_classic_experiment_runs_under_each_setting(tmp_path: Path):
    """The blog script calls set_intra_op_parallelism_threads(n) after ops ran, which raises
    in TF2. The sweep records those calls without applying them, so every run finishes under
    the setting swept, and the baseline's recording says why none helps: Python, under the GIL."""
    data = sweep(
        tmp_path / "s",
        "--intra",
        "1,2",
        "--repeat",
        "2",
        WORKLOADS / "classic_threads_experiment.py",
    )
    # 25 calls of 'graph' (1 that traces, 8 as it comes, 8 per n in 1, 2): 24 steady steps.
    assert [(r["intra"], r["intra_effective"], r["steps"]) for r in data["runs"]] == [
        (1, 1, 24),
        (2, 2, 24),
    ] * 2
    assert data["warnings"] == [
        "the script calls set_intra_op_parallelism_threads(1), set_intra_op_parallelism_threads(2)"
        " itself: ignored, the sweep sets the pools; use --keep-script-settings to apply them"
    ]
    assert setting(data, 1)["main_finding"] == "python-bound"
    (why,) = [line for line in data["verdict"]["text"] if line.startswith("Why:")]
    assert "of the time is Python" in why and "under the GIL" in why, why


def test_auto_ladder_and_settings_beyond_the_cpus(tmp_path: Path):
    data = sweep(
        tmp_path / "s",
        "--repeat",
        "1",
        "--no-explain",
        "--measure",
        "script",
        WORKLOADS / "timed_steps.py",
        "2",
    )
    cpus = data["cpus"]
    intras = [s["intra"] for s in data["settings"]]
    assert intras[-1] > cpus and cpus in intras and intras[0] == 1
    assert data["runs"][0]["basis"] == "the whole script"
    assert any(f"than the {cpus} CPUs" in w for w in data["warnings"])
    assert data["verdict"]["kind"] == "too-few-runs"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("missing.py",), "script not found"),
        (("--intra", "1,x", "timed_steps.py"), "not a number"),
        (("--repeat", "0", "timed_steps.py"), "--repeat"),
        (("--baseline", "7,7", "timed_steps.py"), "not one of the settings"),
        (("--marker", "m", "--measure", "process", "timed_steps.py"), "--marker"),
        (("timed_steps.py", "--intra", "1,2"), "put sweep options first"),
    ],
)
def test_bad_arguments(tmp_path: Path, args: tuple[str, ...], message: str):
    done = tftrace("sweep", "-o", tmp_path / "s", *args, cwd=WORKLOADS)
    assert done.returncode == 2
    assert message in one_line_error(done.stderr)
    assert not (tmp_path / "s").exists()


def test_crashing_workload_and_missing_marker(tmp_path: Path):
    done = tftrace("sweep", "-o", tmp_path / "c", "--intra", "1", WORKLOADS / "raises.py")
    assert done.returncode == 2
    line = one_line_error(done.stderr)
    assert "exited with code 1" in line and "ValueError: workload failed on purpose" in line
    assert (
        "ValueError"
        in (tmp_path / "c/runs/001-intra1-interdefault/workload/stderr.log").read_text()
    )
    done = tftrace(
        "sweep",
        "-o",
        tmp_path / "m",
        "--intra",
        "1",
        "--marker",
        "absent",
        WORKLOADS / "timed_steps.py",
        "2",
    )
    assert done.returncode == 2
    assert "Trace('absent') never ran" in one_line_error(done.stderr)


def test_interrupted_sweep_keeps_what_it_measured(tmp_path: Path):
    out = tmp_path / "s"
    proc = subprocess.Popen(
        tftrace_command(
            "sweep",
            "-o",
            out,
            "--intra",
            "1,2",
            "--repeat",
            "10",
            "--no-explain",
            WORKLOADS / "timed_steps.py",
            "3",
        ),
        env=quiet_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while len(list(out.glob("runs/*/workload/steps.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    data = json.loads((out / "sweep.json").read_text())
    # Runs that finished before the signal are kept; the one it cut short is not.
    assert 1 <= len(data["runs"]) < 20
    assert any(w.startswith("interrupted after") for w in data["warnings"])
    assert "Traceback" not in stderr


def test_module_target_without_steps_times_the_script(tmp_path: Path):
    done = tftrace(
        "sweep",
        "-o",
        tmp_path / "s",
        "--json",
        "--intra",
        "1",
        "--repeat",
        "1",
        "--no-explain",
        "-m",
        "invocation_pkg",
        tmp_path / "invocation.json",
        cwd=WORKLOADS,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["target"] == ["-m", "invocation_pkg", str(tmp_path / "invocation.json")]
    assert json.loads((tmp_path / "invocation.json").read_text())["name"] == "__main__"
    assert data["runs"][0]["basis"] == "the whole script (no steps seen)"
    assert data["unit"] == "s"


def test_record_adds_each_settings_analysis(tmp_path: Path):
    out = tmp_path / "s"
    data = sweep(out, "--intra", "1,2", "--repeat", "1", "--record", WORKLOADS / "timed_steps.py")
    for row in data["settings"]:
        assert (out / row["recorded_run"] / "manifest.json").exists()
        assert (
            row["concurrency_over"].startswith("the steady steps (")
            and "step)" in row["concurrency_over"]
        )
        # Each step is Python under the GIL: no Eigen worker has anything to do.
        assert row["intra_concurrency"] == pytest.approx(0.0, abs=0.05)
        assert row["main_finding"] == "python-bound"
    # The sweep directory is self-describing: summary shows the same result again.
    shown = tftrace("summary", out)
    assert shown.returncode == 0, shown.stderr
    for row in data["settings"]:
        assert f"{row['median_s']:.4g}" in shown.stdout
    assert data["verdict"]["text"][0][:40] in shown.stdout
    assert shown.stdout.count("python-bound") == 2


def test_summary_of_a_damaged_sweep_directory(tmp_path: Path):
    (tmp_path / "sweep.json").write_text("{}")
    done = tftrace("summary", tmp_path)
    assert done.returncode == 2
    assert "not a sweep directory" in one_line_error(done.stderr)


def test_an_eager_dataset_loop_is_timed_by_its_passes_not_its_script(tmp_path: Path):
    """A loop over a dataset with no tf.function: its passes (50 ms each, by construction)
    are the steps, the 0.5 s after the loop is not; the known answer is the workload's own
    clock at the top of each pass."""
    data = sweep(tmp_path / "s", "--intra", "1", "--repeat", "1", WORKLOADS / "dataset_loop.py")
    (run,) = data["runs"]
    assert run["basis"] == "steady state over a tf.data loop's passes (next() on the main thread)"
    assert run["steps"] == 7  # 8 elements, the first pass starting the pipeline left out
    out = (tmp_path / "s" / run["path"] / "workload" / "stdout.log").read_text()
    line = next(ln for ln in out.splitlines() if ln.startswith("OWN_PASSES="))
    own = json.loads(line.removeprefix("OWN_PASSES="))
    # from the first element's arrival to the last's, over the passes between
    assert run["time_s"] == pytest.approx((own[-1] - own[0]) / 1e9 / 7, rel=0.01)
    assert run["time_s"] == pytest.approx(0.05, rel=0.2)  # sleeps: no quiet cores needed
