"""Eager matmuls between two readings of the process's own CPU clock: the kernel's count of the
CPU time of all its threads over a span of the monotonic clock, written to argv[1] as JSON."""

import json
import sys
import time

import tensorflow as tf

a = tf.random.normal((800, 800))
_ = tf.matmul(a, a).numpy()  # warm-up: kernels chosen, threads started
start = (time.monotonic_ns(), time.process_time_ns())
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 40):
    c = tf.matmul(a, a)
_ = c.numpy()
end = (time.monotonic_ns(), time.process_time_ns())
with open(sys.argv[1], "w") as f:
    json.dump({"monotonic_ns": [start[0], end[0]], "cpu_ns": [start[1], end[1]]}, f)
