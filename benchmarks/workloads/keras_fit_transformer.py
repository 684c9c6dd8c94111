"""Keras model.fit of two transformer encoder blocks (4-head self-attention, layer norm, a
feed-forward of 512) over sequences of 64 tokens, fed by a tf.data pipeline.

Held out of the corpus the prediction model was shaped on (``predict_accuracy.py
--held-out``). Known answers: ``--batches`` batches of 16, one epoch; the first call of
Keras' train function traces.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=12)
args = parser.parse_args()

BATCH, LENGTH, VOCABULARY, WIDTH = 16, 64, 2000, 128
rng = np.random.default_rng(0)
tokens = rng.integers(0, VOCABULARY, (args.batches * BATCH, LENGTH))
labels = rng.integers(0, 4, args.batches * BATCH)
data = tf.data.Dataset.from_tensor_slices((tokens, labels)).batch(BATCH).prefetch(2)

inputs = tf.keras.Input((LENGTH,))
x = tf.keras.layers.Embedding(VOCABULARY, WIDTH)(inputs)
for _ in range(2):
    attended = tf.keras.layers.MultiHeadAttention(4, WIDTH // 4)(x, x)
    x = tf.keras.layers.LayerNormalization()(x + attended)
    hidden = tf.keras.layers.Dense(4 * WIDTH, activation="relu")(x)
    x = tf.keras.layers.LayerNormalization()(x + tf.keras.layers.Dense(WIDTH)(hidden))
outputs = tf.keras.layers.Dense(4)(tf.keras.layers.GlobalAveragePooling1D()(x))
model = tf.keras.Model(inputs, outputs)
model.compile(
    optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
)
model.fit(data, epochs=1, verbose=0)
print("fit done")
