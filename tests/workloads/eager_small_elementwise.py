"""A tight eager loop of small element-wise ops (100k floats): each op is split across the
intra-op pool and lasts ~60 us; between ops, while Python dispatches the next one, the
Eigen workers spin (TF creates the pool with spinning allowed) and use CPU that no traced
event accounts for. The control is the same ops on tensors 40x larger, 40x fewer times.
"""

import sys

import tensorflow as tf

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
x = tf.random.normal([size])
y = tf.random.normal([size])
for _ in range(iterations):
    x = tf.nn.relu(x + y) * 0.5
print(float(tf.reduce_sum(x)))
