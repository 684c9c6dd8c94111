"""Steps of known length: each tf.function call burns 50 ms of one thread's CPU in Python
(by that thread's clock) and then sleeps 50 ms, so a steady step lasts 100 ms and uses half
a core. A Trace("measure") block sleeps 300 ms. argv[1]: the number of calls (default 6).
"""

import sys
import time

import tensorflow as tf

BURN_S = 0.05
SLEEP_S = 0.05


def burn_then_sleep(x: tf.Tensor) -> tf.Tensor:
    end = time.thread_time() + BURN_S
    while time.thread_time() < end:
        pass
    time.sleep(SLEEP_S)
    return x + 1.0


@tf.function
def step(x: tf.Tensor) -> tf.Tensor:
    return tf.py_function(burn_then_sleep, [x], tf.float32)


calls = int(sys.argv[1]) if len(sys.argv) > 1 else 6
x = tf.constant(0.0)
for _ in range(calls):
    x = step(x)
with tf.profiler.experimental.Trace("measure"):
    time.sleep(0.3)
print("done", float(x))
