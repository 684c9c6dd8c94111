"""Steps of many small ops, each timed by the workload's own clock: argv[1] (default 30)
calls of a tf.function of argv[2] (default 300) elementwise ops on a small vector, which the
profiler's cost per traced op slows by tens of percent. Prints
OWN_STEPS=<JSON list of [start_ns, end_ns]> (CLOCK_MONOTONIC, the step timer's clock) at the
end.
"""

import json
import sys
import time

import tensorflow as tf

OPS = int(sys.argv[2]) if len(sys.argv) > 2 else 300


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    for _ in range(OPS // 3):
        x = tf.tanh(x * 0.5 + 0.1)
    return x


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
x = tf.ones((64,))
own = []
for _ in range(steps):
    t0 = time.monotonic_ns()
    x = step(x)
    own.append([t0, time.monotonic_ns()])
print("OWN_STEPS=" + json.dumps(own), flush=True)
