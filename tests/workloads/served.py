"""A running program that ``tftrace capture`` records on demand: ``tftrace.serve(PORT)``
(``--tf-only``: TF's profiler server alone, without tftrace), then steps of a tf.function
of two independent matmul chains (both inter-op threads), with one big product every tenth
step (the Eigen pool), ``--pause-ms`` apart, until its stdin closes (at most ``--seconds``).
``--host H``: ``tftrace.serve(PORT, host=H)``. Other arguments are ignored (a test gives one
it must find in no answer). Pools come from TF_NUM_* in the test. Prints ``serving`` once
the server runs and the pools have worked, and ``done STEPS`` at the end."""

import argparse
import select
import sys
import time

import tensorflow as tf

import tftrace

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--tf-only", action="store_true")
parser.add_argument("--pause-ms", type=float, default=2.0)
parser.add_argument("--seconds", type=float, default=300.0)
parser.add_argument("--host")
args, _ = parser.parse_known_args()

if args.tf_only:
    tf.profiler.experimental.server.start(args.port)
    served = True
else:
    where = {"host": args.host} if args.host is not None else {}
    served = tftrace.serve(args.port, **where) is not None


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    a, b = x, x + 1.0
    for _ in range(4):
        a, b = tf.matmul(a, a) * 0.01, tf.matmul(b, b) * 0.01
    return a + b


x = tf.random.normal((300, 300))
big = tf.random.normal((800, 800))
step(x)
tf.matmul(big, big)
print("serving" if served else "not served", flush=True)
steps, end = 0, time.monotonic() + args.seconds
while time.monotonic() < end and not select.select([sys.stdin], [], [], 0)[0]:
    step(x)
    if steps % 10 == 0:
        tf.matmul(big, big)
    steps += 1
    time.sleep(args.pause_ms / 1e3)
print("done", steps, flush=True)
