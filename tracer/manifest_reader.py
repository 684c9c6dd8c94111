"""``manifest.json`` read back: typed, read-only, for every step after ``record``.

``manifest.py`` writes the file; this module says what each field means. Every key may be
missing (an older manifest, a run cut short, a bare trace with none at all): a missing or
mistyped value reads as None, empty or False, so readers test a field and never chain
``.get(...) or {}``. Values are kept as written (no conversion), so that what is shown from
them reads as before, and ``Manifest.raw`` keeps the whole dict.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .options import Target
from .safe_read import PathLike, UnreadableFile, read_json

MANIFEST_KIND = "tftrace-run"  # its "kind": what tells a run's manifest from other JSON


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    """An int64 (what numpy and pandas take the figures as), else None."""
    return value if type(value) is int and -(2**63) <= value < 2**63 else None


def _ns(value: Any) -> int | None:
    """A clock reading in ns: from 0 to 2**62 (year 2116 on the wall clock), else None, so
    that differences of readings stay int64."""
    return value if type(value) is int and 0 <= value <= 2**62 else None


def _number(value: Any) -> float | None:
    """A finite number, else None."""
    return value if _int(value) is not None or _finite(value) else None


def _finite(value: Any) -> bool:
    return type(value) is float and math.isfinite(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _strings(value: Any) -> dict[str, str]:
    return {k: v for k, v in _dict(value).items() if isinstance(v, str)}


# How a field of each plain type is read (by its annotation, as written in the class).
_READERS = {
    "str | None": _str,
    "int | None": _int,
    "float | None": _number,
    "int": lambda v: _int(v) or 0,
    "bool": lambda v: v is True,
}


def _plain_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The fields of dataclass ``cls`` with a plain type, read from ``data`` under their own
    names; the others are the caller's to read."""
    return {
        f.name: _READERS[str(f.type)](data.get(f.name))
        for f in fields(cls)
        if str(f.type) in _READERS
    }


@dataclass(frozen=True)
class ClockAnchor:
    """The clocks read back to back (``environment.clock_anchor``), in ns."""

    wall_ns: int
    monotonic_ns: int
    boottime_ns: int | None = None
    uncertainty_ns: int | None = None

    @classmethod
    def from_json(cls, data: Any) -> ClockAnchor | None:
        """None unless both the wall and the monotonic reading are there."""
        d = _dict(data)
        wall, mono = _ns(d.get("wall_ns")), _ns(d.get("monotonic_ns"))
        if wall is None or mono is None:
            return None
        return cls(wall, mono, _int(d.get("boottime_ns")), _int(d.get("uncertainty_ns")))


@dataclass(frozen=True)
class Clocks:
    """The recorder's readings (``start`` is the run's time origin) and the workload's own."""

    start: ClockAnchor | None = None
    end: ClockAnchor | None = None
    workload_start: ClockAnchor | None = None  # the workload process began
    code_start: ClockAnchor | None = None  # the user's code began (``--delay`` counts from it)
    code_end: ClockAnchor | None = None
    workload_finished: ClockAnchor | None = None  # its report was written

    @classmethod
    def from_json(cls, data: Any) -> Clocks:
        d, work = _dict(data), _dict(_dict(data).get("workload"))
        return cls(
            *(ClockAnchor.from_json(d.get(k)) for k in ("start", "end")),
            *(
                ClockAnchor.from_json(work.get(k))
                for k in ("start_anchor", "code_start_anchor", "end_anchor", "finished_anchor")
            ),
        )


@dataclass(frozen=True)
class Host:
    """The machine and what this process was allowed of it (``environment.host_facts``)."""

    hostname: str | None = None
    platform: str | None = None
    python: str | None = None
    cpu_count: int | None = None  # the machine's
    cpu_affinity: tuple[int, ...] = ()  # the CPUs the recorder (so the workload) may run on
    cpu_quota: float | None = None  # a cgroup quota in CPUs, None when unlimited
    clock_ticks_per_second: int | None = None

    @classmethod
    def from_json(cls, data: Any) -> Host:
        d = _dict(data)
        affinity = tuple(c for c in _list(d.get("cpu_affinity")) if _int(c) is not None)
        return cls(**_plain_fields(cls, d), cpu_affinity=affinity)


@dataclass(frozen=True)
class PoolSetting:
    """One pool's effective size and where it came from (``manifest.pools``)."""

    size: int | None = None
    source: str | None = None  # "config", "env" or "default (schedulable CPUs)"
    configured: int = 0  # the workload's tf.config setting (0: left to TF)
    env: str | None = None  # TF_NUM_*_THREADS as set
    cpus: int | None = None  # the CPUs TF's default counts
    config_known: bool = False  # whether the workload reported its config

    @classmethod
    def from_json(cls, data: Any) -> PoolSetting:
        return cls(**_plain_fields(cls, _dict(data)))


