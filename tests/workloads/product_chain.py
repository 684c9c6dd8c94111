"""A tf.function whose step is a chain of large products, each waiting for the one before:
at intra-op 1 each product runs on its inter-op thread alone; at intra-op 2 and more it is
split over the Eigen pool. argv[1]: the size (default 1200), argv[2]: the calls (default 6).
"""

import sys

import tensorflow as tf

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1200
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 6
a = tf.random.normal((n, n)) / n**0.5


@tf.function
def chain(x: tf.Tensor) -> tf.Tensor:
    for _ in range(3):
        x = tf.matmul(x, a)
    return x


x = tf.random.normal((n, n))
for _ in range(calls):
    x = chain(x)
    _ = x.numpy()
print("chain done")
