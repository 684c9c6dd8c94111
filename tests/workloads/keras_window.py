"""Keras fit on tf.data (2 epochs of 20 batches) with tftrace's callback on a window of
batches: ``keras_window.py DIR START STOP``."""

import sys

import keras
import numpy as np
import tensorflow as tf

import tftrace

run_dir, start, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.random.default_rng(0).normal(size=(640, 32)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).map(lambda a, b: (a * 2.0, b))
model = keras.Sequential(
    [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer="adam", loss="mse")
callback = tftrace.keras.ProfileCallback(run_dir, batches=(start, stop), pyspy=False)
model.fit(data, epochs=2, verbose=0, callbacks=[callback])
print(f"FIT_DONE path={callback.path}")
