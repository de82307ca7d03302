"""Build the optional C extensions: the wire decoder (tputui.data._wire) and the trace
viewer's sequential derive steps (tputui.analysis._derive).

If no C compiler is available the build goes on without them and tputui falls back to
protobuf's own parser and to the Python replays (exact, but slower on large profiles).
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tputui.data._wire",
            sources=["tputui/data/_wire.c"],
            extra_compile_args=["-O3", "-std=c99"],
            optional=True,
        ),
        Extension(
            "tputui.analysis._derive",
            sources=["tputui/analysis/_derive.c"],
            extra_compile_args=["-O3", "-std=c99"],
            optional=True,
        ),
    ]
)
