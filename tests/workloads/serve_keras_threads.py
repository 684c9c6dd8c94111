"""A Keras model served from Python threads: keras.applications' MobileNetV2 (alpha 0.35,
``--size`` x ``--size`` inputs, weights=None: nothing is downloaded), ``--clients K`` threads
each serving ``--requests N`` requests of ``--batch`` images, after ``--warmup W`` calls on
the main thread (the first traces and builds).

``--call predict_on_batch`` (the default) serves each request with
``model.predict_on_batch(x)`` (Keras's own predict function, a tf.function); ``--call
function`` with a tf.function of ``model(x, training=False)``, the way a hand-written server
often does it.

Known answers: K*N requests on K threads. Prints ``served K*N`` and the requests per second
the workload saw itself.
"""

import argparse
import threading
import time

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--clients", type=int, default=4)
parser.add_argument("--requests", type=int, default=100, help="requests per client")
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--size", type=int, default=96, help="image side")
parser.add_argument("--call", choices=("predict_on_batch", "function"), default="predict_on_batch")
args = parser.parse_args()

tf.random.set_seed(0)
model = tf.keras.applications.MobileNetV2(
    input_shape=(args.size, args.size, 3), alpha=0.35, weights=None, classes=10
)
images = np.random.default_rng(0).random((args.batch, args.size, args.size, 3), dtype=np.float32)

if args.call == "function":
    serve_fn = tf.function(lambda x: model(x, training=False))
    inputs = tf.constant(images)

    def predict() -> np.ndarray:
        return serve_fn(inputs).numpy()
else:

    def predict() -> np.ndarray:
        return model.predict_on_batch(images)


for _ in range(args.warmup):
    predict()

served = [0] * args.clients


def client(i: int) -> None:
    for _ in range(args.requests):
        predict()
        served[i] += 1


threads = [
    threading.Thread(target=client, args=(i,), name=f"client-{i}") for i in range(args.clients)
]
t0 = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
seconds = time.monotonic() - t0
print(f"served {sum(served)} ({sum(served) / seconds:.0f} requests/s)", flush=True)
