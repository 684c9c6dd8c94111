"""An op's phases at a setting, as the replay runs them (``replay.py``).

At intra-op above 1 an op with shards runs its serial part on its own thread, then its
hand-off to the Eigen pool (wall time), then its parallel part over the pool's workers (at
most ``shards x intra / recorded intra``: the pool splits finer as it grows, no finer),
slowed where its blocks queue on too few cores (``placement.py``). At intra-op 1 a split op
runs inline, its shards' work alone (``items.py``); an op not split is its serial and
parallel parts on its thread.
"""

from __future__ import annotations

from tftrace.analysis.predict.placement import placement_slowdown
from tftrace.analysis.predict.step_work import CPU, WAITS, OpWork

INLINE, PAR, HANDOFF = "inline", "par", "handoff"

# A phase: its kind, its work (or wall time), the most Eigen workers it uses, why it waits,
# the share of a core a wait holds, and its slowdown (``_State``)
Phase = tuple[str, float, float, str, float, float]


def op_phases(op: OpWork, intra: int, recorded_intra: int, cores: float) -> list[Phase]:
    """``op``'s phases on ``intra`` Eigen workers and ``cores`` cores, its shards recorded on
    a pool of ``recorded_intra`` (module doc)."""
    if op.shards and intra > 1:
        cap = op.shards * max(1.0, intra / max(recorded_intra, 1))  # Eigen workers
        workers = int(min(intra, cap))
        slow = placement_slowdown(
            op.shards, recorded_intra, workers, op.parallel / max(workers, 1), cores
        )
        return [
            (CPU, op.serial, 1.0, "", 0.0, 1.0),
            (WAITS, op.handoff, 1.0, HANDOFF, 0.0, 1.0),
            (PAR, op.parallel, cap, "", 0.0, slow),
        ]
    if op.shards:
        return [(INLINE, op.inline, 1.0, "", 0.0, 1.0)]
    return [(CPU, op.serial, 1.0, "", 0.0, 1.0), (CPU, op.parallel, 1.0, "", 0.0, 1.0)]
