"""Keras model.fit of an LSTM text classifier (embedding, one LSTM layer of 128, a dense head)
fed by a tf.data pipeline: thousands of small ops a step in the recurrence's while loop.

Held out of the corpus the prediction model was shaped on (``predict_accuracy.py
--held-out``). Known answers: ``--batches`` batches of 32 sequences of 40 tokens, one epoch;
the first call of Keras' train function traces.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batches", type=int, default=12)
args = parser.parse_args()

BATCH, LENGTH, VOCABULARY = 32, 40, 1000
rng = np.random.default_rng(0)
tokens = rng.integers(0, VOCABULARY, (args.batches * BATCH, LENGTH))
labels = rng.integers(0, 2, args.batches * BATCH)
data = tf.data.Dataset.from_tensor_slices((tokens, labels)).batch(BATCH).prefetch(2)
model = tf.keras.Sequential(
    [
        tf.keras.Input((LENGTH,)),
        tf.keras.layers.Embedding(VOCABULARY, 64),
        tf.keras.layers.LSTM(128),
        tf.keras.layers.Dense(2),
    ]
)
model.compile(
    optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
)
model.fit(data, epochs=1, verbose=0)
print("fit done")
