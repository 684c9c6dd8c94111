"""Runs matmuls until stopped (or for argv[1] seconds); prints a marker once work has begun.

The products run on a worker thread while the main thread waits, so that Ctrl-C (Python raises
KeyboardInterrupt in the main thread) lands in the wait and never inside TensorFlow's own
Python code: interrupted there, TF 2.21 corrupts its heap ("double free or corruption" in 6 of
8 plain eager loops stopped by SIGINT, without tftrace), and the test would be about TF's crash.
"""

import sys
import threading
import time

import tensorflow as tf

started, stop = threading.Event(), threading.Event()


def work() -> None:
    a = tf.random.normal((400, 400)) * 0.01
    while not stop.is_set():
        a = tf.matmul(a, a) + 0.01
        started.set()


worker = threading.Thread(target=work, name="matmuls", daemon=True)
worker.start()
started.wait()
print("working", flush=True)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120
deadline = time.monotonic() + seconds
while time.monotonic() < deadline and worker.is_alive():
    time.sleep(0.05)
stop.set()
worker.join()
