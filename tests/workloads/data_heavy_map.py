"""tf.data's threads compete with the step, by construction: a map of CPU-heavy elements
(a chain of small products each) with 4 parallel calls and a deep prefetch buffer runs on
tf.data's own threads while each step's 1000x1000 product keeps TF's pools busy, so the two
sets of threads share the cores for the whole loop. Args: ``[parallel calls] [chain]``
(default 4 and 24). About 3 s on 2 cores."""

import sys
import time

import tensorflow as tf

SIDE = 128
CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
CHAIN = int(sys.argv[2]) if len(sys.argv) > 2 else 24


def heavy(i: tf.Tensor) -> tf.Tensor:
    m = tf.random.stateless_normal((SIDE, SIDE), seed=tf.stack([i, i]))
    for _ in range(CHAIN):
        m = tf.matmul(m, m) / float(SIDE)
    return tf.reduce_sum(m)


ds = tf.data.Dataset.range(600).map(heavy, num_parallel_calls=CALLS)
ds = ds.batch(10).prefetch(8)
w = tf.random.normal((1000, 1000))
start = time.perf_counter()
for batch in ds:
    (tf.matmul(w, w) + tf.reduce_sum(batch)).numpy()
print(f"done in {time.perf_counter() - start:.2f} s")
