"""What an op split over more Eigen workers than cores loses to where the kernel puts them.

An op whose shards are one per worker (the pool splits it into as many blocks as it has
workers: oneDNN's products, and every op whose recording shows no more shards than the
recorded pool) ends when its last shard does. The kernel wakes the workers onto idle cores
while there are any; the rest queue behind a busy core, and a block queued behind another
cannot be taken by a worker that is free: with ``k`` workers on ``C`` cores, ``C`` of them
get a core each and the other ``k - C`` queue on one of the ``C`` at random. The op then
takes as long as the most loaded core's queue, not ``k / C`` blocks' time: on 2 cores, 4
blocks end after 2.5 blocks' time on average (the two queued land on the same core half the
time), 1.25x. Measured on 2 cores, two chains of 600x600 products (``branches.py``)
recorded at intra-op 2 and 4, inter-op 1: the same CPU time (421 and 427 ms), the ops 1.26x
longer at 4 (the longest 3.2-3.5 ms against 2.0-2.2 ms: three blocks' time on one core),
the cores idle meanwhile; the unprofiled sweeps ran 4/1 at 0.80-0.84x of 2/1's speed.

Where an op's blocks outnumber its workers, a free worker takes the blocks left (Eigen's
pool steals), and nothing waits on one core: no slowdown. Where a block is long against the
kernel's load balancing, which moves a queued thread to an idle core within its balance
interval (a domain's is, at least, a millisecond per CPU in it), the queue is mostly undone:
eager 1500x1500 products (34 ms blocks at intra-op 2) ran as fast at intra-op 4 as at 2 on 2
cores. The slowdown is taken in full up to that interval, in proportion beyond it.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

# The kernel's load balancing moves a queued thread to an idle core within its balance
# interval: at least a millisecond per CPU of the scheduling domain (Linux's
# ``sd->min_interval`` is the domain's weight, in ms)
BALANCE_NS_PER_CPU = 1_000_000.0


@lru_cache(maxsize=4096)
def _all_at_most(balls: int, bins: int, most: int) -> float:
    """The probability that ``balls`` thrown at random into ``bins`` leave none with more
    than ``most``: each bin in turn takes a binomial share of the balls left."""
    left = {balls: 1.0}
    for i in range(bins):
        p = 1.0 / (bins - i)
        after: dict[int, float] = {}
        for n, prob in left.items():
            for j in range(min(most, n) + 1):
                if i == bins - 1 and j != n:
                    continue  # the last bin takes what is left
                q = prob * comb(n, j) * p**j * (1 - p) ** (n - j)
                after[n - j] = after.get(n - j, 0.0) + q
        left = after
    return left.get(0, 0.0)


@lru_cache(maxsize=1024)
def queued_slowdown(workers: int, cores: int) -> float:
    """How much longer one block per worker takes on ``cores`` than ``workers / cores``
    blocks' time: the first ``cores`` workers get a core each, the rest queue on one at
    random, and the op waits for the most loaded core (1.0 where the workers fit)."""
    if workers <= cores or cores < 1:
        return 1.0
    queued = workers - cores
    most = sum(1.0 - _all_at_most(queued, cores, x) for x in range(queued))
    return (1.0 + most) / (workers / cores)


def placement_slowdown(
    shards: int, recorded_intra: int, workers: int, block_ns: float, cores: float
) -> float:
    """The slowdown of an op's parallel part run on ``workers`` Eigen workers with blocks of
    ``block_ns`` of work each, on ``cores`` cores: ``queued_slowdown`` where its recording
    shows one block per worker (``shards`` at most the ``recorded_intra`` pool), in full for
    blocks up to the kernel's balance interval and in proportion to it beyond; 1.0 otherwise."""
    whole = max(1, round(cores))
    if shards > recorded_intra or workers <= whole or block_ns <= 0:
        return 1.0
    balance_ns = BALANCE_NS_PER_CPU * whole
    return 1.0 + (queued_slowdown(workers, whole) - 1.0) * min(1.0, balance_ns / block_ns)
