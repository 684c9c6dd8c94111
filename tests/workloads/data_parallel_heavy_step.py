"""A parallel, prefetched input pipeline feeding a step much heavier than one element."""

import tensorflow as tf


def light(x: tf.Tensor) -> tf.Tensor:
    return tf.cast(x, tf.float32) * 2.0


ds = tf.data.Dataset.range(400).map(light, num_parallel_calls=tf.data.AUTOTUNE).batch(10)
ds = ds.prefetch(2)
w = tf.random.normal((1000, 1000))
for batch in ds:
    (tf.matmul(w, w) + tf.reduce_sum(batch)).numpy()
print("done")
