"""Eager products of SIZE x SIZE matrices, each one a step that ``tftrace sweep`` can time.

    tftrace sweep --intra 1,2 --inter 1 examples/matmul_scaling.py --size 2000

The first step pays for kernel loading and first-touch memory; the sweep's steady state
starts after it. ``--count`` defaults to about two seconds of single-threaded work.
"""

import argparse

import tensorflow as tf

FLOPS_PER_RUN = 2e11  # about 2 s on one core


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--count", type=int, default=None, help="products (steps) to run")
    args = parser.parse_args()
    count = args.count or int(min(2000, max(4, FLOPS_PER_RUN / (2 * args.size**3))))
    a = tf.random.normal((args.size, args.size))
    b = tf.random.normal((args.size, args.size))
    for step in range(count):
        with tf.profiler.experimental.Trace("product", step_num=step):
            tf.matmul(a, b).numpy()  # .numpy(): the product is finished inside its step


if __name__ == "__main__":
    main()
