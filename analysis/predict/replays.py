"""The replays of one prediction (``Replays``): each setting's replay of the subject's units,
made once and kept, with a server's span taken over whole request cycles."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tftrace.analysis.predict.background import Background
from tftrace.analysis.predict.replay import replay
from tftrace.analysis.predict.replayed import Replayed
from tftrace.analysis.predict.step_work import BEGIN, StepWork

# A recording whose cores were crowded while ops ran split (``Replays.charge_crowding``) for
# less than this share of its replay has its unplaced time scaled with every setting instead:
# too little crowding to carry it.
MIN_CROWDED = 0.05


class Replays:
    """The window's replayed steps on each setting, each replayed once: their total span and
    the part of it in which only recorded waits ran (ns).

    A server's span is the time each thread took from its first replayed request's start to
    its last one's, summed over the threads (``closed_loop_span``): whole cycles of request
    and gap; the stretch's edges, where a thread waits for its first request or has ended,
    left out.

    ``charge_crowding``: where the recording took longer than its replay, and its ops ran
    split over the Eigen pool while its threads outnumbered the cores, the time the replay
    did not place is taken as what that crowding cost beyond an even share of the cores (a
    shard whose worker waits for a core holds up its op, and the op its thread). It is
    charged to every setting by its own crowded time (``Replayed.crowded_ns``): a setting
    that splits no op while the cores are crowded (intra-op 1; threads no more than the
    cores) pays none of it. A loop's step pays each stall whole; a server's requests pay
    ``stall_share`` of it (the other inter-op threads serve other requests meanwhile),
    where its recording had more than one inter-op thread to show that. Not for a server
    that ran at two paces (``two_paces``, ``metrics.request_pace``): its request threads'
    CPU a request moved with how often they handed the interpreter lock over, so the time
    short of its replayed stretch is that pace's, not split ops stalled on crowded cores,
    and is scaled with every setting (serve-executor recorded at 2/2 on 2 cores: intra-op 1
    predicted 1.33x so, 1.11x scaled, ran 0.98-1.05x; docs/predict.md)."""

    def __init__(
        self,
        works: tuple[StepWork, ...],
        cores: float,
        rec_intra: int,
        caller: float,
        thread_of: dict[int, int] | None = None,
        held: Background | None = None,
        pace: Callable[[int, int], float] | None = None,
        two_paces: bool = False,
    ):
        self.works, self.cores, self.rec_intra, self.caller = works, cores, rec_intra, caller
        # an input pipeline's: what (intra, more cores) adds to the steps' wait for input
        self.pace = pace
        self.held = held or Background()
        self.thread_of = thread_of  # a server's requests: the thread that made each
        self.request_threads = len(set(thread_of.values())) if thread_of else 0
        self.overlapped = False  # a stall is shared among the inter-op threads (``stall_share``)
        self.done: dict[tuple[int, int, int], _Setting] = {}
        self.per_crowded = 0.0  # span charged per ns of crowded time (``charge_crowding``)
        self.two_paces = two_paces  # a server at two paces: nothing charged (class doc)

    def _of(self, intra: int, inter: int, more_cores: int = 1) -> _Setting:
        key = (intra, inter, more_cores)
        if key not in self.done:
            cores = self.cores * more_cores
            held = self.held.at(intra, self.rec_intra)
            steps = [
                replay(
                    w,
                    intra,
                    inter,
                    cores,
                    self.rec_intra,
                    self.caller,
                    held,
                    self.held.beside_python,
                    self.held.spin_budget_ns,
                    self.held.wakeup,
                    self.held.inter_wakeup,
                )
                for w in self.works
            ]
            span = sum(r.span_ns for r in steps)
            if self.thread_of is not None:
                span = _closed_loop_span(steps[0], self.thread_of) or span
            self.done[key] = _Setting(
                span,
                sum(r.span_ns for r in steps),
                sum(r.host_ns for r in steps),
                {k: ns for r in steps for k, ns in r.latencies().items()},
                sum(r.crowded_ns for r in steps),
                self.pace(intra, more_cores) if self.pace is not None else 0.0,
            )
        return self.done[key]

    def charge_crowding(self, intra: int, inter: int, recorded_ns: float) -> float:
        """Charge the recorded setting's unplaced time to its crowded time (class doc), where
        the recording took longer than its replay and the cores were crowded for at least
        ``MIN_CROWDED`` of the replay, but for a server at two paces; the share of the
        recorded time so charged (0 where none is)."""
        base = self._of(intra, inter)
        unplaced = recorded_ns - base.span_ns
        if self.two_paces or unplaced <= 0 or base.crowded_ns < MIN_CROWDED * base.wall_ns:
            return 0.0
        self.overlapped = self.request_threads > 1 and inter > 1
        self.per_crowded = unplaced / (base.crowded_ns * self.stall_share(inter))
        return unplaced / recorded_ns

    def stall_share(self, inter: int) -> float:
        """The share of an inter-op thread's stall (its op's shard waiting for a core) that
        the replayed time pays: a loop's step waits for that op, all of it; a server's
        other inter-op threads serve other requests meanwhile, so its requests lose the
        stalled thread's share of those serving them (``inter`` threads, at most one per
        request thread). Only where the recording had two inter-op threads or more: on one,
        every request waited for each stall (the profiler's cost per op falls on that thread
        too), and what another thread would have overlapped is not in the trace."""
        return 1.0 / min(inter, self.request_threads) if self.overlapped else 1.0

    def span(self, intra: int, inter: int, more_cores: int = 1) -> float:
        setting = self._of(intra, inter, more_cores)
        charge = self.per_crowded * setting.crowded_ns * self.stall_share(inter)
        return setting.span_ns + charge + setting.input_ns

    def host(self, intra: int, inter: int) -> float:
        return self._of(intra, inter).host_ns

    def latency(self, intra: int, inter: int) -> dict[int, float]:
        """The replayed requests' latencies (ns) by request, each stretched as the setting's
        span is by its charge; empty for a loop."""
        setting = self._of(intra, inter)
        stretch = self.span(intra, inter) / setting.span_ns if setting.span_ns > 0 else 1.0
        return {r: ns * stretch for r, ns in setting.latency.items()}

    def gain(self, intra: int, inter: int, doubled: tuple[int, int, int]) -> float:
        """How much faster the steps of (intra, inter) would be with one resource doubled."""
        more = self.span(*doubled)
        return self.span(intra, inter) / more - 1 if more > 0 else 0.0


@dataclass(frozen=True)
class _Setting:
    """One setting's replay: its span (a server's over whole request cycles), wall time,
    host time and crowded time (ns), its requests' latencies, and its input pipeline's
    change to the wait for input."""

    span_ns: float
    wall_ns: float
    host_ns: float
    latency: dict[int, float]
    crowded_ns: float
    input_ns: float = 0.0  # what the setting adds to the wait for input (``pipeline.py``)


def _closed_loop_span(replayed: Replayed, thread_of: dict[int, int]) -> float | None:
    """``closed_loop_span`` of the replayed requests."""
    begins = [(thread_of[r], t) for (r, edge), t in replayed.marks.items() if edge == BEGIN]
    return closed_loop_span([b for b, _ in begins], [t for _, t in begins])


def closed_loop_span(threads: Iterable[int], begins: Iterable[float]) -> float | None:
    """The time each thread took from its first request's start to its last one's, summed
    over the threads: whole cycles of request and gap, each thread's requests weighed by
    their count (a thread that made two at the warm-up's end barely counts); None where no
    thread made two requests."""
    by: dict[int, list[float]] = {}
    for thread, t in zip(threads, begins, strict=True):
        by.setdefault(int(thread), []).append(float(t))
    span = sum(max(b) - min(b) for b in by.values())
    return span if span > 0 else None
