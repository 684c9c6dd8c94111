"""A server by construction: ``--clients K`` Python threads each serve ``--requests N``
requests, each request one call of the same tf.function (a small convolutional model, batch
1), after ``--warmup W`` calls on the main thread (the first traces). ``--pause-ms`` sleeps
between a client's requests (a server waiting for its next request). ``--products S``: each
request is instead a chain of three S x S products (each waits for the one before): at
intra-op 1 a request's products run on one inter-op thread, so at inter-op 1 two clients'
requests take turns on it, and at inter-op 2 they run side by side.

The workload times itself: ``--own FILE`` gets its own count, every request's start and end
(CLOCK_MONOTONIC ns, the clock tftrace's recorder anchors on) and calling thread, so a test
can compare tftrace's requests, requests/s and latency with the workload's own over the same
span. Prints ``served K*N`` at the end.
"""

import argparse
import json
import threading
import time

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--clients", type=int, default=4)
parser.add_argument("--requests", type=int, default=100)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--pause-ms", type=float, default=0.0)
parser.add_argument("--size", type=int, default=32, help="image side")
parser.add_argument("--own", help="write the workload's own timings (JSON) here")
parser.add_argument("--products", type=int, default=0, help="a chain of S x S products")
args = parser.parse_args()

tf.random.set_seed(0)
kernels = [
    tf.Variable(tf.random.normal((3, 3, 3, 32), stddev=0.1)),
    tf.Variable(tf.random.normal((3, 3, 32, 32), stddev=0.1)),
]
dense = tf.Variable(tf.random.normal((32, 10), stddev=0.1))


@tf.function
def serve(image: tf.Tensor) -> tf.Tensor:
    x = tf.nn.relu(tf.nn.conv2d(image, kernels[0], 1, "SAME"))
    x = tf.nn.relu(tf.nn.conv2d(x, kernels[1], 1, "SAME"))
    return tf.matmul(tf.reduce_mean(x, axis=[1, 2]), dense)


image = tf.random.normal((1, args.size, args.size, 3))
if args.products:
    side = tf.random.normal((args.products, args.products)) / args.products**0.5

    @tf.function
    def serve(image: tf.Tensor) -> tf.Tensor:  # the other kind of request
        x = image
        for _ in range(3):
            x = tf.matmul(x, side)
        return x

    image = tf.random.normal((args.products, args.products))
for _ in range(args.warmup):
    serve(image)

rows: list[tuple[int, int, int]] = []  # (thread ident, start ns, end ns)
lock = threading.Lock()


def client() -> None:
    mine = []
    ident = threading.get_ident()
    for _ in range(args.requests):
        t0 = time.monotonic_ns()
        serve(image)
        mine.append((ident, t0, time.monotonic_ns()))
        if args.pause_ms:
            time.sleep(args.pause_ms / 1e3)
    with lock:
        rows.extend(mine)


threads = [threading.Thread(target=client, name=f"client-{i}") for i in range(args.clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if args.own:
    with open(args.own, "w") as f:
        json.dump({"clock": "CLOCK_MONOTONIC", "requests": rows}, f)
print("served", len(rows), flush=True)
