"""Eager 2000x2000 products (argv[1] of them, default 3): each op is split across the
intra-op pool, or runs inline on the caller when intra = 1. With intra = 2 the main thread
(which imports TensorFlow) and both Eigen workers each use well over 100 ms of CPU, and
none of them exits before the process does.
"""

import sys

import tensorflow as tf

products = int(sys.argv[1]) if len(sys.argv) > 1 else 3
a = tf.random.normal((2000, 2000))
b = tf.random.normal((2000, 2000))
_ = tf.matmul(a, b).numpy()  # warm-up: kernels loaded, pools started, output memory mapped
for _ in range(products):
    c = tf.matmul(a, b)  # eager ops on the CPU run synchronously: no copy needed in between
_ = c.numpy()
print("done")
