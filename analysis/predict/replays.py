"""The replays of one prediction (``Replays``): each setting's replay of the subject's units,
made once and kept, with a server's span taken over whole request cycles."""

from __future__ import annotations

from collections.abc import Iterable

from tftrace.analysis.predict.background import Background
from tftrace.analysis.predict.replay import Replayed, replay
from tftrace.analysis.predict.step_work import BEGIN, StepWork


class Replays:
    """The window's replayed steps on each setting, each replayed once: their total span and
    the part of it in which only recorded waits ran (ns).

    A server's span is the time each thread took from its first replayed request's start to
    its last one's, summed over the threads (``closed_loop_span``): whole cycles of request
    and gap; the stretch's edges, where a thread waits for its first request or has ended,
    left out."""

    def __init__(
        self,
        works: tuple[StepWork, ...],
        cores: float,
        rec_intra: int,
        caller: float,
        thread_of: dict[int, int] | None = None,
        held: Background | None = None,
    ):
        self.works, self.cores, self.rec_intra, self.caller = works, cores, rec_intra, caller
        self.held = held or Background()
        self.thread_of = thread_of  # a server's requests: the thread that made each
        self.done: dict[tuple[int, int, int], tuple[float, float, dict[int, float]]] = {}

    def _of(
        self, intra: int, inter: int, more_cores: int = 1
    ) -> tuple[float, float, dict[int, float]]:
        key = (intra, inter, more_cores)
        if key not in self.done:
            cores = self.cores * more_cores
            held = self.held.at(intra, self.rec_intra)
            steps = [
                replay(w, intra, inter, cores, self.rec_intra, self.caller, held)
                for w in self.works
            ]
            latency = {k: ns for r in steps for k, ns in r.latencies().items()}
            span = sum(r.span_ns for r in steps)
            if self.thread_of is not None:
                span = _closed_loop_span(steps[0], self.thread_of) or span
            self.done[key] = (
                span,
                sum(r.host_ns for r in steps),
                latency,
            )
        return self.done[key]

    def span(self, intra: int, inter: int) -> float:
        return self._of(intra, inter)[0]

    def host(self, intra: int, inter: int) -> float:
        return self._of(intra, inter)[1]

    def latency(self, intra: int, inter: int) -> dict[int, float]:
        """The replayed requests' latencies (ns) by request; empty for a loop."""
        return self._of(intra, inter)[2]

    def gain(self, intra: int, inter: int, doubled: tuple[int, int, int]) -> float:
        """How much faster the steps of (intra, inter) would be with one resource doubled."""
        more = self._of(*doubled)[0]
        return self.span(intra, inter) / more - 1 if more > 0 else 0.0


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
