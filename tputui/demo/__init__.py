"""The bundled demo profile (`tputui --demo`).

A real profile made with ../shared/tools/gen/jax_mlp.py (JAX 0.10.2 on CPU, 30 training
steps with StepTraceAnnotation markers, HLO protos in /host:metadata). Opened read-only.
"""
from __future__ import annotations

import pathlib


def demo_logdir() -> str:
    return str(pathlib.Path(__file__).resolve().parent / "logdir")
