"""Build the optional C wire decoder (tputui.data._wire).

If no C compiler is available the build goes on without it and tputui falls back to
protobuf's own parser (exact, but slower on large profiles).
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tputui.data._wire",
            sources=["tputui/data/_wire.c"],
            extra_compile_args=["-O3", "-std=c99"],
            optional=True,
        )
    ]
)
