"""``analyze(run) -> Analysis``: every figure of a run (``metrics.measured.measure``), and the
findings the rules draw from them.

Renderers (terminal, HTML, plots, TensorBoard) and the JSON output only display an
``Analysis``. Metrics are pure functions of the run (``tftrace.analysis.metrics``); findings
are rules over run and metrics (``tftrace.analysis.findings``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from tftrace.analysis.findings import Finding, diagnose
from tftrace.analysis.findings.coverage import not_checked
from tftrace.analysis.metrics.measured import Metrics, measure
from tftrace.analysis.metrics.python_time import PYTHON_MATTERS_SHARE, PythonTime, python_time
from tftrace.analysis.metrics.window import STEADY, WindowArg
from tftrace.analysis.model.run import Run
from tftrace.analysis.progress import ANALYZE_STAGES, stage

if TYPE_CHECKING:
    from tftrace.analysis.predict.result import Prediction

__all__ = ["Analysis", "Metrics", "analyze", "measure"]


@dataclass(frozen=True, repr=False)
class Analysis(Metrics):
    """What tftrace measured in a run, and what it means: the result of ``tftrace.analyze``.

    Every figure of ``Metrics`` (``run``, ``window``, ``pools``, ``steps``, ``core_use``, ...:
    see its attributes; the DataFrames' columns are defined in docs/analyses.md), and:

    - ``findings``: tuple of ``Finding``, causes first, then most severe first; empty when
      nothing is wrong.
    - ``python_time``: the top Python functions per Python thread by self and total time
      (py-spy), py-spy's error share, and whether Python time matters in the window.
    - ``not_checked``: one line per rule the run lacks the data for (a bare trace has no OS
      sampler, no manifest, and no CPU count unless ``cpus`` gives it).
    - ``prediction``: each pool setting a sweep would try, predicted from the trace, and
      ``prediction_note``, why there is none; both None until asked for
      (``tftrace.with_predictions``, ``tftrace analyze --predict``).

    In Jupyter an Analysis shows itself as the report's tables; ``print(analysis)`` gives the
    terminal report; ``analysis.to_json()`` the figures as JSON values. Example::

        analysis = tftrace.analyze(tftrace.load("tftrace-runs/demo"))
        analysis.pools.set_index("pool")["mean"]  # mean busy threads per pool
        analysis.findings[0].action if analysis.findings else "nothing to fix"
    """

    findings: tuple[Finding, ...] = ()
    python_time: PythonTime | None = None
    not_checked: tuple[str, ...] = ()
    prediction: Prediction | None = None
    prediction_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (what ``tftrace analyze --json`` prints)."""

        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in json.loads(df.to_json(orient="records"))
            ]

        return {
            "core_use": self.core_use.to_json() if self.core_use else None,
            "findings": [f.to_json() for f in self.findings],
            "not_checked": list(self.not_checked),
            "run": str(self.run.path),
            "window_ns": list(self.window),
            "window": {
                "start_ns": self.window[0],
                "end_ns": self.window[1],
                "seconds": (self.window[1] - self.window[0]) / 1e9,
                "mode": self.window_basis.split()[0].rstrip(":"),  # steady, all, steps, times
                "basis": self.window_basis,
            },
            "warmup": self.warmup.to_json() if self.warmup else None,
            "pools": records(self.pools),
            "census": self.census.to_json() if self.census else None,
            "contention": self.contention.to_json() if self.contention else None,
            "queue_delay": records(self.queue_delay),
            "cpu": records(self.cpu),
            "top_ops": records(self.top_ops),
            "breakdown": records(self.breakdown),
            "steps": {
                "source": self.steps.source,
                **self.step_stats,
                "summary": summary.to_json() if (summary := self.step_summary) else None,
                "table": records(self.steps.table),
            },
            "shape": self.shape,
            "requests": self.requests.to_json() if self.requests else None,
            "request_pace": pace.to_json() if (pace := self.request_pace) else None,
            "python_time": self.python_time.to_json() if self.python_time else None,
            "missing": self.run.missing,
            # figures computed for the outputs, after the keys scripts already read
            "step_concurrency": records(self.step_concurrency),
            "prediction": self.prediction.to_json() if self.prediction else None,
            "prediction_note": self.prediction_note,
            "profiler_cost": self.profiler_cost.to_json() if self.profiler_cost else None,
        }

    def __repr__(self) -> str:
        worst = f", worst {self.findings[0].severity.value}" if self.findings else ""
        width_s = (self.window[1] - self.window[0]) / 1e9
        return (
            f"<Analysis of {self.run.path}: {width_s:.3f} s window, "
            f"{len(self.findings)} finding(s){worst}>"
        )

    def __str__(self) -> str:
        from tftrace.analysis.presenting import as_text

        return as_text(self)

    def _repr_html_(self) -> str:
        from tftrace.analysis.presenting import as_html

        return as_html(self)


def analyze(
    run: Run, window: WindowArg = STEADY, warmup_steps: int = 1, cpus: int | None = None
) -> Analysis:
    """Measure a loaded run and diagnose it: metrics and findings (causes first, then most severe).

    Args:
        run: a ``Run`` from ``tftrace.load(path)``.
        window: the span analysed: ``"steady"`` (default: from the end of the warm-up to the
            end of the last step, or the whole trace where no steps exist), ``"all"``, steps
            ``"A:B"`` or ``(A, B)`` (numbered from 1), or ``"T0:T1"`` in seconds on the run's
            axis (with a decimal point or ``s``: ``"1.5:3.0"``). A bad window raises
            ``TftraceError`` naming the steps or times the run has.
        warmup_steps: the steps of the warm-up (default 1: the call that traces).
        cpus: the CPUs the process could use, where the run does not say (a bare
            ``.xplane.pb``: its pool sizes come from the trace's threads, the CPU count from
            here); given, it replaces the recorded count.

    Returns:
        An ``Analysis``; see its attributes. Nothing is printed.

    Example::

        import tftrace

        analysis = tftrace.analyze(tftrace.load("tftrace-runs/demo"))
        for finding in analysis.findings:
            print(finding.message, "->", finding.action)
    """
    metrics = measure(run, window, warmup_steps, cpus)
    stage(ANALYZE_STAGES[6])
    findings = tuple(diagnose(metrics.run, metrics))
    stage(ANALYZE_STAGES[7])
    return Analysis(
        **{f.name: getattr(metrics, f.name) for f in dataclasses.fields(metrics)},
        findings=findings,
        python_time=which_python(metrics, findings),
        not_checked=not_checked(metrics.run),
    )


def which_python(metrics: Metrics, findings: tuple[Finding, ...]) -> PythonTime:
    """The top Python functions over the analysed window; they matter when the breakdown's
    python share reaches ``PYTHON_MATTERS_SHARE`` or the python-bound finding fired."""
    shares = metrics.breakdown.set_index("category")["share"]
    matters = float(shares.get("python / host", 0.0)) >= PYTHON_MATTERS_SHARE or any(
        f.id == "python-bound" for f in findings
    )
    return python_time(metrics.run, metrics.window, matters=matters)
