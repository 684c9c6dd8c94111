"""Three eager 2000x2000 products: each op is split across the intra-op pool (or inline)."""

import tensorflow as tf

a = tf.random.normal((2000, 2000))
b = tf.random.normal((2000, 2000))
_ = tf.matmul(a[:10], b).numpy()  # warm-up: kernels loaded, pools started
for _ in range(3):
    c = tf.matmul(a, b)
_ = c.numpy()
print("done")
