"""A tf.function with two independent long ops (one large product each).

With intra = 1 each op runs on the inter-op thread that owns it, so the inter-op pool's
concurrency is the number of branches that run side by side: 2 with inter = 2; with
inter = 1 the second product waits for the first.
"""

import tensorflow as tf

a = tf.random.normal((1800, 1800))
b = tf.random.normal((1800, 1800))


@tf.function
def branches(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    return tf.matmul(x, x), tf.matmul(y, y)


branches(a[:8, :8], b[:8, :8])  # trace the function outside the measured calls
for _ in range(3):
    p, q = branches(a, b)
    _ = p.numpy(), q.numpy()
print("done")
