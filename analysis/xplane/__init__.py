"""Decoding TF profiler traces (``*.xplane.pb``) into numpy columns, without TensorFlow.

``decode.decode(bytes)`` is the entry point: one pass over the protobuf wire format in C
(``_wire.c``), or the pure-Python ``reference`` decoder when the extension is not built (the
two are tested against each other). ``columns`` describes the tables both produce; ``schema``
holds the XSpace protobuf classes, built without importing TensorFlow.
"""
