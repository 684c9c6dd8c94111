"""Dies by SIGKILL mid-run, as an out-of-memory kill would: nothing can be flushed from inside."""

import os
import signal
import time

import tensorflow as tf

a = tf.random.normal((300, 300))
end = time.monotonic() + 1.0
while time.monotonic() < end:
    a = tf.matmul(a, a) * 1e-3
os.kill(os.getpid(), signal.SIGKILL)
