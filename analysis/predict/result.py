"""What ``tftrace.predict`` returns: the predicted step time of each thread setting, why, and
how sure (``basis``), beside the recorded setting it was calibrated on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.analysis.findings.finding import speedup_text
from tftrace.analysis.metrics.profiler_cost import ProfilerCost
from tftrace.analysis.metrics.request_pace import RequestPace
from tftrace.analysis.presenting import as_html, as_text

RECORDED = "recorded"  # the basis of the recorded setting: the prediction is the recording
CALIBRATED = "calibrated"  # the replay, scaled by its residual at the recorded setting
EXTRAPOLATION = "extrapolation"  # beyond what the run shows: its basis says how
# A server whose requests ran at two paces (``metrics.request_pace``): the setting moves the
# time spent at each, which the replay does not (docs/predict.md, "A server's two paces").
TWO_PACES = "less sure: two paces"


# A setting is recommended by its prediction only this much faster than the recorded one:
# below, the replay's own rounding and the steps it samples decide (docs/predict.md).
RECOMMEND_GAIN = 1.02
# Settings predicted within this of the fastest are as fast: the replay's rounding decides.
TIE = 0.01
# An extrapolation is chosen as the best only this much faster than the best setting inside
# what the run shows: it is the model's figure beyond the run, trusted less. Over the
# diagnosis corpus, servers predicted 1-3 % faster at inter-op 4 on 2 cores ran 3-10 %
# slower there than at the calibrated setting the prediction put next.
EXTRAPOLATION_MARGIN = 0.05


@dataclass(frozen=True)
class Served:
    """A server's figures at one setting (recorded, or predicted): requests per second, and
    the requests' mean, median and 99th-percentile latency in ms."""

    requests_per_s: float
    mean_ms: float
    p50_ms: float
    p99_ms: float

    def to_json(self) -> dict[str, float]:
        return {
            "requests_per_s": self.requests_per_s,
            "mean_ms": self.mean_ms,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
        }


@dataclass(frozen=True)
class SettingPrediction:
    """One setting: its predicted mean step time (ms), its speedup over the recorded setting
    (> 1: faster), what binds it (``reason``: the resource that, doubled, would make it the
    most faster, by at least 5 %; else, where the recorded waits fill half its replayed time
    or more, ``input pipeline`` for a step paced by its tf.data producers and ``python /
    host`` for any other, else ``dependency chain``), how much faster each resource doubled
    would make it (``gains``: 0.25 is 25 % faster), the share of its replayed time in which
    only recorded waits ran (``host_share``), and its ``basis`` (``RECORDED``, ``CALIBRATED``,
    ``EXTRAPOLATION: why``, or for a server at two paces ``TWO_PACES``, an extrapolation's
    ending in ``; two paces``).

    For a server, ``speedup`` is its requests per second over the recorded setting's,
    ``step_ms`` a request's mean latency, and ``served`` has its requests/s and latency
    percentiles (None for a loop).

    ``bound``: where the trace cannot support one figure (a server at two paces, every
    setting but the recorded one), the (low, high) span of the speedup: the replay's figure
    at the slow pace and at the fast one (``pace_bound``). ``speedup`` is then the replay of
    the recorded mix of the two, which the setting moves: read the span, not the figure."""

    intra: int
    inter: int
    step_ms: float
    speedup: float
    reason: str
    gains: dict[str, float]
    host_share: float
    basis: str
    served: Served | None = None
    bound: tuple[float, float] | None = None

    @property
    def recorded(self) -> bool:
        return self.basis == RECORDED

    def speedup_label(self) -> str:
        """``1.91x``, or where only a span is known ``0.76x to 1.24x``."""
        return speedup_text(self.speedup, self.bound)

    def served_span(self) -> tuple[Served, Served] | None:
        """A server's figures at the low and at the high end of ``bound`` (None without
        one): requests/s scaled with the speedup, latencies against it (as many requests in
        flight, each takes as much longer as fewer are served)."""
        if self.bound is None or self.served is None or self.speedup <= 0:
            return None
        return _scaled(self.served, self.bound[0] / self.speedup), _scaled(
            self.served, self.bound[1] / self.speedup
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "intra": self.intra,
            "inter": self.inter,
            "step_ms": self.step_ms,
            "speedup": self.speedup,
            "reason": self.reason,
            "gains": dict(self.gains),
            "host_share": self.host_share,
            "basis": self.basis,
            "served": self.served.to_json() if self.served else None,
            "speedup_bound": list(self.bound) if self.bound else None,
        }


