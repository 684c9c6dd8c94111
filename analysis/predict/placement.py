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

from functools import lru_cache, partial
from math import erfc, exp, lgamma, log, log1p, pi, sqrt

import numpy as np

# The kernel's load balancing moves a queued thread to an idle core within its balance
# interval: at least a millisecond per CPU of the scheduling domain (Linux's
# ``sd->min_interval`` is the domain's weight, in ms)
BALANCE_NS_PER_CPU = 1_000_000.0

# Beyond this many queued workers the exact sum would take seconds: their loads are taken
# as normal where each core gets many (within 2 % of exact from 32 a core, on 2 to 128
# cores), as independent Poisson counts where the many cores get a few each
EXACT_UP_TO = 4096
NORMAL_FROM = 32.0


def _product(a: np.ndarray, b: np.ndarray, size: int) -> np.ndarray:
    """The product of two polynomials, to degree ``size - 1`` (by FFT where they are long)."""
    if min(len(a), len(b)) < 64:
        return np.convolve(a, b)[:size]
    n = len(a) + len(b) - 1
    full = np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)
    return np.clip(full[:size], 0.0, None)


@lru_cache(maxsize=4096)
def _all_at_most(balls: int, bins: int, most: int) -> float:
    """The probability that ``balls`` thrown at random into ``bins`` leave none with more
    than ``most``. Exact, by Poissonization: with independent Poisson loads of mean
    ``balls / bins``, it is P(all at most ``most`` and ``balls`` in all) / P(``balls`` in
    all), and the numerator is a coefficient of the truncated distribution's ``bins``-th
    power."""
    if most >= balls:
        return 1.0
    if most * bins < balls:
        return 0.0
    mean = balls / bins
    j = np.arange(most + 1)
    pmf = np.exp(j * log(mean) - mean - np.array([lgamma(i + 1) for i in j]))
    power, base, n = np.ones(1), pmf, bins
    while n:
        if n & 1:
            power = _product(power, base, balls + 1)
        n >>= 1
        if n:
            base = _product(base, base, balls + 1)
    if len(power) <= balls:
        return 0.0
    all_in = exp(balls * log(balls) - balls - lgamma(balls + 1))
    return min(1.0, float(power[balls]) / all_in)


def _independent_at_most(mean: float, bins: int, most: int) -> float:
    # from the chance a core gets more (the tail, summed: one minus a sum near one would
    # leave rounding that ``bins`` cores multiply)
    above, j = 0.0, most + 1
    while True:
        term = exp(j * log(mean) - mean - lgamma(j + 1))
        above += term
        if j > mean and term <= 1e-17 * above:
            break
        j += 1
    return exp(bins * log1p(-above)) if above < 1.0 else 0.0


@lru_cache(maxsize=256)
def _normal_max(n: int) -> float:
    """The expected largest of ``n`` independent standard normals (by the trapezoid rule)."""
    x = np.linspace(-10.0, 10.0, 4001)
    below = np.array([0.5 * erfc(-v / sqrt(2)) for v in x])
    density = np.exp(-x * x / 2) / sqrt(2 * pi)
    with np.errstate(divide="ignore"):
        largest = n * density * np.exp((n - 1) * np.log(below))
    return float(np.sum(x * largest) * (x[1] - x[0]))


def expected_most(balls: int, bins: int) -> float:
    """The expected load of the most loaded of ``bins`` cores when ``balls`` workers queue
    on them at random: exact, or normal loads where each core gets many (the multinomial's
    negative correlation cancels its smaller variance)."""
    if balls < 1 or bins < 1:
        return 0.0
    if bins == 1:
        return float(balls)
    mean = balls / bins
    if balls > EXACT_UP_TO and mean >= NORMAL_FROM:
        return mean + sqrt(mean) * _normal_max(bins)
    at_most = (
        partial(_all_at_most, balls, bins)
        if balls <= EXACT_UP_TO
        else partial(_independent_at_most, mean, bins)
    )
    most = 0.0
    for x in range(balls):
        above = 1.0 - at_most(x)
        most += above
        if above < 1e-12:
            break
    return most


@lru_cache(maxsize=1024)
def queued_slowdown(workers: int, cores: int) -> float:
    """How much longer one block per worker takes on ``cores`` than ``workers / cores``
    blocks' time: the first ``cores`` workers get a core each, the rest queue on one at
    random, and the op waits for the most loaded core (1.0 where the workers fit)."""
    if workers <= cores or cores < 1:
        return 1.0
    return max(1.0, (1.0 + expected_most(workers - cores, cores)) / (workers / cores))


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
