"""Steps to count for ``--steps``: argv[2] (default 30) outermost calls of one small
tf.function, each alone (argv[1] "function") or inside
``tf.profiler.experimental.Trace("train", step_num=i, _r=1)`` (argv[1] "trace"). Each step
calls a second tf.function inside it, which is part of the step, not a step of its own.
Prints STEPS_RAN=N at the end.
"""

import sys

import tensorflow as tf


@tf.function
def inner(x: tf.Tensor) -> tf.Tensor:
    return tf.matmul(x, x) * 0.001


@tf.function
def train_step(x: tf.Tensor) -> tf.Tensor:
    for _ in range(4):
        x = tf.tanh(inner(x))
    return x


mode = sys.argv[1] if len(sys.argv) > 1 else "function"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
x = tf.ones((128, 128))
for i in range(steps):
    if mode == "trace":
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            x = train_step(x)
    else:
        x = train_step(x)
print(f"STEPS_RAN={steps}", flush=True)
