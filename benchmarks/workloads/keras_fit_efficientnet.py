"""Keras model.fit of keras.applications.EfficientNetB0 (weights=None) on 64x64 images fed by
a tf.data pipeline: depthwise convolutions and squeeze-and-excitation blocks, many ops a step.

Held out of the corpus the prediction model was shaped on (``predict_accuracy.py
--held-out``). Known answers: ``--batches`` batches of 8, one epoch; the first call of
Keras' train function traces (most of the run's time: building the graph).
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=12)
args = parser.parse_args()

BATCH, SIZE = 8, 64
rng = np.random.default_rng(0)
images = rng.random((args.batches * BATCH, SIZE, SIZE, 3), dtype=np.float32)
labels = rng.integers(0, 10, args.batches * BATCH)
data = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH).prefetch(2)
model = tf.keras.applications.EfficientNetB0(weights=None, input_shape=(SIZE, SIZE, 3), classes=10)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(data, epochs=1, verbose=0)
print("fit done")
