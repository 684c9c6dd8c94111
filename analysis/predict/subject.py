"""What a prediction replays (``Subject``): a loop's steps, sampled evenly over the window,
or a server's stretch of requests replayed together, with the recorded figures every
setting's prediction is scaled from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import main_thread, pool_thread_keys
from tftrace.analysis.metrics.request_pace import RequestPace, request_pace
from tftrace.analysis.metrics.requests import requests_in
from tftrace.analysis.metrics.steps import Steps
from tftrace.analysis.metrics.work import Work
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.predict.items import Items, thread_items
from tftrace.analysis.predict.pipeline import Pipeline, pipeline
from tftrace.analysis.predict.replays import closed_loop_span
from tftrace.analysis.predict.result import Served
from tftrace.analysis.predict.serving import percentiles_ms, replayed_stretch
from tftrace.analysis.predict.step_work import StepWork, request_work, step_works
from tftrace.errors import TftraceError

MAX_STEPS = 20  # steps replayed, evenly spread over the window: the replay is Python
MIN_REQUESTS = 10  # a server's requests in the window, at least, to replay


@dataclass(frozen=True)
class Subject:
    """What is replayed: a loop's sampled steps, or a server's stretch of requests (one
    piece of time), with the recorded figures its predictions are scaled from."""

    works: tuple[StepWork, ...]
    items: Items
    basis: str
    replayed: int  # steps or requests replayed
    in_window: int  # steps or requests in the window
    replayed_ns: float  # their recorded span, summed
    recorded_ms: float  # the window's mean step time, or mean request latency
    server: Served | None = None  # the window's recorded requests/s and latencies
    notes: tuple[str, ...] = ()
    thread_of: dict[int, int] | None = None  # a server's replayed requests: each one's thread
    stretch_ns: dict[int, float] | None = None  # ... and each one's recorded latency
    pipeline: Pipeline | None = None  # a loop's input pipeline whose work is TF ops
    pace: RequestPace | None = None  # a server's pace over the window (``request_pace``)

    def served(
        self, base: dict[int, float], here: dict[int, float], speedup: float
    ) -> Served | None:
        """A server's setting: requests/s by the replayed span; latencies request by request,
        each the recorded one times its replayed one here over at the recorded setting
        (``base``), their mean and percentiles then scaled to the window's as the replayed
        stretch's recorded ones are to it (the recorded setting predicts itself)."""
        rec, stretch = self.server, self.stretch_ns
        if rec is None or not stretch:
            return None
        ids = [r for r in stretch if base.get(r, 0) > 0 and r in here]
        recorded = np.array([stretch[r] for r in ids], dtype=np.float64)
        predicted = np.array([stretch[r] * here[r] / base[r] for r in ids], dtype=np.float64)
        if not len(ids):
            return Served(rec.requests_per_s * speedup, rec.mean_ms, rec.p50_ms, rec.p99_ms)
        (r50, r99), (p50, p99) = percentiles_ms(recorded), percentiles_ms(predicted)

        def scaled(window: float, was: float, now: float) -> float:
            return window * now / was if was > 0 else now

        return Served(
            rec.requests_per_s * speedup,
            scaled(rec.mean_ms, float(recorded.mean()), float(predicted.mean())),
            scaled(rec.p50_ms, r50, p50),
            scaled(rec.p99_ms, r99, p99),
        )


def loop_subject(
    run: Run, steps: Steps, span: tuple[int, int], basis: str, cores: float
) -> Subject:
    table = steps.within(span).table
    if table.empty:
        raise TftraceError(
            "predict: no steps to replay (no tf.function or annotation repeated on the main "
            f"thread in the window: {basis})"
        )
    replayed = _sample(table)
    main = _main_thread(run)
    lo, hi = int(replayed["start_ns"].min()), int(replayed["end_ns"].max())
    items = thread_items(run, lo, hi, main, cores)
    notes = []
    if len(replayed) < len(table):
        notes.append(f"{len(replayed)} of the window's {len(table)} steps replayed, evenly spread")
    return Subject(
        step_works(items, replayed, main),
        items,
        basis,
        len(replayed),
        len(table),
        float(replayed["duration_ns"].sum()),
        float(table["duration_ns"].mean()) / 1e6,
        notes=tuple(notes),
        pipeline=pipeline(run, _middle(table), main, cores),
    )


