"""A finding: one claim about what would make the workload faster, with its evidence and action.

Findings are data: the rules (``tftrace.analysis.findings``) make them, renderers only display them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tftrace.tracer.sweep_setting import (
    cpus_words,
    env_name_problem,
    env_value_problem,
    env_words,
)


class Severity(str, enum.Enum):
    """How much a finding costs the workload, most severe first.

    ``Severity.HIGH`` costs a large share of the analysed window: act on it first.
    ``Severity.INFO`` is worth knowing, but no time is lost to it. Example::

        urgent = [f for f in analysis.findings if f.severity is tftrace.Severity.HIGH]
    """

    HIGH = "high"  # costs a large share of the window; act on it first
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"  # worth knowing; no time is lost to it


SEVERITY_ORDER = {s: i for i, s in enumerate(Severity)}


class Expect(str, enum.Enum):
    """What a finding claims its advised setting does to the workload's time per step."""

    FASTER = "faster"  # beyond noise: the claim is a speedup
    NOT_SLOWER = "not-slower"  # within noise or faster: the claim is that threads are wasted


@dataclass(frozen=True)
class AdvisedSetting:
    """The setting a finding advises, machine-readable: the intra-op and inter-op pool sizes
    to run with (None keeps the run's own), ``env``, environment variables to run with (e.g.
    ``{"OPENBLAS_NUM_THREADS": "1"}``; any other keeps the run's own value), ``cpus``, the
    count of usable CPUs to run on, pinned (None: all of them, as the run did), what the
    finding ``expect``s of it, and by which measure (``objective``: None, the time per step;
    a server's "throughput", "p50" or "p99").
    ``tftrace analyze --verify`` runs it beside the run's own setting. Example::

        for f in analysis.findings:
            if f.setting:  # e.g. AdvisedSetting(intra=1, env={"OMP_NUM_THREADS": "1"})
                print(f.id, "try", f.setting.label())  # "intra 1, OMP_NUM_THREADS=1"
    """

    intra: int | None = None
    inter: int | None = None
    expect: Expect = Expect.FASTER
    # What the claim is measured by: None, the time per step; for a server "throughput"
    # (requests per second), "p50" or "p99" (request latency).
    objective: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cpus: int | None = None

    def __post_init__(self) -> None:
        # A rule that advises what tftrace cannot apply is a bug: said when it is made.
        for name, value in self.env.items():
            if not isinstance(value, str):
                raise ValueError(f"AdvisedSetting env: {name}: give its value as a string")
            problem = env_name_problem(name) or env_value_problem(name, value)
            if problem is not None:
                raise ValueError(f"AdvisedSetting env: {problem}")
        if self.cpus is not None and self.cpus < 1:
            raise ValueError(f"AdvisedSetting cpus: {self.cpus} (give 1 or more, or None)")

    def label(self) -> str:
        """The advice in words, what it changes only: ``intra 1, OMP_NUM_THREADS=1, 1 CPU``."""
        pools = (("intra", self.intra), ("inter", self.inter))
        words = [f"{name} {v}" for name, v in pools if v is not None]
        words += env_words(self.env.items())
        words += [cpus_words(self.cpus)] if self.cpus is not None else []
        return ", ".join(words) or "the run's own setting"

    def to_json(self) -> dict[str, Any]:
        return {
            "intra": self.intra,
            "inter": self.inter,
            "expect": self.expect.value,
            "objective": self.objective,
            "env": dict(self.env),
            "cpus": self.cpus,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AdvisedSetting:
        """``to_json``'s dict back; one written before ``env`` and ``cpus`` existed too."""
        return cls(
            data.get("intra"),
            data.get("inter"),
            Expect(data.get("expect") or Expect.FASTER.value),
            data.get("objective"),
            {str(k): str(v) for k, v in (data.get("env") or {}).items()},
            data.get("cpus"),
        )


class Status(str, enum.Enum):
    """The outcome of running a finding's advised setting beside the run's own."""

    CONFIRMED = "confirmed"
    NOT_CONFIRMED = "not confirmed"
    INCONCLUSIVE = "inconclusive"  # too few runs to judge noise


@dataclass(frozen=True)
class Verification:
    """A finding's advised setting, timed beside the run's own (fresh, interleaved runs):
    ``current`` and ``advised`` pool sizes (intra, inter), ``speedup`` = the median of the
    pairwise ratios current time / advised time (> 1: the advice is faster), with its worst
    and best case from the two ranges, ``runs`` per setting, the ``status`` and a sentence
    saying why (``reason``), and ``output``, the sweep directory that holds the runs.
    What else each side ran with: ``current_env`` / ``advised_env``, the variables the advice
    names (None: unset), and ``current_cpus`` / ``advised_cpus``, the CPUs it was pinned to
    (None: all usable). Example::

        for f in tftrace.verify(run, analysis).findings:
            if f.verification:
                print(f.id, f.verification.status.value, f.verification.reason)
    """

    status: Status
    current: tuple[int | None, int | None]
    advised: tuple[int | None, int | None]
    speedup: float
    speedup_lo: float
    speedup_hi: float
    runs: int
    reason: str
    output: str | None = None
    current_env: Mapping[str, str | None] = field(default_factory=dict)
    advised_env: Mapping[str, str | None] = field(default_factory=dict)
    current_cpus: int | None = None
    advised_cpus: int | None = None

    def to_json(self) -> dict[str, Any]:
        def side(
            pools: tuple[int | None, int | None], env: Mapping[str, Any], cpus: int | None
        ) -> dict[str, Any]:
            return {"intra": pools[0], "inter": pools[1], "env": dict(env), "cpus": cpus}

        return {
            "status": self.status.value,
            "current": side(self.current, self.current_env, self.current_cpus),
            "advised": side(self.advised, self.advised_env, self.advised_cpus),
            "speedup": round(self.speedup, 4),
            "speedup_range": [round(self.speedup_lo, 4), round(self.speedup_hi, 4)],
            "runs": self.runs,
            "reason": self.reason,
            "output": self.output,
        }


def speedup_text(speedup: float, bound: tuple[float, float] | None = None) -> str:
    """A predicted speedup: ``1.91x``, or where the trace supports only a span of it (a
    server at two paces) ``0.76x to 1.24x``."""
    if bound is None:
        return f"{speedup:.2f}x"
    return f"{bound[0]:.2f}x to {bound[1]:.2f}x"


@dataclass(frozen=True)
class PredictedGain:
    """A finding's advised pool sizes predicted from the trace (``tftrace.predict``): the
    ``speedup`` over the run's own setting (> 1: faster; None: not predicted) and its
    ``basis`` (recorded, calibrated, or an extrapolation and why; where not predicted, why
    not). Example::

        for f in tftrace.with_predictions(run, analysis).findings:
            if f.predicted and f.predicted.speedup:
                print(f.id, f"{f.predicted.speedup:.2f}x", f.predicted.basis)
    """

    speedup: float | None
    basis: str
    # where the trace supports no one figure (a server at two paces): the speedup's span
    bound: tuple[float, float] | None = None

    def label(self) -> str:
        """``1.91x (calibrated)``, ``0.76x to 1.24x (less sure: two paces)``, or ``none (why)``."""
        if self.speedup is None:
            return f"none ({self.basis})"
        return f"{speedup_text(self.speedup, self.bound)} ({self.basis})"

    def to_json(self) -> dict[str, Any]:
        speedup = None if self.speedup is None else round(self.speedup, 4)
        bound = [round(v, 4) for v in self.bound] if self.bound else None
        return {"speedup": speedup, "basis": self.basis, "speedup_bound": bound}


@dataclass(frozen=True)
class Finding:
    """What a rule found: a stable ``id`` (e.g. ``"ops-run-inline"``), its ``severity``, the
    ``pool`` it concerns (None for the whole process), a one-sentence ``message`` with the
    figures, one concrete ``action``, the ``evidence`` figures as a dict, the ``window``
    (start, end ns on the run's time axis) it was measured over, and ``consequence_of``: the
    ids of findings of the same run that explain the same time as its cause (empty when it
    stands on its own; ``diagnose`` sets it and puts the causes first). Where the action is a
    thread setting, ``setting`` says it machine-readably; ``verification`` is what running it
    showed (``tftrace.verify``), None until then, and ``predicted`` what the trace predicts
    of it (``tftrace.with_predictions``), None until asked.

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
    setting: AdvisedSetting | None = None
    verification: Verification | None = None
    predicted: PredictedGain | None = None

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
            "setting": self.setting.to_json() if self.setting else None,
            "verification": self.verification.to_json() if self.verification else None,
            "predicted": self.predicted.to_json() if self.predicted else None,
        }
