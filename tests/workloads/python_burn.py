"""Known Python time: ``burn_python`` spins in pure Python, ``small_ops`` calls TF ops.

Prints the seconds each took (time.perf_counter inside the workload) and the whole run's,
so a test can compare py-spy's shares with the truth.
"""

import json
import sys
import time

import tensorflow as tf

BURN_S = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def burn_python(seconds: float) -> int:
    """Pure Python arithmetic for ``seconds``: the main thread holds the GIL, no TF."""
    total, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for i in range(2_000):
            total += i % 7
    return total


def small_ops(n: int) -> float:
    """``n`` small eager TF ops: the time is dispatch and kernels, not Python arithmetic."""
    x = tf.ones((32, 32))
    for _ in range(n):
        x = tf.matmul(x, x) * 0.01
    return float(tf.reduce_sum(x))


small_ops(5)  # warm-up: TF's first ops load kernels
start = time.perf_counter()
burn_start = time.perf_counter()
burn_python(BURN_S)
burn_s = time.perf_counter() - burn_start
ops_start = time.perf_counter()
small_ops(2_000)
ops_s = time.perf_counter() - ops_start
total_s = time.perf_counter() - start
print(json.dumps({"burn_python_s": burn_s, "small_ops_s": ops_s, "measured_s": total_s}))
