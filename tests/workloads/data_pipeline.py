"""A tf.data pipeline with a parallel map: work lands on tf.data's own threads."""

import tensorflow as tf


def heavy(x: tf.Tensor) -> tf.Tensor:
    m = tf.random.normal((200, 200))
    return tf.reduce_sum(tf.matmul(m, m)) + tf.cast(x, tf.float32)


ds = tf.data.Dataset.range(200).map(heavy, num_parallel_calls=2).batch(10).prefetch(2)
total = 0.0
for batch in ds:
    total += float(tf.reduce_sum(batch))
print("pipeline done")
