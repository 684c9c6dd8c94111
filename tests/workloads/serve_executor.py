"""A tf.function served from a ``concurrent.futures.ThreadPoolExecutor``: ``--requests N``
requests submitted at once to ``--clients K`` worker threads, each request one call of a
small convolutional model (batch ``--batch``, ``--size`` x ``--size`` images), after
``--warmup W`` calls on the main thread (the first traces). The executor's workers are the
server's handler threads; the main thread only submits and waits.

Known answers: N requests on K threads (at most K in flight). Prints ``served N`` and the
requests per second the workload saw itself.
"""

import argparse
import concurrent.futures
import time

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--clients", type=int, default=4, help="executor worker threads")
parser.add_argument("--requests", type=int, default=2000)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--size", type=int, default=64, help="image side")
args = parser.parse_args()

tf.random.set_seed(0)
kernels = [
    tf.Variable(tf.random.normal((3, 3, 3, 32), stddev=0.1)),
    tf.Variable(tf.random.normal((3, 3, 32, 64), stddev=0.1)),
]
dense = tf.Variable(tf.random.normal((64, 10), stddev=0.1))


@tf.function
def predict(images: tf.Tensor) -> tf.Tensor:
    x = tf.nn.relu(tf.nn.conv2d(images, kernels[0], 1, "SAME"))
    x = tf.nn.max_pool2d(x, 2, 2, "SAME")
    x = tf.nn.relu(tf.nn.conv2d(x, kernels[1], 1, "SAME"))
    return tf.nn.softmax(tf.matmul(tf.reduce_mean(x, axis=[1, 2]), dense))


images = tf.random.normal((args.batch, args.size, args.size, 3))
for _ in range(args.warmup):
    predict(images)


def handle(i: int) -> int:
    return int(tf.argmax(predict(images)[0]))


t0 = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(args.clients, thread_name_prefix="handler") as pool:
    answers = list(pool.map(handle, range(args.requests)))
seconds = time.monotonic() - t0
print(f"served {len(answers)} ({len(answers) / seconds:.0f} requests/s)", flush=True)
