"""A sweep directory from someone else: `tftrace summary DIR` and `tftrace diff DIR` read its
sweep.json and its runs' files; any shape of them ends in output or one line (exit 2), never
a traceback. The sweep is built around copies of the checked-in sample run, so the control
case is read as a real sweep."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE_RUN, quiet_env

SETTING = {"intra": 2, "inter": 2, "env": {}, "cpus": None}


def _row(name: str, round_: int) -> dict[str, Any]:
    return {**SETTING, "round": round_, "wall_s": 5.0, "process_cpu_s": 6.0, "path": name}


def _sweep() -> dict[str, Any]:
    stats = {"runs": 2, "median_s": 0.01, "min_s": 0.01, "max_s": 0.01, "speedup": 1.0}
    return {
        "kind": "tftrace-sweep",
        "created": "2026-11-26T00:00:00+0000",
        "options": {"measure": "auto", "warmup_steps": 1, "objective": "throughput"},
        "target": ["train.py"],
        "cpus": 2,
        "settings": [{**SETTING, **stats, "is_baseline": True, "recorded_run": "runs/a"}],
        "runs": [_row("runs/a", 0), _row("runs/b", 1)],
    }


def _build(root: Path, data: Any) -> Path:
    sweep = root / "sweep"
    for name in ("a", "b"):
        shutil.copytree(SAMPLE_RUN, sweep / "runs" / name)
    (sweep / "sweep.json").write_text(json.dumps(data))
    return sweep


def _tftrace(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tftrace", *map(str, args)],
        env=quiet_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _mutated() -> dict[str, Any]:
    """Wrong shapes of sweep.json, each a field of the control replaced."""
    cases: dict[str, Any] = {}

    def case(name: str, change: Any) -> None:
        data = _sweep()
        change(data)
        cases[name] = data

    case("runs-a-string", lambda d: d.update(runs="x"))
    case("run-a-number", lambda d: d.update(runs=[5]))
    case("run-path-a-number", lambda d: d["runs"][0].update(path=5))
    case("run-without-round", lambda d: d["runs"][0].pop("round"))
    case("run-wall-a-string", lambda d: d["runs"][0].update(wall_s="soon"))
    case("run-out-of-the-sweep", lambda d: d["runs"][0].update(path="../../../etc"))
    case("no-baseline", lambda d: d.update(settings=[]))
    case("settings-a-dict", lambda d: d.update(settings={"a": 1}))
    case("intra-a-string", lambda d: d["runs"][0].update(intra="two"))
    case("env-a-list", lambda d: d["runs"][0].update(env=["X"]))
    case("measure-unknown", lambda d: d["options"].update(measure="bogus"))
    case("objective-unknown", lambda d: d["options"].update(objective=7))
    case("warmup-a-list", lambda d: d["options"].update(warmup_steps=[1]))
    case("options-a-list", lambda d: d.update(options=[1]))
    case("cpus-a-string", lambda d: d.update(cpus="many"))
    case("recorded-run-outside", lambda d: d["settings"][0].update(recorded_run="/etc"))
    case("copies-a-string", lambda d: d["runs"][0].update(copies="x"))
    return cases


@pytest.fixture(scope="module")
def control(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("control"), copy.deepcopy(_sweep()))


def test_the_control_is_read_as_a_sweep(control: Path) -> None:
    done = _tftrace("summary", control)
    assert done.returncode == 0, done.stderr
    assert "intra 2" in done.stdout


@pytest.mark.parametrize("name", sorted(_mutated()))
def test_a_damaged_sweep_is_one_line(tmp_path: Path, name: str) -> None:
    sweep = _build(tmp_path, _mutated()[name])
    for command in ("summary", "diff"):
        done = _tftrace(command, sweep)
        assert done.returncode in (0, 2), (command, done.stderr)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        if done.returncode == 2:
            lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("tftrace: error:"), (command, lines)
