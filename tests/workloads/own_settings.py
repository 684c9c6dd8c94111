"""Sets the pool sizes itself, before TF starts: the recorder must not have started TF first."""

import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(3)
tf.config.threading.set_inter_op_parallelism_threads(1)
a = tf.random.normal((800, 800))
for _ in range(3):
    a = tf.matmul(a, a) * 1e-3
print(
    "settings",
    tf.config.threading.get_intra_op_parallelism_threads(),
    tf.config.threading.get_inter_op_parallelism_threads(),
)
