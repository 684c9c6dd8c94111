"""``with tftrace.profile("runs/x"):``: record a block of the running program.

The same run directory as ``tftrace record``, from inside: the TF profiler and the thread
identity watcher run in this process (as the launched workload's bootstrap runs them),
the OS sampler and py-spy in a helper process (``attach.py``) that this process allows to
trace it. Bad use never stops the user's code: one line on stderr says what was not
recorded, and the block runs on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from . import manifest, rundir
from .child.own_account import allow_tracer, describe_tf, launched_into, new_report
from .child.profiler_window import ProfilerWindow
from .child.thread_identity import IdentityRecorder, IdentityWatcher, hook_python_threads
from .child.thread_libraries import ThreadLibraries
from .cluster_task import TaskError, expand_task
from .environment import clock_anchor
from .helper_configs import AttachConfig
from .helper_process import ask, end_helper, launch_helper
from .options import DEFAULT_RUNS_DIR, RecordOptions, Target
from .record_sources import chosen, disabled
from .run_end import finish_manifest
from .sources import SourceState, SourceStatus, states_from_json, unavailable

_active: list[Profile] = []  # the recording in progress (TF allows one profiler at a time)
_active_lock = threading.Lock()


def warn(message: str) -> None:
    print(f"tftrace: warning: {message}", file=sys.stderr, flush=True)


def this_program() -> Target:
    """What runs the block: the script (``sys.argv``), or an interactive session (IPython,
    Jupyter, ``python -c``, the REPL)."""
    ipython = sys.modules.get("IPython")
    interactive = ipython is not None and ipython.get_ipython() is not None
    argv0 = sys.argv[0] if sys.argv else ""
    if not interactive and argv0 and Path(argv0).is_file():
        return Target("code", argv0, tuple(sys.argv[1:]))
    return Target("code", "<interactive>")


class Profile:
    """A recording of the code between ``start()`` and ``stop()`` (or a ``with`` block);
    ``tftrace.profile`` makes one.

    ``path`` is the run directory once started (None when nothing is recorded);
    ``manifest`` the final manifest's dict after ``stop()``; ``recording`` whether it runs.

    Example::

        p = tftrace.Profile("runs/eval")
        p.start()
        model.evaluate(dataset)
        p.stop()
        run = tftrace.load(p.path)
    """

    def __init__(
        self,
        output: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        how: str = "profile",
        steps: tuple[int, int | None] | None = None,
        steps_counted: str | None = None,
        **options: Any,
    ) -> None:
        self.options = RecordOptions(
            target=this_program(),
            output=Path(output) if output is not None else None,
            name=name,
            steps=steps,
            **options,
        )
        self.how = how  # for the manifest's recording block: "profile", "keras"
        self.steps_counted = steps_counted  # what ``steps`` counts, when not the default
        self.recorded_steps: tuple[int, int] | None = None  # the steps the window held
        self.path: Path | None = None
        self.manifest: dict[str, Any] | None = None
        self._parts: _Parts | None = None

    def __enter__(self) -> Profile:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(exc)

    @property
    def recording(self) -> bool:
        return self._parts is not None

    def start(self) -> bool:
        """Start recording; False (after one line on stderr) when it cannot."""
        with _active_lock:
            if launched_into:
                run = launched_into[0]
                warn(
                    f"tftrace record ({run}) records this program already; this block is part of it"
                )
                return False
            if _active:
                where = _active[0].path
                warn(f"a recording is already running ({where}); this one is not recorded")
                return False
            _active.append(self)
        try:
            self._parts = _start(self)
        finally:
            if self._parts is None:
                with _active_lock:
                    _active.remove(self)
        return self._parts is not None

    def stop(self, exc: BaseException | None = None) -> None:
        """End the recording and write the run directory (nothing when not recording)."""
        parts, self._parts = self._parts, None
        if parts is None:
            return
        try:
            self.manifest = _finish(self, parts, exc)
            print(f"tftrace: recorded {self.path} (tftrace analyze {self.path})", file=sys.stderr)
        finally:
            with _active_lock:
                _active.remove(self)


class _Parts:
    """What a started recording holds until it stops."""

    def __init__(self, run: rundir.RunDir, data: dict[str, Any], env: dict[str, str]) -> None:
        self.run, self.data, self.env = run, data, env
        self.report: dict[str, Any] = {}
        self.identity: IdentityRecorder | None = None
        self.watcher: IdentityWatcher | None = None
        self.unhook: Any = None
        self.window: ProfilerWindow | None = None
        self.libraries = ThreadLibraries()
        self.helper: subprocess.Popen[str] | None = None
        self.statuses: dict[str, SourceStatus] = {}


def _start(profile: Profile) -> _Parts | None:
    options = profile.options
    path = options.output or rundir.default_run_path(DEFAULT_RUNS_DIR, options.name)
    try:
        path = Path(expand_task(str(path), os.environ))
        run = rundir.create(path)
    except (FileExistsError, OSError, TaskError) as e:
        warn(f"cannot create run directory {path} ({e}); the code runs unrecorded")
        return None
    profile.path = run.path
    env = dict(os.environ)
    data = manifest.initial(options, run, env, clock_anchor(), how=profile.how)
    if profile.steps_counted is not None:
        data["recording"]["steps_counted"] = profile.steps_counted
    rundir.write_json_atomic(run / rundir.MANIFEST, data)
    parts = _Parts(run, data, env)
    parts.report = new_report(data["target"])
    if options.thread_identity:
        parts.identity = IdentityRecorder()
        parts.unhook = hook_python_threads(parts.identity)
        parts.watcher = IdentityWatcher(parts.identity)
        parts.watcher.start()
    parts.helper = _start_helper(run, options, parts.statuses)
    parts.report["code_start_anchor"] = clock_anchor()
    parts.report["code_start_cpu_ns"] = time.process_time_ns()
    if options.tf_profiler:
        parts.window = ProfilerWindow(str(run.path), 0.0, None)
        parts.window.on_stop = lambda: parts.libraries.take("profiler window end")
        parts.window.arm()
        if parts.window.status.get("status") == "failed":
            error = parts.window.status.get("error")
            warn(f"the TF profiler did not start ({error}); recording without it")
    return parts


def _start_helper(
    run: rundir.RunDir, options: RecordOptions, statuses: dict[str, SourceStatus]
) -> subprocess.Popen[str] | None:
    if not any(chosen(options).values()):
        return None
    config = AttachConfig.of(run.path, os.getpid(), options)
    try:
        helper = launch_helper(config, run / rundir.ATTACH_CONFIG)
    except OSError as e:
        _helper_failed(options, statuses, str(e))
        return None
    allow_tracer(helper.pid)
    answer = ask(helper, "start")
    said, _, not_started = answer.partition(" ")
    if said != "started":
        _helper_failed(options, statuses, answer or "no answer")
        end_helper(helper)
        return None
    for line in unavailable(states_from_json(not_started) or {}):
        warn(line)
    return helper


def _helper_failed(options: RecordOptions, statuses: dict[str, SourceStatus], reason: str) -> None:
    warn(f"the sampler and py-spy did not start ({reason})")
    _without_helper(options, statuses, f"helper process: {reason}")


def _without_helper(options: RecordOptions, statuses: dict[str, SourceStatus], reason: str) -> None:
    """Each source the helper should have run and did not report: failed, for ``reason``."""
    for name, wanted in chosen(options).items():
        if wanted and name not in statuses:
            statuses[name] = SourceStatus(SourceState.FAILED, reason)


def _stop_helper(parts: _Parts, options: RecordOptions) -> None:
    if parts.helper is None:
        return
    answer = ask(parts.helper, "stop")
    end_helper(parts.helper)
    states = states_from_json(answer)
    if states is None:
        warn("the sampler and py-spy helper ended without reporting")
    parts.statuses.update(states or {})
    _without_helper(options, parts.statuses, "the helper process ended without reporting")


def _finish(profile: Profile, parts: _Parts, exc: BaseException | None) -> dict[str, Any]:
    report, run = parts.report, parts.run
    report["end_anchor"] = clock_anchor()
    report["code_end_cpu_ns"] = time.process_time_ns()
    if parts.window is not None:
        parts.window.stop()
        report["tf_profiler"] = parts.window.status
    if parts.watcher is not None and parts.identity is not None:
        parts.watcher.stop()
        parts.unhook()
        rundir.write_json_atomic(run / rundir.IDENTITY, parts.identity.to_json())
    _stop_helper(parts, profile.options)
    parts.libraries.take("end of recording")
    parts.libraries.write(run.path)
    describe_tf(report)
    report["interrupted"] = isinstance(exc, KeyboardInterrupt)
    if exc is not None and not isinstance(exc, KeyboardInterrupt):
        report["exception"] = {"type": type(exc).__qualname__, "message": str(exc)}
    report["exit_code"] = 0 if exc is None else 1
    report["finished_anchor"] = clock_anchor()
    rundir.write_json_atomic(run / rundir.WORKLOAD_REPORT, report)
    if profile.recorded_steps is not None:
        parts.data["recording"]["recorded_steps"] = list(profile.recorded_steps)
    parts.statuses.update(disabled(profile.options))
    return finish_manifest(
        parts.data, run, profile.options, parts.env, report, report["exit_code"], parts.statuses
    )


def profile(output: str | os.PathLike[str] | None = None, **options: Any) -> Profile:
    """Record the code of a ``with`` block into a run directory, as ``tftrace record`` would
    record a script: the TF profiler, the OS thread sampler, py-spy and thread identity.

    Args:
        output: the run directory to create (default: a new one under ``./tftrace-runs/``).
        options: ``name``, and any field of ``RecordOptions`` (``tf_profiler=False``,
            ``pyspy=False``, ``sampler=False``, ``sample_hz``, ``pyspy_rate``, ...).

    Returns:
        A ``Profile``, used as a context manager: after the block its ``path`` is the run
        directory (None when nothing was recorded) and its ``manifest`` the final manifest.

    Works in scripts, IPython and Jupyter. Bad use (a recording already running, an
    unwritable directory, a TF profiler someone else started) prints one line on stderr
    and the block runs unrecorded (or without the missing source).

    Example::

        import tftrace

        with tftrace.profile("runs/fit") as p:
            model.fit(dataset, epochs=1)
        print(tftrace.analyze(tftrace.load(p.path)))
    """
    return Profile(output, **options)
