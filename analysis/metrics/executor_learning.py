"""Whether TF's executor had learned which ops are cheap before the profiler started.

TF's executor takes every op as expensive at first (an estimate of 100 M cycles) and runs
each expensive op that a finished one readies as a closure of its own on the inter-op pool.
It times each expensive op it runs and keeps a running estimate (nine tenths of the last
plus a tenth of the new one); an op estimated under 8000 cycles runs inline on the thread
that readied it. An op of no cost gets there after about 90 calls of its function
(100 M x 0.9^n < 8000). While the profiler runs it times none (the traced branch of
``ExecutorState::ProcessSync`` skips ``UpdateCostEstimate``): a profiler started before
then keeps every op expensive over the whole recording. Once learned, an op under the
threshold is traced at level 3, below the profiler's default of 2, and is not in the trace.

So a trace whose inter-op threads hold many ops of under 2 us (under 8000 cycles on any
CPU up to 4 GHz) shows the unlearned executor. Measured on 2 cores (``fan_out_steps.py``,
16 small products a call): profiled from its first call, 17 closures a call and every
product traced; from call 120, 2 closures a call and none traced. A server of MobileNetV2
(serve-keras) ran intra-op 2, inter-op 1 at 0.53-0.62x of 2, 2 unprofiled; profiled from
its first call, at 0.66x; profiled from call 140, at 0.59x.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_thread_keys
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

# Ops shorter than this are under the executor's threshold on any CPU up to 4 GHz
CHEAP_NS = 2_000
# An unlearned executor shows most of its ops so (78-95 % in four such recordings); a
# learned one few (1-4 % in two recordings of the same server from call 140)
UNLEARNED_SHARE = 0.25
MIN_CHEAP_OPS = 200


def cheap_ops(ops: pd.DataFrame, inter_threads: np.ndarray, lo: int, hi: int) -> tuple[int, float]:
    """The ops on the inter-op threads that start in [lo, hi) and took under ``CHEAP_NS``: how
    many, and their share of those threads' ops then (``ops``: thread, start_ns, end_ns)."""
    start = ops["start_ns"].to_numpy()
    mine = np.isin(ops["thread"].to_numpy(), inter_threads) & (start >= lo) & (start < hi)
    took = ops["end_ns"].to_numpy()[mine] - start[mine]
    if took.size == 0:
        return 0, 0.0
    cheap = int((took < CHEAP_NS).sum())
    return cheap, cheap / took.size


def unlearned_note(run: Run, lo: int, hi: int) -> str | None:
    """A note where the trace of [lo, hi] shows the executor before it learned its cheap ops:
    the one test both the headline and ``predict`` make."""
    return note_for(*cheap_ops(op_events(run), pool_thread_keys(run, Pool.INTER_OP), lo, hi))


def note_for(count: int, share: float) -> str | None:
    """The note for ``count`` cheap ops, ``share`` of the inter-op threads' (None: too few)."""
    if count < MIN_CHEAP_OPS or share < UNLEARNED_SHARE:
        return None
    return (
        f"{share:.0%} of the inter-op threads' ops took under {CHEAP_NS / 1000:g} us: the "
        "profiler started before TF's executor learned which ops are cheap (over about 90 "
        "calls of a function, and never while the profiler runs), so each ran as an "
        "expensive op, many as a closure of their own, where an unprofiled run later runs "
        "them inline (docs/recording.md): the figures are less sure. Record from a later "
        "step (tftrace record --steps 100: ..., counted on the main thread) or, for a "
        "server, a later time (--delay SECONDS)"
    )
