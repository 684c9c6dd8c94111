"""``predict(run, intra, inter, cpus) -> Prediction``: each thread setting's step time, from one
recorded run, without running it.

The window's steps (``metrics.window``: the steady steps by default) are taken apart into
units of work (``step_work``) and replayed on each setting (``replay``); a server's window is
a stretch of its requests replayed together (``serving``), its figures requests per second
and latency. The replay at the
recorded setting is the calibration: its time against the recorded one is the residual, and
every setting's step time is the recorded time over its replayed speedup, so the recorded
setting predicts itself. What the trace cannot support is refused in one line (a run
recorded at intra-op 1 has no shards to spread over more workers) or labelled an
extrapolation (more threads than the usable CPUs; more Eigen workers than recorded).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tftrace.analysis.metrics.executor_learning import unlearned_note
from tftrace.analysis.metrics.profiler_cost import profiler_cost
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.metrics.window import (
    STEADY,
    WindowArg,
    in_recording,
    parse_window,
    resolve_window,
)
from tftrace.analysis.metrics.work import SERVER, find_work
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.trace_facts import with_trace_facts
from tftrace.analysis.predict.items import Items
from tftrace.analysis.predict.pipeline import InputPace, input_wait, pipeline_note
from tftrace.analysis.predict.replays import Replays
from tftrace.analysis.predict.result import (
    CALIBRATED,
    EXTRAPOLATION,
    RECORDED,
    TWO_PACES,
    Prediction,
    SettingPrediction,
    pace_bound,
)
from tftrace.analysis.predict.step_work import OpWork, StepWork
from tftrace.analysis.predict.subject import Subject, loop_subject, server_subject
from tftrace.errors import TftraceError
from tftrace.tracer.sweep_setting import ladder

# What binds a setting: the resource that, doubled, would make its steps the most faster
# (at least ``BINDS``); else Python and the host where recorded waits fill at least
# ``HOST_BOUND`` of the replayed time, else the chain of work itself.
INTER_OP, EIGEN, CORES, CHAIN, HOST_TIME, INPUT_PIPELINE = (
    "inter-op threads",
    "Eigen workers",
    "cores",
    "dependency chain",
    "python / host",
    "input pipeline",  # the steps wait for tf.data's producers at their pace (pipeline.py)
)
BINDS = 0.05
HOST_BOUND = 0.5
RESIDUAL_NOTE = 0.25  # a residual beyond this is said: the model missed the recording
# A recording with more busy threads than cores, or with ops split over the pool at once, for
# more of its replayed span than this is said: what that contention cost is in the work it
# holds (docs/predict.md, measured).
SHARED_NOTE = 0.25
# Split wider than this on average (shards an op), a recording's shards can cost several times
# the ops' work run inline: 28 ways on 16 cores, MobileNetV2 ran 1.73x faster at intra-op 1,
# predicted 0.50x; at 2-4 ways on 2 cores the shards' work was the inline work within 2 %.
WIDE_SPLIT = 8


def predict(
    run: Run,
    intra: Iterable[int] | None = None,
    inter: Iterable[int] | None = None,
    cpus: int | None = None,
    window: WindowArg = STEADY,
    warmup_steps: int = 1,
    reasons: bool = True,
) -> Prediction:
    """Predict the mean step time of each setting of ``intra`` x ``inter`` pool sizes from
    ``run`` (a loop's steps; a server's requests per second and latency), on the CPUs it was
    recorded with (``cpus``: where the run does not say, or to replace it, as ``tftrace
    analyze --cpus``).

    Args:
        intra, inter: the pool sizes to predict (default: those a sweep would try, 1, 2,
            4, ... up to the CPUs and one beyond; intra-op 1 alone for a run recorded at 1).
        window, warmup_steps: the steps replayed, as ``tftrace.analyze`` takes them.
        reasons: find what binds each setting (three more replays of it: one resource
            doubled each); without, each ``reason`` is "" and ``gains`` empty.

    Returns:
        A ``Prediction``: one ``SettingPrediction`` per setting (step time, speedup, what
        binds, basis), ``print`` shows the table.

    Raises:
        TftraceError: no trace, no steps, a server with too few requests, unknown pool
        sizes or CPUs, a thread count below 1, intra-op above 1 for a run recorded at
        intra-op 1.

    Example::

        run = tftrace.load("runs/train")
        print(tftrace.predict(run, intra=(1, 2, 4), inter=(1, 2)))
    """
    if run.events.empty:
        raise TftraceError(f"predict: {run.path} holds no trace to replay")
    if run.regions.empty or not run.regions["scheduled_ns"].notna().any():
        raise TftraceError(
            "predict: the trace holds no thread-pool events (Record, StartRegion; TF 2.16 and "
            "older write none): the executor's order and the ops' shards are not in it"
        )
    run = with_trace_facts(run, cpus)
    cores, cores_basis = _cores(run, given=cpus is not None)
    rec_intra, rec_inter = _recorded_sizes(run)
    work = find_work(run)
    steps = find_steps(run)
    span, basis = resolve_window(run, steps, in_recording(parse_window(window, warmup_steps), run))
    if work.shape == SERVER:
        subject = server_subject(run, work, span, basis, cores)
    else:
        subject = loop_subject(run, steps, span, basis, cores)
    notes: list[str] = []
    intras = _values(intra, "intra", cores, notes, rec_intra)
    inters = _values(inter, "inter", cores, notes, rec_inter)
    notes += _beyond_cores(intras, cores, rec_intra)
    items = subject.items
    pipe = subject.pipeline
    pace = (
        InputPace(pipe, cores, rec_intra, subject.replayed_ns, input_wait(subject.works))
        if pipe is not None and pipe.bound
        else None
    )
    two_paces = subject.pace is not None and subject.pace.two_paces
    paces = _pace_ratios(subject) if two_paces else None
    replays = Replays(
        subject.works,
        cores,
        rec_intra,
        items.caller_share,
        subject.thread_of,
        items.background,
        pace,
        two_paces=two_paces,
    )
    replayed = replays.span(rec_intra, rec_inter)
    charged = replays.charge_crowding(rec_intra, rec_inter, subject.replayed_ns)
    base = replays.span(rec_intra, rec_inter)
    base_latency = replays.latency(rec_intra, rec_inter)
    settings = []
    for i in intras:
        for k in inters:
            span_ns = replays.span(i, k)
            speedup = base / span_ns if span_ns > 0 else 1.0
            gains = (
                {
                    INTER_OP: replays.gain(i, k, (i, 2 * k, 1)),
                    EIGEN: replays.gain(i, k, (2 * i, k, 1)),
                    CORES: replays.gain(i, k, (i, k, 2)),
                }
                if reasons
                else {}
            )
            host_share = replays.host(i, k) / span_ns if span_ns > 0 else 0.0
            served = subject.served(base_latency, replays.latency(i, k), speedup)
            settings.append(
                SettingPrediction(
                    i,
                    k,
                    served.mean_ms if served else subject.recorded_ms / speedup,
                    speedup,
                    _reason(gains, host_share, pace is not None) if reasons else "",
                    gains,
                    host_share,
                    _basis(i, k, rec_intra, rec_inter, cores, two_paces),
                    served,
                    None
                    if paces is None or (i, k) == (rec_intra, rec_inter)
                    else pace_bound(speedup, *paces),
                )
            )
    residual = replayed / subject.replayed_ns - 1 if subject.replayed_ns else 0.0
    notes += [
        *subject.notes,
        *_notes(items, subject.works, residual, charged, replays.overlapped),
    ]
    notes += [pipeline_note(pipe)] if pipe is not None else []
    unlearned = unlearned_note(run, *span)
    notes += [unlearned] if unlearned else []
    return Prediction(
        run.path,
        rec_intra,
        rec_inter,
        cores,
        cores_basis,
        subject.basis,
        subject.replayed,
        subject.in_window,
        subject.recorded_ms,
        replayed / subject.replayed / 1e6 if subject.server is None else replayed / 1e6,
        residual,
        tuple(settings),
        tuple(notes),
        items.caller_share,
        items.caller_measured,
        subject.server,
        charged,
        profiler_cost(run),
        subject.pace,
    )


def _pace_ratios(subject: Subject) -> tuple[float, float] | None:
    """A server at two paces: its slow and fast pace's requests/s over the window's."""
    pace, server = subject.pace, subject.server
    if pace is None or server is None or server.requests_per_s <= 0:
        return None
    return pace.over(server.requests_per_s)


def _notes(
    items: Items, works: tuple[StepWork, ...], residual: float, charged: float, overlapped: bool
) -> list[str]:
    """What makes the figures less sure, in words."""
    notes: list[str] = []
    if charged > 0:
        among = ", shared among the inter-op threads serving its requests" if overlapped else ""
        notes.append(
            f"{charged:.0%} of the recorded time is not in its replay, and its ops (or a BLAS "
            "pool's products) ran split while its threads outnumbered the cores: that time is "
            "taken as what the crowding cost, and charged to each setting by its own crowded "
            f"time{among}"
        )
    elif abs(residual) > RESIDUAL_NOTE:
        notes.append(
            f"the replay of the recorded setting is {residual:+.0%} off the recorded steps: "
            "the trace holds time the model does not place; the speedups are less sure"
        )
    shared = items.rate.shared()
    if charged == 0 and shared > SHARED_NOTE:
        notes.append(
            f"the recording had more busy threads than cores for {shared:.0%} of the replayed "
            "steps' span: the work it holds includes what that contention cost, so settings "
            "with fewer threads may be faster than predicted"
        )
    if items.split_together > SHARED_NOTE:
        notes.append(
            "two ops or more were split over the Eigen pool at once for "
            f"{items.split_together:.0%} of the replayed steps' span: such a recording can hold "
            "more work than the same ops run apart (docs/predict.md), so settings that run "
            "them apart may be faster than predicted"
        )
    split = [op.shards for op in _ops(works) if op.shards]
    ways = float(np.mean(split)) if split else 0.0
    if ways > WIDE_SPLIT:
        notes.append(
            f"the recording split its ops {ways:.0f} ways on average: split that wide, shards "
            "can cost several times the op's work run inline (docs/predict.md, on 16 cores), "
            "and the replay runs a split op inline as its shards' work, so settings with a "
            "smaller intra-op pool may be faster than predicted"
        )
    held = items.background
    if held.beside_python > 0:
        notes.append(
            f"a BLAS library's pool used {held.beside_python:.2f} of a core beside each thread "
            f"running Python ({held.with_python:.2f} of a core over the span, the OS sampler): "
            "the replay runs it there, beside the Python that calls it, not throughout"
        )
    if items.caller_measured:
        notes.append(
            f"an op's own thread used {items.caller_share:.0%} of a core while its shards ran "
            "(the OS sampler): it works beside the Eigen workers at that share"
        )
    elif any(w.shards for w in _ops(works)):
        notes.append(
            "an op's own thread is assumed to work beside its Eigen workers while its shards "
            "run (no OS samples of it, or too few)"
        )
    return notes


def _beyond_cores(intras: Iterable[int], cores: float, rec_intra: int) -> list[str]:
    """Intra-op pools larger than the CPUs and than the recording's: the replay queues their
    blocks on the cores as the kernel does (``placement.py``), a cost the trace of a smaller
    pool does not show, and on the corpus they ran on both sides of it."""
    beyond = [i for i in intras if i > cores and i > rec_intra]
    if not beyond:
        return []
    return [
        f"intra-op {', '.join(map(str, beyond))}: more Eigen workers than the {cores:g} CPUs "
        f"and than recorded ({rec_intra}); the trace does not show what their workers "
        "queued behind busy cores cost, and such pools ran from a third slower to a sixth "
        "faster than predicted (docs/predict.md, intra-op 4 on 2 cores): take their figures "
        "as less sure"
    ]


def _ops(works: tuple[StepWork, ...]) -> list[OpWork]:
    return [seg.op for w in works for u in w.units for seg in u.segments if seg.op is not None]


def _reason(gains: dict[str, float], host_share: float, paced: bool = False) -> str:
    best = max(gains, key=lambda r: gains[r])
    if gains[best] >= BINDS:
        return best
    if host_share >= HOST_BOUND:
        return INPUT_PIPELINE if paced else HOST_TIME
    return CHAIN


def _cores(run: Run, given: bool) -> tuple[float, str]:
    usable = run.manifest.usable_cpus
    if not usable:
        raise TftraceError(
            "predict: the CPUs the process could use are unknown (a bare trace); give --cpus N"
        )
    quota = run.manifest.host.cpu_quota
    if quota and quota < usable:
        return float(quota), f"the cgroup quota of {quota:g} CPUs"
    return float(usable), f"{usable} CPUs given (--cpus)" if given else f"{usable} usable CPUs"


def recorded_sizes(run: Run) -> tuple[int, int] | None:
    """The (intra-op, inter-op) sizes the run was recorded at; None where it does not say."""
    sizes = [run.manifest.pool(name).size for name in ("intra_op", "inter_op")]
    return None if sizes[0] is None or sizes[1] is None else (int(sizes[0]), int(sizes[1]))


def _recorded_sizes(run: Run) -> tuple[int, int]:
    sizes = recorded_sizes(run)
    if sizes is None:
        raise TftraceError(
            "predict: the recorded pool sizes are unknown (the run does not say them and the "
            "trace shows too few of their threads); record it with tftrace record"
        )
    return sizes


def _values(
    given: Iterable[int] | None, what: str, cores: float, notes: list[str], recorded: int
) -> list[int]:
    """The sizes of one pool to predict, the recorded one among them."""
    if given is None:
        values = ladder(max(int(cores), 1))
        if what == "intra" and recorded == 1:
            values = [1]
            notes.append(
                "intra-op 1 only: the run was recorded at intra-op 1, so its ops hold no "
                "shards to spread over more workers; record it at intra-op 2 or more"
            )
    else:
        values = list(dict.fromkeys(given))
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise TftraceError(f"predict: --{what} sizes must be whole numbers >= 1, not {v!r}")
        if what == "intra" and recorded == 1 and any(v > 1 for v in values):
            raise TftraceError(
                "predict: the run was recorded at intra-op 1: its ops hold no shards to spread "
                "over more workers, so intra-op above 1 cannot be predicted; record it at "
                "intra-op 2 or more"
            )
        if not values:
            raise TftraceError(f"predict: no --{what} size given")
    return sorted({int(v) for v in values} | {recorded})


def _basis(
    intra: int, inter: int, rec_intra: int, rec_inter: int, cores: float, two_paces: bool = False
) -> str:
    """How sure a setting's figure is (``result.py``): recorded, calibrated, an extrapolation
    (and why), or, for a server at two paces, less sure whatever the setting."""
    if (intra, inter) == (rec_intra, rec_inter):
        return RECORDED
    beyond = [f"{what} {n}" for what, n in (("intra", intra), ("inter", inter)) if n > cores]
    if beyond:
        why = f"{', '.join(beyond)} > {cores:g} CPUs"
    elif intra > rec_intra:
        why = f"intra {intra} > recorded {rec_intra}"
    else:
        return TWO_PACES if two_paces else CALIBRATED
    return f"{EXTRAPOLATION}: {why}" + ("; two paces" if two_paces else "")
