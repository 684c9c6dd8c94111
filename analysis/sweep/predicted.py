"""``tftrace sweep --predict K``: the baseline recorded once, every setting of the grid
predicted from it (``tftrace.predict``), and only the baseline and the ``K`` settings
predicted fastest timed.

What it saves is said (timed runs not made), and so is what it may have missed: the best
setting not run, by its prediction, against the recommended one's, with the model's error
(``MODEL_ERROR``, the accuracy target of docs/predict.md). Settings the model cannot rank (an
intra-op pool above 1 from a baseline at intra-op 1, and every setting of a server whose
requests ran at two paces: ``Prediction.two_paces``) are timed anyway. Where the run cannot be
predicted at all (a trace without thread-pool events, a server with too few requests), the
whole grid is timed and the result says why. A server swept for a latency percentile
(``--objective p50`` or ``p99``) is ranked by that percentile's prediction; otherwise by the
predicted requests (or steps) per second.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from tftrace.analysis.findings.finding import speedup_text
from tftrace.analysis.model.run import Run
from tftrace.analysis.predict.predicting import predict, recorded_sizes
from tftrace.analysis.predict.result import SettingPrediction
from tftrace.analysis.sweep.timing import Objective
from tftrace.errors import TftraceError
from tftrace.tracer.sweep_setting import Setting, SweepError

# How far a prediction may be off (the median error the model is held to, docs/predict.md):
# a setting not run that is predicted within this of the recommended one might beat it.
MODEL_ERROR = 0.15


def check_predictable(k: int, varies_env: bool, varies_cpus: bool, instances: bool) -> None:
    """Refuse in one line what ``--predict`` cannot do: the model predicts pool sizes only."""
    if k < 1:
        raise SweepError(f"--predict {k}: give how many predicted settings to time (1 or more)")
    if varies_env or varies_cpus or instances:
        raise SweepError(
            "--predict predicts pool sizes only: not with --env, --cpus or --instances"
        )


@dataclass(frozen=True)
class Narrowed:
    """The settings to time (``settings``, in the grid's order) of the whole ``grid``, each
    predicted setting's speedup over the baseline (``speedups``, by ``Setting.key()``), and
    ``why_not``: why nothing was predicted (then ``settings`` is the grid); ``two_paces``:
    the baseline's requests ran at two paces, so every setting was timed."""

    k: int
    grid: tuple[Setting, ...]
    settings: tuple[Setting, ...]
    speedups: dict[tuple[Any, ...], float] = field(default_factory=dict)
    bases: dict[tuple[Any, ...], str] = field(default_factory=dict)
    why_not: str | None = None
    two_paces: bool = False
    # the settings the trace gives only a span of (a server at two paces): (low, high)
    bounds: dict[tuple[Any, ...], tuple[float, float]] = field(default_factory=dict)

    def label(self, s: Setting) -> str:
        """The setting and its predicted speedup: ``... 1.24x``, a span ``... 0.95x to 1.55x``
        (a server at two paces), or ``... not predicted``."""
        if s.key() not in self.speedups:
            return f"{s.label()} not predicted"
        return f"{s.label()} {speedup_text(self.speedups[s.key()], self.bounds.get(s.key()))}"

    def lines(self, recommended: Setting, repeat: int) -> list[str]:
        """What the shortcut did and what it may have missed, in sentences."""
        if self.why_not is not None:
            return [f"--predict {self.k}: nothing predicted ({self.why_not}): the whole grid ran"]
        ran = {s.key() for s in self.settings}
        saved = (len(self.grid) - len(self.settings)) * repeat
        picked = ", ".join(self.label(s) for s in self.settings)
        lines = [
            f"--predict {self.k}: {len(self.speedups)} of {len(self.grid)} settings predicted "
            f"from one recorded run of the baseline; timed {len(self.settings)} ({picked}, "
            f"predicted speedups): {saved} of {len(self.grid) * repeat} timed runs saved"
        ]
        if self.two_paces:
            lines.append(
                "every setting predicted was timed: the baseline's requests ran at two paces, "
                "and the setting moves the time spent at each, which the model does not "
                'predict (docs/predict.md, "A server\'s two paces")'
            )
        skipped = [s for s in self.grid if s.key() not in ran and s.key() in self.speedups]
        if not skipped:
            return lines
        best = max(skipped, key=lambda s: self.speedups[s.key()])
        mine = self.speedups.get(recommended.key())
        theirs = self.speedups[best.key()]
        if mine is None:
            return lines
        if theirs >= mine * (1 - MODEL_ERROR):
            lines.append(
                f"the whole grid might change the verdict: {best.label()}, not timed, was "
                f"predicted {theirs:.2f}x, within the model's error ({MODEL_ERROR:.0%}) of "
                f"the recommended {recommended.label()}'s {mine:.2f}x"
            )
        else:
            lines.append(
                f"the whole grid would change the verdict only if the model is off by more "
                f"than {MODEL_ERROR:.0%}: the best setting not timed, {best.label()}, was "
                f"predicted {theirs:.2f}x against {mine:.2f}x for {recommended.label()}"
            )
        return lines

    def to_json(self, recommended: Setting, repeat: int) -> dict[str, Any]:
        ran = {s.key() for s in self.settings}
        return {
            "k": self.k,
            "why_not": self.why_not,
            "settings": [
                {
                    **s.to_json(),
                    "predicted_speedup": self.speedups.get(s.key()),
                    "predicted_bound": list(self.bounds[s.key()])
                    if s.key() in self.bounds
                    else None,
                    "basis": self.bases.get(s.key()),
                    "timed": s.key() in ran,
                }
                for s in self.grid
            ],
            "text": self.lines(recommended, repeat),
        }


def narrow(
    run: Run,
    grid: Sequence[Setting],
    baseline: Setting,
    k: int,
    objective: Objective = Objective.THROUGHPUT,
) -> Narrowed:
    """The baseline, the ``k`` settings of ``grid`` predicted best from ``run`` (the baseline
    recorded) by ``objective`` (``throughput``, ``p50``, ``p99``: a server's latency), and
    every setting the model cannot rank."""
    grid = tuple(grid)
    recorded = recorded_sizes(run)
    if recorded is None:
        return Narrowed(k, grid, grid, why_not="the recorded pool sizes are unknown")
    rec_intra, rec_inter = recorded
    usable = run.manifest.usable_cpus or rec_intra

    def sizes(s: Setting) -> tuple[int, int]:
        def one(v: int | None, base: int | None, rec: int) -> int:
            if v:
                return v
            return rec if not base else usable  # TF's default: one thread per CPU

        return one(s.intra, baseline.intra, rec_intra), one(s.inter, baseline.inter, rec_inter)

    pairs = {s.key(): sizes(s) for s in grid}
    rankable = [s for s in grid if rec_intra > 1 or pairs[s.key()][0] == 1]
    try:
        guess = predict(
            run,
            intra=sorted({pairs[s.key()][0] for s in rankable}),
            inter=sorted({pairs[s.key()][1] for s in rankable}),
            reasons=False,
        )
    except TftraceError as e:
        return Narrowed(k, grid, grid, why_not=str(e).removeprefix("predict: "))
    base_figure = _figure(guess.setting(*pairs[baseline.key()]), objective)
    speedups, bases, bounds = {}, {}, {}
    for s in rankable:
        p = guess.setting(*pairs[s.key()])
        speedups[s.key()], bases[s.key()] = _figure(p, objective) / base_figure, p.basis
        if p.bound is not None and p.speedup > 0:
            # the span moves every figure alike: requests/s with it, latencies against it
            bounds[s.key()] = (
                speedups[s.key()] * p.bound[0] / p.speedup,
                speedups[s.key()] * p.bound[1] / p.speedup,
            )
    # ranked as the prediction's best is chosen: settings predicted alike go by what the run
    # shows, then by fewer threads, never by the replay's rounding
    order = {
        (p.intra, p.inter): i for i, p in enumerate(guess.ranked(lambda p: _figure(p, objective)))
    }
    others = sorted(
        (s for s in rankable if s.key() != baseline.key()), key=lambda s: order[pairs[s.key()]]
    )
    keep = {baseline.key()} | {s.key() for s in others[:k]}
    keep |= timed_anyway(grid, speedups, guess.two_paces)
    timed = tuple(s for s in grid if s.key() in keep)
    return Narrowed(k, grid, timed, speedups, bases, two_paces=guess.two_paces, bounds=bounds)


def timed_anyway(
    grid: Sequence[Setting], predicted: Collection[tuple[Any, ...]], two_paces: bool
) -> set[tuple[Any, ...]]:
    """The settings of ``grid`` timed whatever their prediction: those not ``predicted`` (by
    ``Setting.key()``), and every one where the baseline's requests ran at two paces, which
    the model cannot rank (``Prediction.two_paces``)."""
    return {s.key() for s in grid if two_paces or s.key() not in predicted}


def _figure(p: SettingPrediction, objective: Objective) -> float:
    """What ranks a setting, higher better: its speedup (steps or requests per second), or
    for a server swept for a latency percentile, one over that percentile."""
    served = p.served
    if served is None or objective is Objective.THROUGHPUT:
        return p.speedup
    latency = served.p50_ms if objective is Objective.P50 else served.p99_ms
    return 1 / latency if latency > 0 else p.speedup
