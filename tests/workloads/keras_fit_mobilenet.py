"""Keras model.fit of keras.applications' MobileNetV2 (weights=None: nothing is downloaded).

Known answers: 6 batches of 8, one epoch; with ``--steps-per-execution K`` Keras runs K batches
per call of its train function, so the trace holds 6 / K steps. The first call traces and builds.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=6)
parser.add_argument("--steps-per-execution", type=int, default=1)
args = parser.parse_args()

BATCH, SIZE = 8, 32
model = tf.keras.applications.MobileNetV2(
    input_shape=(SIZE, SIZE, 3), alpha=0.35, weights=None, classes=10
)
model.compile(
    optimizer="sgd",
    loss="sparse_categorical_crossentropy",
    steps_per_execution=args.steps_per_execution,
)
rng = np.random.default_rng(0)
x = rng.random((args.batches * BATCH, SIZE, SIZE, 3), dtype=np.float32)
y = rng.integers(0, 10, args.batches * BATCH)
model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
print("fit done")
