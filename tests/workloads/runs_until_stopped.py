"""Runs matmuls until stopped (or for argv[1] seconds); prints a marker once work has begun."""

import sys
import time

import tensorflow as tf

a = tf.random.normal((400, 400)) * 0.01
print("working", flush=True)
deadline = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 120)
while time.monotonic() < deadline:
    a = tf.matmul(a, a) + 0.01
