"""tftrace's version, in a module of its own: run directories and exports record it, and they
must not import the ``tftrace`` package (which names every public module)."""

__version__ = "0.1.0"
