"""Only the optional C extension; all metadata is in pyproject.toml (setuptools merges them)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tftrace.analysis.xplane._wire",
            ["analysis/xplane/_wire.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
