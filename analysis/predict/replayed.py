"""What the replay of a step gives (``replay.py``): its span, its host time, its requests'
marks and its crowded time."""

from __future__ import annotations

from dataclasses import dataclass, field

from tftrace.analysis.predict.step_work import BEGIN, END


@dataclass(frozen=True)
class Replayed:
    """A step's replayed span (ns), the part of it in which only recorded waits ran, and when
    each request's marks were reached (``marks``: (request, BEGIN or END) -> ns)."""

    span_ns: float
    host_ns: float
    marks: dict[tuple[int, str], float] = field(default_factory=dict)
    # the time an op ran split over the Eigen pool while more threads wanted a core than
    # there were cores (``replays.Replays.charge_crowding``)
    crowded_ns: float = 0.0

    def latencies(self) -> dict[int, float]:
        """Each request's replayed latency (ns), for those whose both marks were reached."""
        return {
            r: end - self.marks[(r, BEGIN)]
            for (r, edge), end in self.marks.items()
            if edge == END and (r, BEGIN) in self.marks
        }
