"""Does some TF work, then fails: the trace recorded so far must survive."""

import tensorflow as tf

a = tf.random.normal((300, 300))
for _ in range(3):
    a = tf.matmul(a, a) * 1e-3
print("about to fail", flush=True)
raise ValueError("workload failed on purpose")
