"""The config of each helper process, typed: written by the program that launches it
(``helper_process.launch_helper``; the recorder for the workload's own process), read back by
the helper (``attach.py``, ``serve_helper.py``, ``child/bootstrap.py``). A config that lacks a
field, has one too many or one of the wrong type is refused in one line (a helper of another
tftrace version, a damaged file)."""

from __future__ import annotations

import json
import types
import typing
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tftrace.errors import TftraceError

from .options import RecordOptions

C = TypeVar("C", bound="HelperConfig")


class ConfigError(TftraceError, ValueError):
    """A helper's config that cannot be used (one line)."""


@dataclass(frozen=True)
class HelperConfig:
    """The JSON of a helper's config: its fields, by name, in their order."""

    MODULE: ClassVar[str]  # what runs it: python -m MODULE CONFIG

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls: type[C], data: Any) -> C:
        name = cls.__name__
        if not isinstance(data, dict):
            raise ConfigError(f"{name}: a JSON object expected, not {type(data).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in data if k not in known)
        missing = [k for k in known if k not in data]
        if unknown or missing:
            said = [f"unknown {', '.join(unknown)}"] if unknown else []
            said += [f"missing {', '.join(missing)}"] if missing else []
            raise ConfigError(f"{name}: {'; '.join(said)}")
        hints = typing.get_type_hints(cls)
        values = {}
        for key in known:
            value = data[key]
            if not _fits(hints[key], value):
                raise ConfigError(f"{name}.{key}: {value!r} is not {_spelled(hints[key])}")
            values[key] = float(value) if hints[key] is float else value
        return cls(**values)

    @classmethod
    def read(cls: type[C], path: Path) -> C:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"{cls.__name__}: cannot read {path}: {e}") from None
        return cls.from_json(data)


def _fits(hint: Any, value: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(arg, value) for arg in typing.get_args(hint))
    if origin is list:  # list[X]: a JSON array of X
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_fits(item, v) for v in value)
    if hint is type(None):
        return value is None
    if isinstance(value, bool):  # a bool is an int to Python, never a number here
        return hint is bool
    if hint is float:
        return isinstance(value, (int, float))
    return isinstance(hint, type) and isinstance(value, hint)


def _spelled(hint: Any) -> str:
    """A type as the JSON's reader says it: ``str or null``."""
    if hint is type(None):
        return "null"
    args = typing.get_args(hint)
    if typing.get_origin(hint) is list:
        return f"a list of {_spelled(args[0])}"
    return " or ".join(_spelled(a) for a in args) if args else getattr(hint, "__name__", "?")


@dataclass(frozen=True)
class AttachConfig(HelperConfig):
    """``tftrace.profile``'s helper (``attach.py``): the OS sampler and py-spy against
    ``pid``, written into the run directory ``run_dir`` (its ``workload/attach.json``)."""

    MODULE: ClassVar[str] = "tftrace.tracer.attach"

    run_dir: str
    pid: int
    sampler: bool
    sample_hz: float
    machine_hz: float
    pyspy: bool
    pyspy_rate: int
    pyspy_native: bool
    pyspy_blocking: bool
    pyspy_path: str | None

    @classmethod
    def of(cls, run_dir: Path, pid: int, options: RecordOptions) -> AttachConfig:
        return cls(
            str(run_dir.resolve()),
            pid,
            options.sampler,
            options.sample_hz,
            options.machine_hz,
            options.pyspy,
            options.pyspy_rate,
            options.pyspy_native,
            options.pyspy_blocking,
            options.pyspy_path,
        )


@dataclass(frozen=True)
class ServeHelperConfig(HelperConfig):
    """``tftrace.serve``'s helper (``serve_helper.py``): the OS sampler against ``pid`` at
    ``hz``, keeping the last ``keep_s`` seconds in ``dir``, which it removes as it ends."""

    MODULE: ClassVar[str] = "tftrace.tracer.serve_helper"

    dir: str
    pid: int
    hz: float
    keep_s: float


@dataclass(frozen=True)
class WorkloadConfig(HelperConfig):
    """The workload's own process (``child/bootstrap.py``, in the run directory's
    ``workload/config.json``): the target to run, the profiler window (``delay_s`` and
    ``duration_s``, or the steps from ``first_step`` to ``end_step``, None: to the end), the
    pipe to say "ready" on, and what the child records beside the trace."""

    MODULE: ClassVar[str] = "tftrace.tracer.child.bootstrap"

    run_dir: str
    target_kind: str
    target_value: str
    target_args: list[str]
    tf_profiler: bool
    delay_s: float
    duration_s: float | None
    first_step: int | None
    end_step: int | None
    ready_fd: int | None
    thread_identity: bool
    step_timer: bool
    step_marker: str | None
    keep_script_settings: bool

    @classmethod
    def of(cls, run_dir: Path, options: RecordOptions, ready_fd: int) -> WorkloadConfig:
        target = options.target
        first, end = options.steps or (None, None)
        return cls(
            str(run_dir.resolve()),
            target.kind,
            target.value,
            list(target.args),
            options.tf_profiler,
            options.delay_s,
            options.duration_s,
            first,
            end,
            ready_fd,
            options.thread_identity,
            options.times_steps,
            options.step_marker,
            options.keep_script_settings,
        )

    def target(self) -> dict[str, Any]:
        """The target as the workload's report keeps it."""
        return {"kind": self.target_kind, "value": self.target_value, "args": self.target_args}
