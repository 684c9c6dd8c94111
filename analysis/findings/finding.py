"""A finding: one claim about what would make the workload faster, with its evidence and action.

Findings are data: the rules (``tftrace.analysis.findings``) make them, renderers only display them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    """How much a finding costs the workload, most severe first.

    ``Severity.HIGH`` costs a large share of the analysed window: act on it first.
    ``Severity.INFO`` is worth knowing, but no time is lost to it.
    """

    HIGH = "high"  # costs a large share of the window; act on it first
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"  # worth knowing; no time is lost to it


SEVERITY_ORDER = {s: i for i, s in enumerate(Severity)}


@dataclass(frozen=True)
class Finding:
    """What a rule found: a stable ``id`` (e.g. ``"ops-run-inline"``), its ``severity``, the
    ``pool`` it concerns (None for the whole process), a one-sentence ``message`` with the
    figures, one concrete ``action``, the ``evidence`` figures as a dict, the ``window``
    (start, end ns on the run's time axis) it was measured over, and ``consequence_of``: the
    ids of findings of the same run that explain the same time as its cause (empty when it
    stands on its own; ``diagnose`` sets it and puts the causes first).

    Example::

        for f in tftrace.analyze(run).findings:
            print(f.severity.value, f.id, f.message, "->", f.action)
    """

    id: str
    severity: Severity
    pool: str | None
    message: str
    action: str
    evidence: dict[str, Any] = field(default_factory=dict)
    window: tuple[int, int] | None = None
    consequence_of: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The finding as plain JSON values (as ``tftrace analyze --json`` prints it)."""
        return {
            "id": self.id,
            "severity": self.severity.value,
            "pool": self.pool,
            "message": self.message,
            "action": self.action,
            "evidence": self.evidence,
            "window_ns": list(self.window) if self.window else None,
            "consequence_of": list(self.consequence_of),
        }
