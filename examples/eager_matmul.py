"""Eager matrix products: one op at a time, each split across the intra-op (Eigen) pool.

tftrace record examples/eager_matmul.py --size 1500 --repeat 5
"""

import argparse
import time

import tensorflow as tf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    a = tf.random.normal((args.size, args.size))
    b = tf.random.normal((args.size, args.size))
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        c = tf.matmul(a, b)
    _ = c.numpy()
    elapsed = time.perf_counter() - t0
    print(f"{args.repeat} products of {args.size}x{args.size}: {elapsed:.3f} s")


if __name__ == "__main__":
    main()
