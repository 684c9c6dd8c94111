"""An input pipeline whose map has no num_parallel_calls: one element at a time, and the
consumer (the step) waits for it."""

import tensorflow as tf


def heavy(x: tf.Tensor) -> tf.Tensor:
    m = tf.random.normal((300, 300))
    return tf.reduce_sum(tf.matmul(m, m)) + tf.cast(x, tf.float32)


ds = tf.data.Dataset.range(300).map(heavy).batch(10)
for batch in ds:
    tf.reduce_sum(batch).numpy()
print("done")
