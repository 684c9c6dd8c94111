"""The same work recorded two ways: under ``tftrace record`` (no argument), or by itself in
``with tftrace.profile(DIR)`` (``--in-code DIR``). Pools come from TF_NUM_* in the test."""

import argparse
import contextlib

import tensorflow as tf

import tftrace

parser = argparse.ArgumentParser()
parser.add_argument("--in-code", metavar="DIR")
args = parser.parse_args()


@tf.function
def branches(x: tf.Tensor) -> tf.Tensor:
    # two independent chains: work for both inter-op threads
    a, b = x, x + 1.0
    for _ in range(4):
        a, b = tf.matmul(a, a) * 0.01, tf.matmul(b, b) * 0.01
    return a + b


x = tf.random.normal((300, 300))
branches(x)  # traced and warm before the block, as in a notebook
block = tftrace.profile(args.in_code) if args.in_code else contextlib.nullcontext()
with block:
    for _ in range(20):
        branches(x)
    tf.matmul(tf.random.normal((1200, 1200)), tf.random.normal((1200, 1200)))  # Eigen's turn
print("done")
