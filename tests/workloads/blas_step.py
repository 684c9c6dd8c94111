"""A loop of tf.function steps, each running a few TF matmuls beside one NumPy product inside
``tf.numpy_function``: TF's pools and the BLAS library's own pool (OpenBLAS for NumPy's
wheels) both work in every step. Run it with ``OPENBLAS_NUM_THREADS=N`` to size the latter.

Args: ``--steps N`` (default 40), ``--size S``: the NumPy product's side (default 600, float64).
About 1-2 s of steps on 2 cores, TensorFlow's import aside.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--size", type=int, default=600)
args = parser.parse_args()

rng = np.random.default_rng(0)
left = rng.standard_normal((args.size, args.size))
tf_side = tf.constant(rng.standard_normal((256, 256)), dtype=tf.float32)


def numpy_product(scale: np.ndarray) -> np.ndarray:
    """Runs in Python on the thread that executes the op; np.dot hands it to the BLAS pool."""
    return np.asarray(np.dot(left, left * scale).sum(), dtype=np.float64)


@tf.function
def step(scale: tf.Tensor) -> tf.Tensor:
    product = tf_side
    for _ in range(3):
        product = tf.matmul(product, tf_side) / 256.0
    blas = tf.numpy_function(numpy_product, [scale], tf.float64)
    return tf.cast(tf.reduce_sum(product), tf.float64) + blas


total = 0.0
for i in range(args.steps):
    total += float(step(tf.constant(1.0 + i / args.steps, dtype=tf.float64)))
print(f"done {args.steps} steps, {total:.3e}")
