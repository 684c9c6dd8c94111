"""tftrace: see what TensorFlow's CPU thread pools do, and why cores sit idle."""

__version__ = "0.1.0"
