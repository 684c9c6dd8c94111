"""A tf.function whose ops fan out: 16 independent small products of one input, summed.

Each product takes a microsecond or two: cheap enough that TF's executor, once it has timed
them over about 90 calls, runs them inline on the thread that readied them rather than as
closures of their own on the inter-op pool (``docs/predict.md``). ``--calls N`` (default
200) calls of ``step``, on the main thread.
"""

import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--calls", type=int, default=200)
args = parser.parse_args()


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    return tf.add_n([tf.reduce_sum(x * float(i + 1)) for i in range(16)])


x = tf.random.normal((8, 8))
for _ in range(args.calls):
    step(x)
print("done", args.calls)
