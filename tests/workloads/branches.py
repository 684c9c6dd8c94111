"""A tf.function with two independent matmul chains: the inter-op pool can run them side by side."""

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
for _ in range(5):
    two_branches(a, b).numpy()
print("branches done")
