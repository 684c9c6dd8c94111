"""The classic demo: a tf.function whose work is a Python function (tf.py_function).

Whatever the thread settings, the time is Python under the GIL.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()


def python_work(x: tf.Tensor) -> tf.Tensor:
    total = 0
    for i in range(150_000):  # pure Python: holds the GIL
        total += i % 7
    return x + float(total % 3)


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    return tf.py_function(python_work, [x], tf.float32)


x = tf.constant(1.0)
step(x)  # trace once
for _ in range(args.steps):
    x = step(x)
print("done", float(x))
