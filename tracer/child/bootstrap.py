"""Entry point of the workload process: ``python -m tftrace.tracer.child.bootstrap CONFIG``.

Runs the user's script or module the way ``python`` would (``sys.argv``,
``__main__``, ``sys.path[0]``, exit code), with the TF profiler window and the
thread-identity watcher around it, and writes ``workload/report.json`` whatever
way the workload ends.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import signal
import sys
import time
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from ..environment import clock_anchor
from ..helper_configs import WorkloadConfig
from ..rundir import IDENTITY, STEPS, WORKLOAD_REPORT, write_json_atomic
from . import setter_calls
from .own_account import allow_tracer, describe_tf, launched_into, new_report
from .profiler_window import ProfilerWindow
from .step_timer import StepTimer
from .step_window import StepWindow
from .thread_identity import IdentityRecorder, IdentityWatcher, hook_python_threads
from .thread_libraries import ThreadLibraries

SETUP_ERROR_EXIT = 2


class SetupError(Exception):
    """The target cannot be started (module not found): the recorder reports it in one line."""


def _signal_ready(fd: int | None) -> None:
    if fd is None:
        return
    try:
        os.write(fd, f"ready {os.getpid()}\n".encode())
        os.close(fd)
    except OSError:
        pass


def _sigterm_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """Drop tftrace's own frames (the bootstrap, runpy, the setter wrapper) wherever they are in
    the chain, as python's traceback would not show them."""
    ours = {os.path.abspath(f) for f in (__file__, runpy.__file__, setter_calls.__file__)}
    # runpy is frozen since 3.11: its frames name "<frozen runpy>", not its file.
    frozen = runpy.run_path.__code__.co_filename

    def is_ours(t: TracebackType) -> bool:
        name = t.tb_frame.f_code.co_filename
        return name == frozen or os.path.abspath(name) in ours

    kept: list[TracebackType] = []
    while tb is not None:
        if not is_ours(tb):
            kept.append(tb)
        tb = tb.tb_next
    for t, after in zip(kept, [*kept[1:], None], strict=True):
        t.tb_next = after
    return kept[0] if kept else None


def check_module(target: dict[str, Any]) -> None:
    """Fail before anything starts if ``-m NAME`` cannot be found (python's own check)."""
    if target["kind"] != "module":
        return
    module = target["value"]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as e:
        raise SetupError(f"cannot import module {module!r}: {e}") from None
    if spec is None:
        raise SetupError(f"no module named {module!r}")


def run_target(target: dict[str, Any]) -> dict[str, Any]:
    """Run the workload; its module's globals, which the caller keeps until the profiler has
    stopped, so that the workload's TensorFlow objects are not torn down while the profiler
    collects their threads' events."""
    args = list(target["args"])
    if target["kind"] == "script":
        script = os.path.abspath(target["value"])
        sys.argv = [target["value"], *args]
        sys.path[0] = os.path.dirname(script)
        return runpy.run_path(script, run_name="__main__")
    sys.argv = [target["value"], *args]  # run_module puts the file in argv[0], as python -m
    return runpy.run_module(target["value"], run_name="__main__", alter_sys=True)


def _exit_code_of(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(config_path: str) -> int:
    config = WorkloadConfig.read(Path(config_path))
    run_dir = Path(config.run_dir)
    report = new_report(config.target())
    try:
        check_module(config.target())
    except SetupError as e:
        report["setup_error"] = str(e)
        write_json_atomic(run_dir / WORKLOAD_REPORT, report)
        return SETUP_ERROR_EXIT
    allow_tracer(os.getppid())  # the recorder, whose child py-spy is
    launched_into.append(str(run_dir))
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)

    identity = IdentityRecorder()
    watcher: IdentityWatcher | None = None
    if config.thread_identity:
        hook_python_threads(identity)
        watcher = IdentityWatcher(identity)
        watcher.start()

    window: ProfilerWindow | None = None
    timer: StepTimer | None = None
    profiling = config.tf_profiler
    if profiling or config.step_timer:
        try:
            setter_calls.install(report["setter_calls"], apply=config.keep_script_settings)
        except Exception as e:
            report["setter_calls_error"] = f"{type(e).__name__}: {e}"
    libraries = ThreadLibraries()
    if profiling:
        window = ProfilerWindow(str(run_dir), config.delay_s, config.duration_s)
        window.on_stop = lambda: libraries.take("profiler window end")
    step_window = None
    if window is not None and config.first_step is not None:
        step_window = StepWindow(window, (config.first_step, config.end_step))
    if config.step_timer or step_window is not None:
        timer = StepTimer(
            config.step_marker,
            keep_rows=config.step_timer,
            on_begin=step_window.begin if step_window else None,
            on_end=step_window.end if step_window else None,
        )
        try:
            timer.install()
        except Exception as e:
            timer.errors.append(f"{type(e).__name__}: {e}")
    _signal_ready(config.ready_fd)
    # --delay counts from here: the workload's own code, after the recorder's set-up.
    report["code_start_anchor"] = clock_anchor()
    report["code_start_cpu_ns"] = time.process_time_ns()
    if window is not None and step_window is None:
        window.arm()

    exit_code = 0
    interrupted = False
    namespace: dict[str, Any] = {}
    try:
        namespace = run_target(config.target())
    except SystemExit as e:
        exit_code = _exit_code_of(e)
    except KeyboardInterrupt:
        interrupted = True
        exit_code = 128 + signal.SIGINT
    except BaseException as e:  # the workload's own failure: shown as python shows it
        e.with_traceback(_user_traceback(e.__traceback__))
        report["exception"] = {
            "type": type(e).__qualname__,
            "message": str(e),
            "traceback": traceback.format_exception(e),
        }
        sys.excepthook(type(e), e, e.__traceback__)
        exit_code = 1
    finally:
        # A second Ctrl-C must not cut the profiler's flush short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        report["end_anchor"] = clock_anchor()
        report["code_end_cpu_ns"] = time.process_time_ns()
        if step_window is not None:
            step_window.finish(timer.errors if timer else [])
        if window is not None:
            window.stop()
            report["tf_profiler"] = window.status
        if watcher is not None:
            watcher.stop()
            write_json_atomic(run_dir / IDENTITY, identity.to_json())
        if timer is not None and config.step_timer:
            write_json_atomic(run_dir / STEPS, timer.to_json(), indent=None)
        libraries.take("end of run")
        libraries.write(run_dir)
        describe_tf(report)
        report["interrupted"] = interrupted
        report["exit_code"] = exit_code
        report["finished_anchor"] = clock_anchor()
        write_json_atomic(run_dir / WORKLOAD_REPORT, report)
    namespace.clear()  # the workload's objects go now, with the profiler stopped
    sys.stdout.flush()
    sys.stderr.flush()
    if interrupted:
        # Die by SIGINT, as python does on an uncaught KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    return exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
