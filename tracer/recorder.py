"""``record()``: run a workload under every available source and write one run directory."""

from __future__ import annotations

import importlib.util
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.errors import TftraceError

from . import manifest, rundir
from .cluster_task import TaskError, expand_task
from .environment import clock_anchor
from .helper_configs import WorkloadConfig
from .manifest_reader import Manifest
from .options import DEFAULT_RUNS_DIR, RecordOptions
from .record_sources import build, disabled
from .run_end import finish_manifest
from .rundir import RunDir
from .sources import running, unavailable
from .step_range import window_problem
from .tee import Tee

READY_TIMEOUT_S = 60.0


class RecordError(TftraceError):
    """Bad input that stops a recording before it starts (one line for the user)."""


@dataclass(frozen=True)
class RecordResult:
    """What ``tftrace.record`` did: ``run`` (its ``path`` is the run directory), the
    workload's ``exit_code`` (128 + signal when interrupted) and the ``manifest`` written.

    Example::

        result = tftrace.record("train.py", ["--epochs", "1"])
        if result.exit_code == 0:
            print(tftrace.analyze(tftrace.load(result.run.path)))
    """

    run: RunDir
    exit_code: int
    manifest: Manifest


def check_target(options: RecordOptions) -> None:
    target = options.target
    if target.kind == "script":
        path = Path(target.value)
        if not path.exists():
            raise RecordError(f"script not found: {target.value}")
        if path.is_dir():
            raise RecordError(f"script is a directory, not a Python file: {target.value}")
    if options.tf_profiler and importlib.util.find_spec("tensorflow") is None:
        raise RecordError(
            f"TensorFlow is not importable by {sys.executable} "
            "(install it, or record without it: --no-tf-profiler)"
        )


