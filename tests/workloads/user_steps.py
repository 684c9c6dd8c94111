"""Three eager steps marked by the user, ``Trace("train", step_num=i)``, between conversions
of large NumPy arrays to tensors (TF annotates each ``convert_to_tensor``, 5 of them, and they
cover more of the trace than the steps do). The user's markers are the steps: 3 of them."""

import numpy as np
import tensorflow as tf

x = tf.random.normal((200, 200))
arrays = [np.random.rand(2500, 2500).astype(np.float32) for _ in range(5)]
for i, array in enumerate(arrays):
    if i < 3:
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            for _ in range(3):
                x = tf.matmul(x, x) * 0.001
    tf.convert_to_tensor(array)
print("done")
