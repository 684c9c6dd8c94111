"""Only the optional C extensions (the trace decoder, the export's JSON writer, the OS
sampler's /proc reader); all metadata is in pyproject.toml (setuptools merges them)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tftrace.analysis.xplane._wire",
            ["analysis/xplane/_wire.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "tftrace.analysis.export._events",
            ["analysis/export/_events.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "tftrace.tracer._procstat",
            ["tracer/_procstat.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
