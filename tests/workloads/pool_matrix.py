"""Every kind of thread at once, with pool sizes set by the environment.

Known answers: TF_NUM_INTRAOP_THREADS Eigen workers and TF_NUM_INTEROP_THREADS
tf_Compute threads; numpy's OpenBLAS workers; one plain Python thread "side-worker".
"""

import threading

import numpy as np
import tensorflow as tf

np.dot(np.ones((400, 400)), np.ones((400, 400)))  # OpenBLAS starts its workers


@tf.function
def independent(x: tf.Tensor) -> list[tf.Tensor]:
    # Eight independent products: enough parallel graph work for every inter-op thread.
    return [tf.matmul(x + float(i), x) for i in range(8)]


def side_work() -> None:
    for _ in range(3):
        tf.reduce_sum(tf.ones((100, 100))).numpy()


side = threading.Thread(target=side_work, name="side-worker")
side.start()
x = tf.random.normal((300, 300))
for _ in range(10):
    independent(x)
big = tf.random.normal((1200, 1200))
for _ in range(3):
    tf.matmul(big, big).numpy()  # large enough to be split across the Eigen workers
side.join()
print("pool matrix done")
