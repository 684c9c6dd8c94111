"""The one small interface every recording source sits behind."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol


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

    def availability(self) -> str | None:
        """None when the source can run here, else why not (checked before the run)."""

    def start(self, pid: int) -> None: ...

    def stop(self) -> SourceStatus: ...
