"""``with_predictions(run, analysis)``: the analysis with what the trace predicts of each
finding's advised pool sizes (``Finding.predicted``) and the setting predicted best over the
sizes a sweep would try (``Analysis.prediction``), without running anything.

A replay per setting costs seconds on a large trace (the replay is Python), so this is asked
for (``tftrace analyze --predict``, and ``--verify``, which shows both), not done by every
analysis. Predictions are of pool sizes only: an advised environment variable or CPU count is
not in the model, and its finding says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from tftrace.analysis.findings.finding import Finding, PredictedGain
from tftrace.analysis.metrics.window import STEADY, WindowArg
from tftrace.analysis.model.run import Run
from tftrace.analysis.predict.predicting import predict, recorded_sizes
from tftrace.analysis.predict.result import Prediction
from tftrace.errors import TftraceError
from tftrace.tracer.sweep_setting import ladder

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

Pair = tuple[int, int]


def with_predictions(
    run: Run,
    analysis: Analysis,
    window: WindowArg = STEADY,
    warmup_steps: int = 1,
    cpus: int | None = None,
) -> Analysis:
    """Predict, from the trace, each finding's advised pool sizes and the best of the sizes
    a sweep would try, without running anything.

    Args:
        run: the recorded run.
        analysis: its ``tftrace.analyze`` result.
        window, warmup_steps, cpus: as the analysis was made with (the steps replayed).

    Returns:
        ``analysis`` with ``Finding.predicted`` (a ``PredictedGain``: speedup and basis, or
        why not) on each finding that advises a setting, and ``prediction`` (the whole grid:
        ``Prediction.best()`` is the headline's setting) or ``prediction_note`` (why there
        is none).

    Example::

        analysis = tftrace.with_predictions(run, tftrace.analyze(run))
        print(analysis.prediction.best() if analysis.prediction else analysis.prediction_note)
    """
    recorded = recorded_sizes(run)
    advised = {f.id: _advised_pair(f, recorded) for f in analysis.findings if f.setting}
    try:
        guess = _predict_grid(run, recorded, advised.values(), window, warmup_steps, cpus)
    except TftraceError as e:
        why = str(e).removeprefix("predict: ")
        findings = tuple(
            replace(f, predicted=PredictedGain(None, why)) if f.setting else f
            for f in analysis.findings
        )
        return replace(analysis, findings=findings, prediction=None, prediction_note=why)
    findings = tuple(
        replace(f, predicted=_gain(guess, advised[f.id])) if f.setting else f
        for f in analysis.findings
    )
    return replace(analysis, findings=findings, prediction=guess, prediction_note=None)


def _advised_pair(finding: Finding, recorded: Pair | None) -> Pair | str:
    """The advised pool sizes (a None size keeps the recorded one), or why not predicted."""
    setting = finding.setting
    assert setting is not None
    if setting.env or setting.cpus is not None:
        return "the advice changes more than pool sizes (an environment variable or the CPUs)"
    if recorded is None:
        return "the recorded pool sizes are unknown"
    return (setting.intra or recorded[0], setting.inter or recorded[1])


def _predict_grid(
    run: Run,
    recorded: Pair | None,
    advised: Iterable[Pair | str],
    window: WindowArg,
    warmup_steps: int,
    cpus: int | None,
) -> Prediction:
    """One prediction over the sweep's sizes and every advised one (intra-op above the
    recorded 1 left out: a run at intra-op 1 holds no shards to spread)."""
    usable = cpus or run.manifest.usable_cpus or 1
    pairs = [p for p in advised if isinstance(p, tuple)]
    intra = set(ladder(usable)) | {a for a, _ in pairs}
    inter = set(ladder(usable)) | {e for _, e in pairs}
    if recorded is not None and recorded[0] == 1:
        intra = {1}
    return predict(
        run,
        intra=sorted(intra),
        inter=sorted(inter),
        cpus=cpus,
        window=window,
        warmup_steps=warmup_steps,
        reasons=False,
    )


def _gain(guess: Prediction, advised: Pair | str) -> PredictedGain:
    if isinstance(advised, str):
        return PredictedGain(None, advised)
    try:
        predicted = guess.setting(*advised)
    except KeyError:
        return PredictedGain(
            None,
            f"the run was recorded at intra-op {guess.recorded_intra}: its ops hold no shards "
            "to spread over more workers",
        )
    return PredictedGain(predicted.speedup, predicted.basis, predicted.bound)
