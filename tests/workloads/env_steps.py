"""A few steps of a small tf.function, and what the process was given, as its own output says:
``CPUS=<the CPUs it may use>`` and ``ENV <NAME>=<value or 'unset'>`` for each name after the
first argument (the number of steps, default 4). A sweep or a verification keeps each run's
output (``workload/stdout.log``), so a test reads there what each run really had.
"""

import os
import sys

import tensorflow as tf

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
print(f"CPUS={','.join(map(str, sorted(os.sched_getaffinity(0))))}")
for name in sys.argv[2:]:
    print(f"ENV {name}={os.environ.get(name, 'unset')}")


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    return tf.matmul(x, x) * 0.01


x = tf.ones((64, 64))
for _ in range(steps):
    x = step(x)
print("done", float(tf.reduce_sum(x)))