@dataclass(frozen=True)
class SourceRecord:
    """What one recording source got (``sources.SourceStatus.to_json``)."""

    state: str | None = None  # a sources.SourceState value
    reason: str | None = None  # why it did not record
    start_anchor: ClockAnchor | None = None  # the source's start (py-spy, TF profiler)
    started_anchor: ClockAnchor | None = None  # TF profiler: once it said it had started
    details: Mapping[str, Any] = field(default_factory=dict)  # its figures, as written

    @classmethod
    def from_json(cls, data: Any) -> SourceRecord:
        d = _dict(data)
        return cls(
            _str(d.get("state")),
            _str(d.get("reason")),
            ClockAnchor.from_json(d.get("start_anchor")),
            ClockAnchor.from_json(d.get("started_anchor")),
            {k: v for k, v in d.items() if k not in ("state", "reason")},
        )


@dataclass(frozen=True)
class SetterCall:
    """One call of a tf.config.threading setter by the workload (``child/setter_calls.py``)."""

    setter: str | None
    value: Any
    error: str | None  # set when TF refused it (called after the pools were created)
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Any) -> SetterCall:
        d = _dict(data)
        return cls(_str(d.get("setter")), d.get("value"), _str(d.get("error")), d)

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class WorkloadException:
    """The workload's own uncaught exception, as Python named it."""

    type: str | None
    message: str | None


@dataclass(frozen=True)
class OneDnn:
    """Whether TF ran its oneDNN kernels (``_MklMatMul`` for ``MatMul``), as the workload's TF
    said at its end (``child/bootstrap._onednn``)."""

    enabled: bool | None = None  # TF's IsMklEnabled(); None when TF was not asked
    env: str | None = None  # TF_ENABLE_ONEDNN_OPTS as the workload had it (None: unset)
    reason: str | None = None  # why ``enabled`` is None

    @classmethod
    def from_json(cls, data: Any) -> OneDnn | None:
        d = _dict(data)
        if not d:
            return None
        enabled = d.get("enabled")
        return cls(
            enabled if isinstance(enabled, bool) else None,
            _str(d.get("env")),
            _str(d.get("reason")),
        )


@dataclass(frozen=True)
class Workload:
    """How the workload ended: exit status and its own report (``manifest.workload_section``)."""

    returncode: int | None = None
    exit_code: int | None = None
    exception: WorkloadException | None = None  # the workload's own uncaught exception
    interrupted: bool = False
    setup_error: str | None = None
    setter_calls: tuple[SetterCall, ...] = ()
    configured_pools: Mapping[str, int] = field(default_factory=dict)
    tensorflow_version: str | None = None
    onednn: OneDnn | None = None  # None in a manifest written before it was recorded
    # {path: sha256} of the workload's own imported Python files (``child/sources_digest``)
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Workload:
        d = _dict(data)
        exc = d.get("exception")
        return cls(
            **_plain_fields(cls, d),
            onednn=OneDnn.from_json(d.get("onednn")),
            exception=WorkloadException(_str(exc.get("type")), _str(exc.get("message")))
            if isinstance(exc, dict)
            else None,
            setter_calls=tuple(SetterCall.from_json(c) for c in _list(d.get("setter_calls"))),
            configured_pools={
                k: v for k, v in _dict(d.get("configured_pools")).items() if _int(v) is not None
            },
            sources={k: v for k, v in _dict(d.get("sources")).items() if isinstance(v, str)},
        )


@dataclass(frozen=True)
class ClusterTask:
    """A run's task of a distributed TensorFlow job (``cluster_task.task_of``): ``name`` is
    ``worker-0``; ``cluster`` the job's tasks by type, each a list of addresses."""

    type: str
    index: int
    name: str
    cluster: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> ClusterTask | None:
        d = _dict(data)
        kind, index = _str(d.get("type")), _int(d.get("index"))
        if kind is None or index is None:
            return None
        cluster = {
            str(k): tuple(str(a) for a in _list(v)) for k, v in _dict(d.get("cluster")).items()
        }
        return cls(kind, index, _str(d.get("name")) or f"{kind}-{index}", cluster)


