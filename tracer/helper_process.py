"""Launching a helper process, and its protocol of one line each way.

``tftrace.profile`` (``in_process.py``) and ``tftrace.serve`` (``serve.py``) each run their
sources in a helper process, not in a thread of the program, whose GIL a sampler would take
100 times a second. Both launch it here: its typed config written to a file, then
``python -m MODULE CONFIG`` in a session of its own (a Ctrl-C in the terminal or the notebook
is for the user's code). A helper that hangs must never hang the program: every answer is
waited for a bounded time.
"""

from __future__ import annotations

import select
import subprocess
import sys
from pathlib import Path

from .helper_configs import HelperConfig
from .rundir import write_json_atomic

HELPER_TIMEOUT_S = 60.0


def launch_helper(config: HelperConfig, config_path: Path) -> subprocess.Popen[str]:
    """Write ``config`` to ``config_path`` and start its helper, which reads it from there
    (``OSError`` when neither can be done)."""
    write_json_atomic(config_path, config.to_json())
    return subprocess.Popen(
        [sys.executable, "-m", config.MODULE, str(config_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def answer(helper: subprocess.Popen[str], timeout_s: float = HELPER_TIMEOUT_S) -> str:
    """The helper's next line; empty when it ended or took longer than ``timeout_s``. It
    writes whole lines, so a line begun is read to its end."""
    assert helper.stdout is not None
    readable, _, _ = select.select([helper.stdout], [], [], timeout_s)
    return helper.stdout.readline().strip() if readable else ""


def ask(helper: subprocess.Popen[str], line: str) -> str:
    """Write a line to the helper and read its answer (empty: see ``answer``)."""
    assert helper.stdin is not None
    try:
        helper.stdin.write(line + "\n")
        helper.stdin.flush()
    except OSError:
        return ""
    return answer(helper)


def end_helper(helper: subprocess.Popen[str]) -> None:
    """Close its pipes (its stdin's end is the helper's cue to stop) and wait for it; killed
    when it does not end."""
    for stream in (helper.stdin, helper.stdout):
        if stream is not None:
            stream.close()
    try:
        helper.wait(timeout=10)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()
