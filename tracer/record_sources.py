"""The sources a recording runs beside the workload, built in one place from its settings:
``tftrace record``'s options (``recorder.py``) or ``tftrace.profile``'s helper config
(``attach.py``), which carry the same fields."""

from __future__ import annotations

from typing import Protocol

from . import rundir
from .os_sampler import OsThreadSampler
from .pyspy import PySpySource
from .sources import Source, SourceState, SourceStatus

SAMPLER = OsThreadSampler.name
PYSPY = PySpySource.name


class SourceSettings(Protocol):
    """What the sources need of the settings: ``RecordOptions`` and ``AttachConfig`` have it."""

    @property
    def sampler(self) -> bool: ...
    @property
    def sample_hz(self) -> float: ...
    @property
    def machine_hz(self) -> float: ...
    @property
    def pyspy(self) -> bool: ...
    @property
    def pyspy_rate(self) -> int: ...
    @property
    def pyspy_native(self) -> bool: ...
    @property
    def pyspy_blocking(self) -> bool: ...
    @property
    def pyspy_path(self) -> str | None: ...


def chosen(settings: SourceSettings) -> dict[str, bool]:
    """Each source by name: whether the settings turn it on."""
    return {SAMPLER: settings.sampler, PYSPY: settings.pyspy}


def disabled(settings: SourceSettings) -> dict[str, SourceStatus]:
    """The state of each source the settings turn off, as the manifest records it."""
    return {
        name: SourceStatus(SourceState.DISABLED, "disabled by option")
        for name, on in chosen(settings).items()
        if not on
    }


def build(run: rundir.RunDir, settings: SourceSettings) -> list[Source]:
    """The sources the settings turn on, writing into ``run``, in the order they start."""
    sources: list[Source] = []
    if settings.sampler:
        out = run / rundir.OS_SAMPLES_DIR
        sources.append(OsThreadSampler(out, settings.sample_hz, machine_hz=settings.machine_hz))
    if settings.pyspy:
        sources.append(
            PySpySource(
                run / rundir.PYSPY_TRACE,
                run / rundir.PYSPY_LOG,
                settings.pyspy_rate,
                settings.pyspy_native,
                settings.pyspy_blocking,
                executable=settings.pyspy_path,
            )
        )
    return sources
