"""Calls of concrete functions, counted by construction, for the step timer.

On the main thread: ``--direct`` calls of ``double.get_concrete_function(spec)`` (a
ConcreteFunction called as it is), then ``--outer`` calls of a tf.function ``outer`` that
calls that concrete function inside it (one step each: the inner call is part of it). Then a
SavedModel with a ``serving_default`` signature is saved and loaded back, and its signature
(a ConcreteFunction subclass) is called once on the main thread and ``--requests`` times by
each of ``--clients`` threads at once. Prints the counts it made as JSON on its last line.
"""

import argparse
import json
import tempfile
import threading

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--direct", type=int, default=3)
parser.add_argument("--outer", type=int, default=2)
parser.add_argument("--clients", type=int, default=2)
parser.add_argument("--requests", type=int, default=20)
args = parser.parse_args()

spec = tf.TensorSpec((None,), tf.float32)


@tf.function
def double(x: tf.Tensor) -> tf.Tensor:
    return 2.0 * x


concrete = double.get_concrete_function(spec)


@tf.function
def outer(x: tf.Tensor) -> tf.Tensor:
    return concrete(x) + 1.0


class Doubler(tf.Module):
    @tf.function(input_signature=[spec])
    def serve(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"y": 2.0 * x}


x = tf.constant([1.0, 2.0])
for _ in range(args.direct):
    concrete(x)
for _ in range(args.outer):
    outer(x)

with tempfile.TemporaryDirectory(prefix="concrete-calls-") as export:
    module = Doubler()
    tf.saved_model.save(module, export, signatures={"serving_default": module.serve})
    signature = tf.saved_model.load(export).signatures["serving_default"]
    signature(x=x)


def client() -> None:
    for _ in range(args.requests):
        signature(x=x)


threads = [threading.Thread(target=client) for _ in range(args.clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
counts = {
    "direct": args.direct,
    "outer": args.outer,
    "signature": 1 + args.clients * args.requests,
    "signature_threads": 1 + args.clients,
}
print(json.dumps(counts), flush=True)
