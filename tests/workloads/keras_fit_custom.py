"""Keras model.fit of a small Conv/Dense model fed by a tf.data pipeline.

Known answers: 6 batches of 8, one epoch; with ``--steps-per-execution K`` each call of
Keras' train function runs K batches, so the trace holds 6 / K steps. The first call traces.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=6)
parser.add_argument("--steps-per-execution", type=int, default=1)
args = parser.parse_args()

BATCH, SIZE = 8, 32
rng = np.random.default_rng(0)
images = rng.random((args.batches * BATCH, SIZE, SIZE, 3), dtype=np.float32)
labels = rng.integers(0, 10, args.batches * BATCH)
data = (
    tf.data.Dataset.from_tensor_slices((images, labels))
    .map(lambda x, y: (x * 2.0 - 1.0, y), num_parallel_calls=tf.data.AUTOTUNE)
    .batch(BATCH)
    .prefetch(tf.data.AUTOTUNE)
)
model = tf.keras.Sequential(
    [
        tf.keras.Input((SIZE, SIZE, 3)),
        tf.keras.layers.Conv2D(16, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(10),
    ]
)
model.compile(
    optimizer="adam",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    steps_per_execution=args.steps_per_execution,
)
model.fit(data, epochs=1, verbose=0)
print("fit done")
