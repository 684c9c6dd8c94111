"""Steps whose parallelism is set by construction, for ``tftrace diff``'s known answers.

``diff_steps.py branches [STEPS]``: each step (a tf.function call) runs two independent
1600 x 1600 products: with intra = 1 each runs on the inter-op thread that owns it, so two run
side by side with inter = 2 and one after the other with inter = 1.
``diff_steps.py matmul [STEPS]``: each step runs one 1600 x 1600 product, inline on its
thread with intra = 1, split across the Eigen workers with intra = 2.
STEPS measured steps (default 12) follow the first call, which traces the function. A step
returns one element of each product: what Python does between steps stays small.
"""

import sys

import tensorflow as tf

mode = sys.argv[1] if len(sys.argv) > 1 else "branches"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
x = tf.random.normal((1600, 1600))
y = tf.random.normal((1600, 1600))

if mode == "branches":

    @tf.function
    def step(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.matmul(x, x)[0, 0], tf.matmul(y, y)[0, 0]

else:

    @tf.function
    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return tf.matmul(x, y)[0, 0]


for _ in range(steps + 1):  # the first call traces the function: the warm-up step
    tf.nest.map_structure(lambda t: t.numpy(), step(x, y))
print("done")