class _Interrupts:
    """Ctrl-C / SIGTERM: ask the workload to stop (it flushes the trace); twice: kill it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.forced = False
        self.proc: subprocess.Popen[bytes] | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        with _ACTIVE_LOCK:
            _ACTIVE.add(self)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(self)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def ask_stop(self) -> None:
        """Ctrl-C for a recording on another thread, which signals never reach: the
        workload is asked to stop, and the recording ends as an interrupted one."""
        if self.signum is None:
            self.signum = signal.SIGINT
            proc = self.proc
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)

    def _handle(self, signum: int, frame: Any) -> None:
        proc = self.proc
        if self.signum is None:
            self.signum = signum
            print(
                "\ntftrace: stopping the workload and flushing the trace "
                "(press Ctrl-C again to kill it)",
                file=sys.stderr,
            )
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        else:
            self.forced = True
            if proc is not None and proc.poll() is None:
                proc.kill()


_ACTIVE: set[_Interrupts] = set()  # the recordings under way in this process
_ACTIVE_LOCK = threading.Lock()


def interrupt_recordings() -> None:
    """Ask every workload this process is recording to stop, as Ctrl-C does: for recordings
    run on threads other than the main one (a sweep's copies run at once)."""
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    for interrupts in active:
        interrupts.ask_stop()


def record(options: RecordOptions) -> RecordResult:
    steps_problem = window_problem(options)
    if steps_problem is not None:
        raise RecordError(steps_problem)
    check_target(options)
    env = dict(os.environ)
    for key, value in options.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    path = options.output or rundir.default_run_path(DEFAULT_RUNS_DIR, options.name)
    try:
        path = Path(expand_task(str(path), env))
        run = rundir.create(path)
    except TaskError as e:
        raise RecordError(f"cannot name the run directory: {e}") from None
    except (FileExistsError, OSError) as e:
        raise RecordError(f"cannot create run directory {path}: {e}") from None
    env["PYTHONUNBUFFERED"] = "1"  # output reaches the terminal live through our pipe
    start_anchor = clock_anchor()
    data = manifest.initial(options, run, env, start_anchor)
    rundir.write_json_atomic(run / rundir.MANIFEST, data)

    statuses = disabled(options)
    sources = build(run, options)

    ready_r, ready_w = os.pipe()
    config = WorkloadConfig.of(run.path, options, ready_w)
    rundir.write_json_atomic(run / rundir.CHILD_CONFIG, config.to_json())

    interrupts = _Interrupts()
    interrupts.install()
    # The sources stop as this block ends: after the signal handlers are restored (a Ctrl-C
    # while py-spy writes its trace is not the workload's).
    with ExitStack() as sources_run:
        try:
            proc = _launch_workload(run, env, ready_w, options.cpu_affinity)
            os.close(ready_w)
            interrupts.proc = proc
            if interrupts.signum is not None:  # a signal arrived before the child existed
                proc.send_signal(signal.SIGINT)
            assert proc.stdout is not None and proc.stderr is not None
            out = sys.stdout.buffer if options.echo else None
            err = sys.stderr.buffer if options.echo else None
            tees = [
                Tee(proc.stdout, out, run / rundir.STDOUT_LOG),
                Tee(proc.stderr, err, run / rundir.STDERR_LOG),
            ]
            for tee in tees:
                tee.start()
            # py-spy attaches once the workload has named us its tracer, as it says "ready".
            states = sources_run.enter_context(
                running(sources, proc.pid, allowed=lambda: _wait_ready(ready_r, proc))
            )
            for line in unavailable(states):
                print(f"tftrace: warning: {line}", file=sys.stderr)
            returncode = _wait(proc, interrupts, options.stop_grace_s)
            for tee in tees:
                tee.join()
        finally:
            interrupts.restore()
            os.close(ready_r)
    statuses.update(states)
    report = rundir.read_json_or_none(run / rundir.WORKLOAD_REPORT)
    if report is not None and report.get("setup_error") and _nothing_recorded(run):
        shutil.rmtree(run.path, ignore_errors=True)
        raise RecordError(report["setup_error"])
    final = finish_manifest(
        data, run, options, env, report, returncode, statuses, interrupts.signum, interrupts.forced
    )
    return RecordResult(run, _exit_code(returncode, interrupts), Manifest.from_json(final))


def _launch_workload(
    run: RunDir, env: dict[str, str], ready_fd: int, cpus: tuple[int, ...] | None = None
) -> subprocess.Popen[bytes]:
    """The workload's process; pinned to ``cpus`` from its first instruction when given.

    Linux keeps a CPU affinity per thread, and a new process inherits the one of the thread
    that forks it: this thread takes the workload's CPUs for the moment of the fork and then
    its own back. So the pinning is in place before the exec (TF sizes its pools by it), with
    no Python code run in the child (``preexec_fn`` is unsafe beside other threads)."""
    config = str((run / rundir.CHILD_CONFIG).resolve())
    own = os.sched_getaffinity(0) if cpus is not None else None
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "tftrace.tracer.child.bootstrap", config],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(ready_fd,),
            env=env,
            start_new_session=True,  # our Ctrl-C handling decides what the workload receives
        )
    finally:
        if own is not None:
            os.sched_setaffinity(0, own)


def _wait_ready(fd: int, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            return os.read(fd, 64).startswith(b"ready")
        if proc.poll() is not None:
            return False
    return False


def _wait(proc: subprocess.Popen[bytes], interrupts: _Interrupts, grace_s: float) -> int:
    while True:
        try:
            return proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        if interrupts.signum is not None and not interrupts.forced:
            try:
                return proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                print("tftrace: the workload did not stop in time; killing it", file=sys.stderr)
                proc.kill()
                return proc.wait()


def _nothing_recorded(run: RunDir) -> bool:
    return not run.xplane_files() and not (run / rundir.PYSPY_TRACE).exists()


def _exit_code(returncode: int, interrupts: _Interrupts) -> int:
    if interrupts.signum is not None:
        return 128 + interrupts.signum
    if returncode < 0:
        return 128 - returncode
    return returncode
