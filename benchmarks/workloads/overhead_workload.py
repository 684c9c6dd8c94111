"""A fixed CPU workload that times its own steady state, for ``benchmarks/record_overhead.py``.

Each step calls a ``tf.function`` chaining ``--small-matmuls`` products of
``--small-size`` square matrices (many tiny ops: inter-op scheduling and per-op
profiler events); every ``--big-every`` steps it also runs ``--big-matmuls`` eager
products of ``--big-size`` square matrices (large ops split across the intra-op/Eigen
pool). The defaults take about 4 s of steady state on 2 cores. After
``--warmup`` untimed steps (tracing, allocator and pool start-up), ``--steps``
steps are timed and one line is printed:

    WORKLOAD_SECONDS=<float>

Run it plain (``python benchmarks/workloads/overhead_workload.py``) or under
``tftrace record``; the line is the same either way.
"""

from __future__ import annotations

import argparse
import time

import tensorflow as tf


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--small-size", type=int, default=64)
    parser.add_argument("--small-matmuls", type=int, default=20, help="products per tf.function")
    parser.add_argument("--big-size", type=int, default=1000)
    parser.add_argument("--big-every", type=int, default=20, help="steps between eager products")
    parser.add_argument("--big-matmuls", type=int, default=1, help="eager products each time")
    return parser.parse_args()


def make_chain(count: int) -> tf.types.experimental.PolymorphicFunction:
    @tf.function
    def chain(x: tf.Tensor, w: tf.Tensor) -> tf.Tensor:
        y = x
        for _ in range(count):  # unrolled at trace time: ``count`` separate MatMul ops
            y = tf.matmul(y, w)
        return tf.reduce_sum(y)

    return chain


def main() -> None:
    args = parse_args()
    tf.random.set_seed(0)
    n = args.small_size
    x = tf.random.normal((n, n))
    w = tf.random.normal((n, n), stddev=n**-0.5)  # keeps the chained product's scale steady
    a = tf.random.normal((args.big_size, args.big_size))
    b = tf.random.normal((args.big_size, args.big_size))
    chain = make_chain(args.small_matmuls)

    def step(i: int) -> tf.Tensor:
        total = chain(x, w)
        if i % args.big_every == 0:
            for _ in range(args.big_matmuls):
                total += tf.reduce_sum(tf.matmul(a, b))
        return total

    for i in range(args.warmup):
        step(i).numpy()
    t0 = time.perf_counter()
    for i in range(args.steps):
        result = step(i)
    result.numpy()
    elapsed = time.perf_counter() - t0
    print(f"WORKLOAD_SECONDS={elapsed:.6f}", flush=True)


if __name__ == "__main__":
    main()