def server_subject(
    run: Run, work: Work, span: tuple[int, int], basis: str, cores: float
) -> Subject:
    requests = requests_in(work, span)
    if len(requests) < MIN_REQUESTS:
        raise TftraceError(
            f"predict: a server with {len(requests)} requests in the window ({basis}): too few "
            f"to replay (at least {MIN_REQUESTS})"
        )
    inter_op = run.regions[np.isin(run.regions["thread"], pool_thread_keys(run, Pool.INTER_OP))]
    stretch = replayed_stretch(requests, np.sort(inter_op["start_ns"].to_numpy()))
    origin, end = int(stretch["start_ns"].min()), int(stretch["end_ns"].max())
    threads = tuple(sorted(int(t) for t in stretch["thread"].unique()))
    # the callers' share of a core wants more of their shards than a stretch holds
    items = thread_items(run, origin, end, threads, cores, callers_over=span)
    latency = requests["latency_ns"].to_numpy()
    p50, p99 = percentiles_ms(latency)
    seconds = (span[1] - span[0]) / 1e9
    recorded = Served(len(requests) / seconds, float(latency.mean()) / 1e6, p50, p99)
    notes = [
        f"a server: {len(stretch)} of the window's {len(requests)} requests replayed "
        f"together{' (consecutive, from its middle)' if len(stretch) < len(requests) else ''}, "
        f"on {len(threads)} threads; each thread's next request follows its last by the "
        "recorded gap (a closed loop of clients: requests that arrive at their own pace "
        "would queue instead)"
    ]
    pace = request_pace(run, requests, span)
    notes += [_pace_note(pace, recorded.requests_per_s)] if pace and pace.two_paces else []
    return Subject(
        (request_work(items, stretch, origin),),
        items,
        basis,
        len(stretch),
        len(requests),
        closed_loop_span(stretch["thread"], stretch["start_ns"]) or float(end - origin),
        recorded.mean_ms,
        recorded,
        tuple(notes),
        {int(r): int(t) for r, t in zip(stretch["request"], stretch["thread"], strict=True)},
        {
            int(r): float(ns)
            for r, ns in zip(stretch["request"], stretch["latency_ns"], strict=True)
        },
        pace=pace,
    )


def _pace_note(pace: RequestPace, recorded_rate: float) -> str:
    """A server that ran at two paces (``RequestPace.two_paces``): what the replay misses, and
    the span of the two paces against the window's requests per second."""
    slow, fast = pace.over(recorded_rate)
    return (
        f"the requests ran at two paces ({pace.figures()}): the replay "
        "takes the recorded mix of the two as every setting's, and a setting that changes how "
        "often the request threads hand the interpreter lock over changes it, which one "
        f"recording does not show: the paces alone span {slow:.2f}x to {fast:.2f}x of the "
        "recorded requests per second, so each other setting is given as a span, its replayed "
        "figure at the slow pace to it at the fast one, not as one figure (on 2 cores, a "
        "server recorded at intra-op 2, inter-op 2 ran 2, 1 at 1.38x, replayed at 0.97x, its "
        "paces 0.76x to 1.31x; docs/predict.md)"
    )


def _sample(table: pd.DataFrame) -> pd.DataFrame:
    if len(table) <= MAX_STEPS:
        return table
    rows = np.unique(np.linspace(0, len(table) - 1, MAX_STEPS).round().astype(int))
    return table.iloc[rows]


def _middle(table: pd.DataFrame) -> pd.DataFrame:
    """Up to ``MAX_STEPS`` consecutive steps from the window's middle."""
    first = max(len(table) // 2 - MAX_STEPS // 2, 0)
    return table.iloc[first : first + MAX_STEPS]


def _main_thread(run: Run) -> int:
    main = main_thread(run)
    if main is None:
        raise TftraceError("predict: the run's main thread is not known")
    return main
