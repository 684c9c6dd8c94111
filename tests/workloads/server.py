"""A server by construction: ``--clients K`` Python threads each serve ``--requests N``
requests, each request one call of the same tf.function (a small convolutional model, batch
1), after ``--warmup W`` calls on the main thread (the first traces). ``--pause-ms`` sleeps
between a client's requests (a server waiting for its next request).

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
