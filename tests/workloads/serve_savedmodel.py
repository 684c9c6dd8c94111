"""A SavedModel served from Python threads, the way TF Serving's Python clients and many
hand-written servers do it: a ``tf.Module`` with a ``@tf.function`` signature (a small
convolutional model) is saved to a temporary directory at start (``tf.saved_model.save``),
loaded back (``tf.saved_model.load``), and its ``signatures["serving_default"]`` is called by
``--clients K`` threads, ``--requests N`` requests each (``--batch`` images of ``--size`` x
``--size``), after ``--warmup W`` calls on the main thread.

Known answers: K*N requests on K threads, each one call of the loaded signature (a
ConcreteFunction, not a tf.function). Prints ``served K*N`` and the requests per second the
workload saw itself.
"""

import argparse
import tempfile
import threading
import time

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--clients", type=int, default=4)
parser.add_argument("--requests", type=int, default=800, help="requests per client")
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--size", type=int, default=64, help="image side")
args = parser.parse_args()


class Classifier(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        tf.random.set_seed(0)
        self.k1 = tf.Variable(tf.random.normal((3, 3, 3, 32), stddev=0.1))
        self.k2 = tf.Variable(tf.random.normal((3, 3, 32, 64), stddev=0.1))
        self.dense = tf.Variable(tf.random.normal((64, 10), stddev=0.1))

    @tf.function(input_signature=[tf.TensorSpec((None, None, None, 3), tf.float32)])
    def serve(self, images: tf.Tensor) -> dict[str, tf.Tensor]:
        x = tf.nn.relu(tf.nn.conv2d(images, self.k1, 1, "SAME"))
        x = tf.nn.max_pool2d(x, 2, 2, "SAME")
        x = tf.nn.relu(tf.nn.conv2d(x, self.k2, 1, "SAME"))
        logits = tf.matmul(tf.reduce_mean(x, axis=[1, 2]), self.dense)
        return {"probabilities": tf.nn.softmax(logits)}


with tempfile.TemporaryDirectory(prefix="serve-savedmodel-") as export:
    module = Classifier()
    tf.saved_model.save(module, export, signatures={"serving_default": module.serve})
    del module
    loaded = tf.saved_model.load(export)
    signature = loaded.signatures["serving_default"]

    images = tf.random.normal((args.batch, args.size, args.size, 3), seed=1)
    for _ in range(args.warmup):
        signature(images=images)

    served = [0] * args.clients

    def client(i: int) -> None:
        for _ in range(args.requests):
            signature(images=images)["probabilities"].numpy()
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
