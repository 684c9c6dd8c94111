"""Thousands of tiny tf.function calls (~150 us each): the worst case for a per-step timer.
Prints the steady loop's own time as WORKLOAD_SECONDS=<float>."""

import sys
import time

import tensorflow as tf


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    return x + 1.0


calls = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
x = tf.constant(0.0)
for _ in range(200):  # trace and warm up
    x = step(x)
t0 = time.perf_counter()
for _ in range(calls):
    x = step(x)
print(f"WORKLOAD_SECONDS={time.perf_counter() - t0:.6f}")
