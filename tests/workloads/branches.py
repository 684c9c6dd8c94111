"""A tf.function with two independent matmul chains: the inter-op pool can run them side by side.

``--steps N``: how many calls (5 by default).
"""

import argparse

import tensorflow as tf

N = 600


@tf.function
def two_branches(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    x, y = a, b
    for _ in range(6):
        x = tf.matmul(x, a)
        y = tf.matmul(y, b)
    return tf.reduce_sum(x) + tf.reduce_sum(y)


a = tf.random.normal((N, N)) * 0.01
b = tf.random.normal((N, N)) * 0.01
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
for _ in range(parser.parse_args().steps):
    two_branches(a, b).numpy()
print("branches done")
