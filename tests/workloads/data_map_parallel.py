"""A tf.data map whose function does a few milliseconds of TF work per element.

argv[1] is the map's num_parallel_calls: "1", "2", ... or "autotune". Without argv[2] the
consumer pulls from the map directly, so tf.data's threads only run the map; with
argv[2] == "prefetch" a prefetch(4) stage (and its own thread) sits between them.
The consumer loop is annotated "pipeline" in the trace.
"""

import sys

import tensorflow as tf

mode = sys.argv[1]
calls = tf.data.AUTOTUNE if mode == "autotune" else int(mode)
m = tf.random.normal((500, 500)) / 500.0


def heavy(i: tf.Tensor) -> tf.Tensor:
    # Three 500x500 products: about 4 ms per element here, run by the map's function.
    x = m + tf.cast(i, tf.float32)
    for _ in range(3):
        x = tf.matmul(x, m)
    return tf.reduce_sum(x)


ds = tf.data.Dataset.range(200).map(heavy, num_parallel_calls=calls)
if sys.argv[2:] == ["prefetch"]:
    ds = ds.prefetch(4)
elements = iter(ds)
total = 0.0
with tf.profiler.experimental.Trace("pipeline"):
    for value in elements:
        total += float(value)
print("pipeline done", mode)
