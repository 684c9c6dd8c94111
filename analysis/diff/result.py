"""``RunDiff``: what ``tftrace.diff`` returns, as data, JSON, terminal text or an HTML page."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tftrace.analysis.diff.factors import StepFactors
from tftrace.analysis.diff.stats import StepTimeDiff
from tftrace.analysis.presenting import as_html, as_text

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis


@dataclass(frozen=True, repr=False)
class RunDiff:
    """Run B against run A (the baseline), each over its steady state, matched by steps.

    Attributes:

    - ``a``, ``b``: the two ``Analysis`` objects compared.
    - ``step_time``: a ``StepTimeDiff``: median and spread of each side, ``speedup`` (median
      A / median B: above 1, B is faster), ``p_value`` (two-sided Mann-Whitney U test),
      ``interval`` (bootstrap 95 % interval of the speedup) and ``verdict`` ("faster",
      "slower", "no significant difference", "too few steps"), with its ``reason``. Where
      the manifests are identical and only the per-thread speed moved, the verdict is "no
      significant difference" and ``per_step_verdict`` keeps the per-step test's.
    - ``factors``: a ``StepFactors``: the step time's two factors, threads busy per step
      (``parallelism``) and busy thread-ms per step (``busy_time``), B against A.
    - ``pools``: one row per pool and figure (threads, mean and peak concurrency, queue delay
      p50/p99, CPU and run-queue wait per step): pool, figure, a, b, change (b - a).
    - ``breakdown``: the wall-time breakdown side by side, as shares and ms per step.
    - ``ops``: the op types whose time per step or achieved parallelism changed most.
    - ``findings``: findings by id and pool that "appeared", "went away" or are in "both".
    - ``manifest``: the manifest facts that differ (versions, environment, pool sizes and
      their source, CPUs, oneDNN): what, a, b.
    - ``notes``: how the two were matched, where it matters (different step functions, ...).
    - ``steps`` (a property): the per-step samples, one row per step: side, step, ms.

    ``print(d)`` gives the terminal text, ``d.to_json()`` the same as JSON values,
    ``d.to_html()`` a self-contained page. Example::

        d = tftrace.diff(tftrace.load("runs/inter1"), tftrace.load("runs/inter2"))
        print(d.step_time.reason)  # "B is faster than A: p = 2e-05, ..."
        d.pools.set_index(["pool", "figure"]).loc[("inter-op", "mean concurrency")]
    """

    a: Analysis
    b: Analysis
    step_time: StepTimeDiff
    factors: StepFactors
    pools: pd.DataFrame
    breakdown: pd.DataFrame
    ops: pd.DataFrame
    findings: pd.DataFrame
    manifest: pd.DataFrame
    notes: tuple[str, ...] = ()

    @property
    def steps(self) -> pd.DataFrame:
        """The steady steps of both sides: side ("a" or "b"), step (its number in its run),
        ms."""
        parts = []
        for side, analysis in (("a", self.a), ("b", self.b)):
            t = analysis.steps.table
            parts.append(
                pd.DataFrame(
                    {
                        "side": side,
                        "step": t["step"].to_numpy(dtype=np.int64),
                        "ms": t["duration_ns"].to_numpy(dtype=np.float64) / 1e6,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)

    def _side(self, analysis: Analysis) -> dict[str, Any]:
        return {
            "run": str(analysis.run.path),
            "window": analysis.window_basis,
            "steps": len(analysis.steps.table),
            "step_source": analysis.steps.source,
        }

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (what ``tftrace diff --json`` prints)."""
        return {
            "a": self._side(self.a),
            "b": self._side(self.b),
            "step_time": self.step_time.to_json(),
            "factors": self.factors.to_json(),
            "pools": records(self.pools),
            "breakdown": records(self.breakdown),
            "ops": records(self.ops),
            "findings": records(self.findings),
            "manifest": records(self.manifest),
            "notes": list(self.notes),
        }

    def to_html(self) -> str:
        """A self-contained HTML page of the comparison."""
        return as_html(self)

    def __repr__(self) -> str:
        return (
            f"<RunDiff {self.a.run.path} -> {self.b.run.path}: {self.step_time.verdict}"
            + (f", speedup {self.step_time.speedup:.3f}" if self.step_time.speedup else "")
            + ">"
        )

    def __str__(self) -> str:
        return as_text(self)


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON records, NaN as None."""
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in json.loads(df.to_json(orient="records"))
    ]
