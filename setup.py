"""Build the optional C extensions: the wire decoder (tputui.data._wire), event nesting
(tputui.analysis._nesting) and Riegeli's HighwayHash (tputui.data._highway).

If no C compiler is available the build goes on without them and tputui falls back to
protobuf's own parser and numpy / pure Python (exact, but slower on large profiles).
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
            "tputui.analysis._nesting",
            sources=["tputui/analysis/_nesting.c"],
            extra_compile_args=["-O3", "-std=c99"],
            optional=True,
        ),
        Extension(  # Riegeli checksums (tputui/data/highway.py falls back to pure Python)
            "tputui.data._highway",
            sources=["tputui/data/_highway.c"],
            extra_compile_args=["-O3", "-std=c99"],
            optional=True,
        ),
    ]
)