@dataclass(frozen=True)
class Recording:
    """How the run was recorded (``manifest.initial``), so that every command reads it the
    same way. ``how``: ``"record"`` for ``tftrace record`` / ``tftrace.record`` (also what a
    manifest written before the block reads as), ``"profile"`` or ``"keras"`` for a recording
    made from inside the workload's code; None for a bare trace. ``steps``: the profiler's
    window in steps, ``(A, B)`` for steps A to B-1 counted from 0 (``B`` None: to the end),
    None when it was not given in steps (the whole run, or ``--delay``/``--duration``).
    ``steps_counted``: what was counted as a step, in words."""

    how: str | None = "record"
    steps: tuple[int, int | None] | None = None
    steps_counted: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> Recording:
        d = _dict(data)
        pair = _list(d.get("steps"))
        first, end = (_int(pair[0]), _int(pair[1])) if len(pair) == 2 else (None, None)
        valid = first is not None and (end is not None or pair[1] is None)
        return cls(
            _str(d.get("how")) or "record",
            (first, end) if first is not None and valid else None,
            _str(d.get("steps_counted")),
        )


def _target(data: Any) -> Target | None:
    d = _dict(data)
    kind, value = _str(d.get("kind")), _str(d.get("value"))
    if kind is None or value is None:
        return None
    return Target(kind, value, tuple(str(a) for a in _list(d.get("args"))))


@dataclass(frozen=True)
class Manifest:
    """A run's ``manifest.json``, read. ``Manifest.empty()`` stands for a bare trace (a
    TensorBoard profile recorded without tftrace): every field empty, ``exists`` False."""

    raw: Mapping[str, Any] = field(repr=False, compare=False)  # as read; to_json() copies it
    status: str | None = None  # "complete", "failed", "crashed", "interrupted" or "running"
    name: str | None = None
    created: str | None = None
    target: Target | None = None
    workload_command: tuple[str, ...] = ()
    host: Host = field(default_factory=Host)
    versions: Mapping[str, str] = field(default_factory=dict)  # distributions, python, TF's
    env: Mapping[str, str] = field(default_factory=dict)  # the variables that size pools
    clock: Clocks = field(default_factory=Clocks)
    pools: Mapping[str, PoolSetting] = field(default_factory=dict)  # "inter_op", "intra_op"
    sources: Mapping[str, SourceRecord] = field(default_factory=dict)
    workload: Workload = field(default_factory=Workload)
    recording: Recording = field(default_factory=lambda: Recording(how=None))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        return cls(
            data,
            _str(data.get("status")),
            _str(data.get("name")),
            _str(data.get("created")),
            _target(data.get("target")),
            tuple(str(a) for a in _list(data.get("workload_command"))),
            Host.from_json(data.get("host")),
            _strings(data.get("versions")),
            _strings(data.get("env")),
            Clocks.from_json(data.get("clock")),
            {k: PoolSetting.from_json(v) for k, v in _dict(data.get("pools")).items()},
            {k: SourceRecord.from_json(v) for k, v in _dict(data.get("sources")).items()},
            Workload.from_json(data.get("workload")),
            Recording.from_json(data.get("recording")) if data else Recording(how=None),
        )

    @classmethod
    def empty(cls) -> Manifest:
        return cls.from_json({})

    @property
    def exists(self) -> bool:
        """False for the empty manifest of a bare trace."""
        return bool(self.raw)

    @property
    def usable_cpus(self) -> int | None:
        """The CPUs the process may use: its affinity, else the machine's count; None when
        neither is known. TF sizes its pools by the affinity; a quota is ``host.cpu_quota``."""
        return len(self.host.cpu_affinity) or self.host.cpu_count or None

    @property
    def task(self) -> ClusterTask | None:
        """This run's task of a distributed job (from TF_CONFIG), None outside one."""
        return ClusterTask.from_json(self.raw.get("cluster"))

    def pool(self, name: str) -> PoolSetting:
        """The setting of pool ``name``; size and source None when the manifest has none."""
        return self.pools.get(name) or PoolSetting()

    def source(self, name: str) -> SourceRecord:
        """What source ``name`` got; state and reason None when the manifest does not say."""
        return self.sources.get(name) or SourceRecord()

    def to_json(self) -> dict[str, Any]:
        """The manifest as read, a copy that the caller may change."""
        return copy.deepcopy(dict(self.raw))


def read_manifest(path: PathLike) -> Manifest:
    """The manifest at ``path`` (``RUN/manifest.json``), read as ``safe_read`` reads: raises
    ``FileAbsent`` when it is not there, ``UnreadableFile`` (one line) when it is no regular
    file, not JSON or not a tftrace manifest."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("kind") != MANIFEST_KIND:
        raise UnreadableFile(f"{path}: not a tftrace manifest")
    return Manifest.from_json(data)
