import sys

import tensorflow as tf

tf.matmul(tf.ones((10, 10)), tf.ones((10, 10)))
sys.exit(3)
