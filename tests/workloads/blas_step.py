"""A loop of tf.function steps, each running a chain of TF matmuls beside a chain of NumPy
products inside ``tf.numpy_function``: TF's pools and the BLAS library's own pool (OpenBLAS
for NumPy's wheels) work at the same time in every step. Run it with
``OPENBLAS_NUM_THREADS=N`` to size the latter.

Why one BLAS thread wins here, by construction: each NumPy product is mid-sized (a
millisecond or so) and split statically across the library's threads, while TF's pools keep
both cores busy with the matmul chain. A product split in two waits for the half whose thread
the scheduler has put behind a TF thread; on one thread it waits for nobody.

Args: ``--steps N`` (default 40), ``--size S``: the NumPy products' side (default 250,
float64), ``--calls C``: products per step (default 8). About 0.5 s of steps on 2 cores,
TensorFlow's import aside.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--size", type=int, default=250)
parser.add_argument("--calls", type=int, default=8)
args = parser.parse_args()

TF_SIDE = 384
rng = np.random.default_rng(0)
left = rng.standard_normal((args.size, args.size))
tf_side = tf.constant(rng.standard_normal((TF_SIDE, TF_SIDE)), dtype=tf.float32)


def numpy_products(scale: np.ndarray) -> np.ndarray:
    """Runs in Python on the thread that executes the op; np.dot hands it to the BLAS pool."""
    product = left * scale
    for _ in range(args.calls):
        product = np.dot(left, product) / args.size
    return np.asarray(product.sum(), dtype=np.float64)


@tf.function
def step(scale: tf.Tensor) -> tf.Tensor:
    product = tf_side
    for _ in range(6):  # independent of the NumPy chain: the inter-op pool runs both at once
        product = tf.matmul(product, tf_side) / float(TF_SIDE)
    blas = tf.numpy_function(numpy_products, [scale], tf.float64)
    return tf.cast(tf.reduce_sum(product), tf.float64) + blas


total = 0.0
for i in range(args.steps):
    total += float(step(tf.constant(1.0 + i / args.steps, dtype=tf.float64)))
print(f"done {args.steps} steps, {total:.3e}")
