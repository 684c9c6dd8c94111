"""Sets the intra-op pool size after TensorFlow started: the setting cannot take effect."""

import tensorflow as tf

tf.matmul(tf.ones((100, 100)), tf.ones((100, 100))).numpy()  # the runtime starts here
try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
except RuntimeError as e:
    print("setter refused:", e)
a = tf.random.normal((800, 800))
for _ in range(3):
    a = tf.matmul(a, a) * 1e-3
print("done")
