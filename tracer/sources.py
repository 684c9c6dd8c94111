"""The one small interface every recording source sits behind, and the one way they run.

``running`` starts and stops the sources that observe a process from outside (the OS thread
sampler, py-spy) for ``tftrace record`` (``recorder.py``), ``tftrace.profile``'s helper
process (``attach.py``) and ``tftrace.serve``'s (``serve_helper.py``): each source's state is
decided here, and each caller reports it its own way (a warning on stderr, a protocol line).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from .priority import yielding_to_the_workload


class SourceState(str, enum.Enum):
    RECORDED = "recorded"
    FAILED = "failed"
    DISABLED = "disabled"
    UNAVAILABLE = "unavailable"


@dataclass
class SourceStatus:
    state: SourceState
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state.value, "reason": self.reason, **self.details}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SourceStatus:
        details = {k: v for k, v in data.items() if k not in ("state", "reason")}
        return cls(SourceState(data["state"]), data.get("reason"), details)


class Source(Protocol):
    """A recording source. ``start`` gets the workload's pid once it is running."""

    name: str
    # Attaches to the process (py-spy: ptrace), so it starts once the process allows it.
    attaches: bool

    def availability(self) -> str | None:
        """None when the source can run here, else why not (checked before the run)."""

    def start(self, pid: int) -> None: ...

    def stop(self) -> SourceStatus:
        """End the source, the process gone or running on, and say what it recorded."""


@contextmanager
def running(
    sources: Sequence[Source], pid: int, allowed: Callable[[], bool] | None = None
) -> Iterator[dict[str, SourceStatus]]:
    """Run ``sources`` against process ``pid`` for the block: every source's availability
    is checked first, then they start in order, under SCHED_BATCH, those that attach last,
    once ``allowed()`` says the process lets them (None: it does already); as the block ends
    they stop, the last started first, even when it raises.

    Yields the states by source name: at once those that did not start (unavailable, with
    ``availability()``'s reason, or failed); after the block every source's. A source that
    fails never stops the others."""
    states: dict[str, SourceStatus] = {}
    usable = []
    for source in sources:
        problem = source.availability()
        if problem is None:
            usable.append(source)
        else:
            states[source.name] = SourceStatus(SourceState.UNAVAILABLE, problem)
    started: list[Source] = []
    try:
        for source in usable:
            if not source.attaches:
                _start(source, pid, states, started)
        attaching = [s for s in usable if s.attaches]
        if attaching and allowed is not None and not allowed():
            for source in attaching:
                reason = f"the workload ended before {source.name} could attach"
                states[source.name] = SourceStatus(SourceState.FAILED, reason)
            attaching = []
        for source in attaching:
            _start(source, pid, states, started)
        yield states
    finally:
        for source in reversed(started):
            try:
                states[source.name] = source.stop()
            except Exception as e:  # the other sources still stop and report
                reason = f"{source.name} did not stop: {type(e).__name__}: {e}"
                states[source.name] = SourceStatus(SourceState.FAILED, reason)


def _start(
    source: Source, pid: int, states: dict[str, SourceStatus], started: list[Source]
) -> None:
    try:
        # What it starts (a thread, a process) inherits SCHED_BATCH: see priority.py.
        with yielding_to_the_workload():
            source.start(pid)
    except (OSError, RuntimeError) as e:  # RuntimeError: no thread could be started
        states[source.name] = SourceStatus(SourceState.FAILED, f"{source.name} did not start: {e}")
    else:
        started.append(source)


def unavailable(states: dict[str, SourceStatus]) -> list[str]:
    """A line per source that cannot run here, as ``tftrace record`` and ``tftrace.profile``
    warn of it: ``pyspy unavailable: py-spy executable not found (pip install py-spy)``."""
    return [
        f"{name} unavailable: {status.reason}"
        for name, status in states.items()
        if status.state is SourceState.UNAVAILABLE
    ]


def states_json(states: dict[str, SourceStatus]) -> str:
    """The states as one line of JSON: a helper process's answer to the program."""
    return json.dumps({name: status.to_json() for name, status in states.items()})


def states_from_json(line: str) -> dict[str, SourceStatus] | None:
    """The states of a ``states_json`` line; None when it is not one (the helper died)."""
    try:
        data = json.loads(line)
        return {str(name): SourceStatus.from_json(status) for name, status in data.items()}
    except (ValueError, TypeError, AttributeError, KeyError):
        return None
