"""The progress bar of the commands that read a run: on a terminal only, never in --json
output or a pipe, and only once the work has taken a moment (TFTRACE_PROGRESS_DELAY_S)."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from conftest import SAMPLE_RUN, quiet_env, tftrace_command
from tftrace.analysis.progress import ANALYZE_STAGES, LOAD_STAGES, reporting, stage

STAGES = (*LOAD_STAGES, *ANALYZE_STAGES)


def _on_a_terminal(*args: str, delay: str) -> str:
    """Run tftrace with stdout and stderr on a pseudo-terminal; all it wrote."""
    leader, follower = pty.openpty()
    env = quiet_env(TFTRACE_PROGRESS_DELAY_S=delay, COLUMNS="160")
    proc = subprocess.Popen(tftrace_command(*args), stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode(errors="replace")


def test_a_terminal_shows_the_stages_and_no_bar_before_the_delay():
    shown = _on_a_terminal("analyze", str(SAMPLE_RUN), delay="0")
    assert "core" in shown  # the report itself
    assert any(f"analysing {SAMPLE_RUN}: {name}" in shown for name in STAGES), shown[-2000:]
    quiet = _on_a_terminal("analyze", str(SAMPLE_RUN), delay="60")
    assert f"analysing {SAMPLE_RUN}:" not in quiet and "core" in quiet


def test_no_bar_in_json_or_a_pipe(tmp_path: Path):
    shown = _on_a_terminal("analyze", "--json", str(SAMPLE_RUN), delay="0")
    assert "analysing" not in shown
    piped = subprocess.run(
        tftrace_command("report", str(SAMPLE_RUN), "-o", tmp_path / "report.html"),
        capture_output=True,
        text=True,
        env=quiet_env(TFTRACE_PROGRESS_DELAY_S="0"),
    )
    assert piped.returncode == 0 and (tmp_path / "report.html").exists()
    assert "analysing" not in piped.stderr + piped.stdout


def test_stages_reach_a_listener_in_order():
    seen: list[str] = []
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.model.run import load

    stage("nobody listens")  # a no-op
    with reporting(seen.append):
        analyze(load(SAMPLE_RUN))
    assert tuple(seen) == STAGES