def pace_bound(speedup: float, slow: float, fast: float) -> tuple[float, float]:
    """A setting's span at two paces: its replayed ``speedup`` (the recorded mix of the paces)
    with all its requests at the slow pace and all at the fast one, ``slow`` and ``fast``
    being those paces' requests/s over the recorded window's (docs/predict.md, "A server's
    two paces")."""
    return speedup * slow, speedup * fast


def _scaled(served: Served, factor: float) -> Served:
    """``served`` with ``factor`` times the requests/s, so each latency over ``factor``."""
    return Served(
        served.requests_per_s * factor,
        served.mean_ms / factor,
        served.p50_ms / factor,
        served.p99_ms / factor,
    )


@dataclass(frozen=True, repr=False)
class Prediction:
    """Every setting asked for, predicted from one recorded run (``tftrace.predict``).

    ``recorded_ms`` is the mean step time of the window's steps as recorded; ``replayed_ms``
    what the replay gives at the recorded setting before calibration (``residual``: replayed
    over recorded, less 1); every setting's time is the recorded time over its replayed
    speedup, so the recorded setting predicts itself. ``steps`` is how many steps of the
    window were replayed (``window_steps``: how many it holds). ``caller_share``: the share of
    a core an op's own thread used while its shards ran, by the OS sampler where
    ``caller_measured`` (else a whole core is assumed: TF's caller runs shards too).

    A server (``server``: its recorded requests/s and latencies over the window) is replayed
    as one stretch of its requests: ``steps`` counts the requests replayed, ``recorded_ms``
    is their mean latency, ``replayed_ms`` the stretch's replayed span.

    ``pace``: a server's pace over the window (``metrics.request_pace``); where it ran at two
    paces the notes say what the replay misses.

    The times are the profiled workload's. ``profiler_cost``, where the run timed steps
    outside its profiled window, says what the profiler added at the recorded setting; it
    is not the same at every setting (docs/predict.md), so it is said, not applied.

    Example::

        guess = tftrace.predict(tftrace.load("runs/train"), inter=(1, 2))
        print(guess)  # one row per setting
        best = guess.best()  # best.intra, best.inter, best.speedup, best.basis
    """

    path: Path
    recorded_intra: int
    recorded_inter: int
    cores: float
    cores_basis: str
    window_basis: str
    steps: int
    window_steps: int
    recorded_ms: float
    replayed_ms: float
    residual: float
    settings: tuple[SettingPrediction, ...]
    notes: tuple[str, ...] = ()
    caller_share: float = 1.0  # of a core, an op's own thread while its shards ran
    caller_measured: bool = False  # by the OS sampler (else assumed)
    server: Served | None = None  # a server's recorded figures; None for a loop
    # the share of the recorded time charged to each setting by its crowded time
    # (``Replays.charge_crowding``); 0: every setting is scaled by the residual
    charged: float = 0.0
    # what the profiler added to the recorded setting's steps, where the run timed steps
    # outside its profiled window (``metrics.profiler_cost``); None: every step profiled
    profiler_cost: ProfilerCost | None = None
    # a server's pace over the window (``metrics.request_pace``): where it ran at two paces,
    # the replay carries the recorded mix of the two to every setting; None for a loop
    pace: RequestPace | None = None

    @property
    def unit(self) -> str:
        """What is timed: ``step``, or a server's ``request``."""
        return "request" if self.server else "step"

    def best(self) -> SettingPrediction:
        """The setting predicted fastest: the most steps (or requests) per second, an
        extrapolation only ``EXTRAPOLATION_MARGIN`` faster than every setting inside what the
        run shows. Among those within ``TIE`` of it, the recorded one, else one inside what
        the run shows, else the fewest threads."""
        return _best(self.settings, lambda s: s.speedup)

    def ranked(
        self, figure: Callable[[SettingPrediction], float] = lambda s: s.speedup
    ) -> list[SettingPrediction]:
        """Every setting, best first by ``figure`` (higher better; default: the speedup),
        each the ``best`` of those left, by its rules: what ``sweep --predict K`` times."""
        left, order = list(self.settings), []
        while left:
            order.append(_best(left, figure))
            left.remove(order[-1])
        return order

    @property
    def two_paces(self) -> bool:
        """Whether the server's requests ran at two paces (``RequestPace.two_paces``): the
        model cannot rank its settings (``TWO_PACES``)."""
        return self.pace is not None and self.pace.two_paces

    @property
    def recommend_gain(self) -> float:
        """How much faster than the recorded setting the best must be predicted to be
        recommended: ``RECOMMEND_GAIN``, and for a server at two paces at least its fast
        pace's requests/s over the window's, which a setting inside that span may owe to
        the pace alone (``TWO_PACES``)."""
        pace, server = self.pace, self.server
        if not self.two_paces or pace is None or server is None or server.requests_per_s <= 0:
            return RECOMMEND_GAIN
        return max(RECOMMEND_GAIN, pace.over(server.requests_per_s)[1])

    def recommended(self) -> SettingPrediction | None:
        """The setting predicted fastest where it is ``recommend_gain`` faster than the
        recorded one; None: keep the recorded setting."""
        best = self.best()
        return None if best.recorded or best.speedup < self.recommend_gain else best

    def setting(self, intra: int, inter: int) -> SettingPrediction:
        """The prediction of one setting (KeyError when it was not asked for)."""
        for s in self.settings:
            if (s.intra, s.inter) == (intra, inter):
                return s
        raise KeyError(f"intra {intra}, inter {inter}: not predicted")

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (what ``tftrace predict --json`` prints)."""
        return {
            "run": str(self.path),
            "recorded": {"intra": self.recorded_intra, "inter": self.recorded_inter},
            "cores": self.cores,
            "cores_basis": self.cores_basis,
            "window_basis": self.window_basis,
            "steps": self.steps,
            "window_steps": self.window_steps,
            "recorded_ms": self.recorded_ms,
            "replayed_ms": self.replayed_ms,
            "residual": self.residual,
            "charged": self.charged,
            "caller_share": self.caller_share,
            "caller_measured": self.caller_measured,
            "server": self.server.to_json() if self.server else None,
            "settings": [s.to_json() for s in self.settings],
            "notes": list(self.notes),
            "profiler_cost": self.profiler_cost.to_json() if self.profiler_cost else None,
            "request_pace": self.pace.to_json() if self.pace else None,
        }

    def to_html(self) -> str:
        return as_html(self)

    def __repr__(self) -> str:
        best = self.best()
        return (
            f"<Prediction {self.path}: {len(self.settings)} settings, best intra {best.intra} "
            f"inter {best.inter} ({best.speedup_label()})>"
        )

    def __str__(self) -> str:
        return as_text(self)


def _best(
    settings: Sequence[SettingPrediction], figure: Callable[[SettingPrediction], float]
) -> SettingPrediction:
    """``Prediction.best`` among ``settings`` by ``figure`` (higher better)."""
    shown = [figure(s) for s in settings if not s.basis.startswith(EXTRAPOLATION)]
    bar = max(shown, default=0.0) * (1 + EXTRAPOLATION_MARGIN)
    trusted = [s for s in settings if not s.basis.startswith(EXTRAPOLATION) or figure(s) > bar]
    top = max(figure(s) for s in trusted)
    near = [s for s in trusted if figure(s) * (1 + TIE) >= top]
    return min(
        near, key=lambda s: (not s.recorded, s.basis.startswith(EXTRAPOLATION), s.intra + s.inter)
    )
