"""An eager loop over a tf.data dataset, with no tf.function: argv[1] (default 8) elements,
each pass of the loop sleeping 50 ms, then a 0.5 s tail after the loop (the script's end,
which a sweep must not time). Prints OWN_PASSES=<JSON list of CLOCK_MONOTONIC ns>, read at the
top of each pass, as soon as ``next()`` gave the element.
"""

import json
import sys
import time

import tensorflow as tf

elements = int(sys.argv[1]) if len(sys.argv) > 1 else 8
ds = tf.data.Dataset.range(elements).map(lambda i: i * 2)
own = []
for _element in ds:
    own.append(time.monotonic_ns())
    time.sleep(0.05)
time.sleep(0.5)
print("OWN_PASSES=" + json.dumps(own), flush=True)
