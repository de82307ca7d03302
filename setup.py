"""Build the optional C extensions: the wire decoder (tputui.data._wire), event nesting
(tputui.analysis._nesting), the trace viewer's sequential derive steps (tputui.analysis._derive) and
Riegeli's HighwayHash checksums (tputui.data._highway), the frame's whole-column lookups
(tputui.data._columns) and the trace viewer export's JSON lines (tputui.analysis._trace_json).

If no C compiler is available the build goes on without them and tputui falls back to
protobuf's own parser, numpy and the Python replays / hash (exact, but slower on large profiles).
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            f"tputui.{name}",
            sources=[f"tputui/{name.replace('.', '/')}.c"],
            extra_compile_args=["-O3", "-std=c99"],
            optional=True,
        )
        for name in ("data._wire", "data._columns", "analysis._nesting", "analysis._derive", "data._highway",
                     "analysis._trace_json")
    ]
)
