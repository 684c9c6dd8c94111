"""py-spy source: samples the workload's Python threads (Eigen/BLAS workers are invisible to it).

py-spy attaches to the running workload (``--pid``) rather than launching it: if
py-spy is refused or crashes, the workload and the other sources go on. The
workload names the recorder as an allowed tracer (Yama), so a sibling py-spy may
attach. ``--nonblocking`` by default: blocking mode stops every thread of a TF
process for each sample and can slow it several-fold.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from .environment import clock_anchor
from .priority import policy_name
from .safe_files import open_new
from .sources import SourceState, SourceStatus


def find_pyspy() -> str | None:
    """py-spy next to this interpreter (a venv's bin), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    if beside.exists():
        return str(beside)
    return shutil.which("py-spy")


class PySpySource:
    name = "pyspy"
    attaches = True  # ptrace: once the workload has named its tracer (Yama)

    def __init__(
        self,
        trace_path: Path,
        log_path: Path,
        rate: int,
        native: bool,
        blocking: bool = False,
        executable: str | None = None,
    ) -> None:
        self.trace_path = trace_path
        self.log_path = log_path
        self.rate = rate
        self.native = native
        self.blocking = blocking
        self.executable = executable if executable is not None else find_pyspy()
        self._pid = 0  # the workload's
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._anchor: dict[str, int] | None = None
        self._policy = "unknown"  # its scheduling policy (see priority.py)

    def availability(self) -> str | None:
        if self.executable is None:
            return "py-spy executable not found (pip install py-spy)"
        if not shutil.which(self.executable):
            return f"py-spy executable not found or not executable: {self.executable}"
        return None

    def command(self, pid: int) -> list[str]:
        assert self.executable is not None
        cmd = [
            self.executable,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(self.rate),
            "--format",
            "chrometrace",
            "--threads",
            "--full-filenames",
            "--output",
            str(self.trace_path),
        ]
        if not self.blocking:
            cmd.append("--nonblocking")
        if self.native:
            cmd.append("--native")
        return cmd

    def start(self, pid: int) -> None:
        self._pid = pid
        self._log = open_new(self.log_path)  # closed in stop()
        self._anchor = clock_anchor()
        try:
            self._proc = subprocess.Popen(
                self.command(pid),
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                # Non-blocking samples race with the interpreter and ~10 % fail; with
                # RUST_BACKTRACE set (as developers often have it) each failure would also
                # unwind py-spy's stack to build a backtrace nobody reads. Panics still get
                # theirs.
                env={**os.environ, "RUST_LIB_BACKTRACE": "0"},
            )
        except OSError:
            self._log.close()
            raise
        self._policy = policy_name(self._proc.pid)

    def stop(self, timeout_s: float = 30.0) -> SourceStatus:
        """py-spy writes its trace as it ends: by itself once the workload has exited (a
        launched workload), on SIGINT while the workload runs on (a block recorded in code)."""
        proc = self._proc
        if proc is None:
            return SourceStatus(SourceState.FAILED, "py-spy was never started")
        if _runs(self._pid):
            _signal(proc, signal.SIGINT)
        cpu_s = _reap(proc, timeout_s)
        if cpu_s is None:
            _signal(proc, signal.SIGINT)  # py-spy writes what it has on SIGINT
            cpu_s = _reap(proc, 10)
        if cpu_s is None:
            _signal(proc, signal.SIGKILL)
            cpu_s = _reap(proc, 10)
        if self._log is not None:
            self._log.close()
        log = self.log_path.read_text(errors="replace")
        details: dict[str, Any] = {
            "command": [*self.command(0)[:1], "record", "..."],
            "rate": self.rate,
            "native": self.native,
            "nonblocking": not self.blocking,
            "scheduling": self._policy,
            "start_anchor": self._anchor,
            "exit_code": proc.returncode,
            "cpu_seconds": None if cpu_s is None else round(cpu_s, 4),
        }
        if self.trace_path.exists() and self.trace_path.stat().st_size > 0:
            details["samples_line"] = _last_line_with(log, "Samples:")
            return SourceStatus(SourceState.RECORDED, None, details)
        return SourceStatus(SourceState.FAILED, _failure_reason(log, proc.returncode), details)


def _runs(pid: int) -> bool:
    """Whether process ``pid`` exists (a launched workload is reaped before the sources
    stop, so its pid is gone by then)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Signal py-spy by its pid: ``Popen.send_signal`` would poll, and could reap it before
    ``_reap`` reads its CPU time. Until reaped, the pid stays py-spy's."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, sig)


def _reap(proc: subprocess.Popen[bytes], timeout_s: float) -> float | None:
    """Wait for py-spy to end; its user+system CPU seconds (the kernel's count), or None."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return float(usage.ru_utime + usage.ru_stime)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _last_line_with(text: str, needle: str) -> str | None:
    """The part of py-spy's last line that starts with ``needle`` ("Samples: 44 Errors: 0")."""
    lines = [ln[ln.index(needle) :].strip() for ln in text.splitlines() if needle in ln]
    return lines[-1] if lines else None


def _failure_reason(log: str, code: int | None) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        low = ln.lower()
        if "permission" in low or "ptrace" in low or "operation not permitted" in low:
            return (
                "py-spy was refused access to the workload (permission denied): it needs "
                "ptrace rights (root, CAP_SYS_PTRACE, or kernel.yama.ptrace_scope <= 1)"
            )
    tail = lines[-1] if lines else "no output"
    return f"py-spy wrote no trace (exit code {code}): {tail}"
