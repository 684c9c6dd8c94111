"""Eager 2000x2000 products for a CPU-time cross-check: known heavy threads, all long-lived.

With TF_NUM_INTRAOP_THREADS=2 each product is split across the two Eigen workers, so the
main thread (which imports TensorFlow) and both workers each use well over 100 ms of CPU,
and none of them exits before the process does.
"""

import tensorflow as tf

a = tf.random.normal((2000, 2000))
b = tf.random.normal((2000, 2000))
_ = tf.matmul(a[:10], b).numpy()  # warm-up: kernels loaded, pools started
for _ in range(8):
    c = tf.matmul(a, b)
    _ = c.numpy()
print("done")
