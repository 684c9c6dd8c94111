"""Many small products in a tf.function: too small for Eigen to split across workers."""

import tensorflow as tf


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    for _ in range(20):
        x = tf.matmul(x, x) * 0.01
    return x


x = tf.random.normal((96, 96))
for _ in range(400):
    step(x)
print("done")
