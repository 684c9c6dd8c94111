"""The classic blog experiment, as pasted: time a py_function graph under each intra-op size.

It times the graph once as it comes, then calls
``tf.config.threading.set_intra_op_parallelism_threads(n)`` in the same process, after ops
ran, for each n. In TF2 the first such call raises ("Intra op parallelism cannot be modified
after initialization"), so run plainly the script stops there with exit code 1. Under a sweep
the setter calls are recorded and not applied: every run times the same graph. Its time is
Python under the GIL, so no thread setting could help anyway.
"""

import sys
import time

import tensorflow as tf

STEPS = 8
THREADS = [int(n) for n in sys.argv[1:]] or [1, 2]


def python_work(x: tf.Tensor) -> tf.Tensor:
    total = 0
    for i in range(100_000):  # pure Python: holds the GIL
        total += i % 7
    return x + float(total % 3)


@tf.function
def graph(x: tf.Tensor) -> tf.Tensor:
    a = tf.py_function(python_work, [x], tf.float32)
    b = tf.py_function(python_work, [x], tf.float32)  # independent: could run side by side
    return a + b


def timed(label: str) -> None:
    x = tf.constant(1.0)
    start = time.perf_counter()
    for _ in range(STEPS):
        x = graph(x) * 1e-3
    print(f"{label}: {(time.perf_counter() - start) / STEPS * 1e3:.1f} ms/step", flush=True)


graph(tf.constant(1.0))  # trace once
timed("as it comes")
for n in THREADS:
    tf.config.threading.set_intra_op_parallelism_threads(n)  # after ops ran: raises in TF2
    timed(f"intra_op_parallelism_threads={n}")
