"""The bundled demo profiles (`tputui --demo`), two runs, each under 1 MB, opened read-only:

- 2026_11_22_13_23_13: made with ../shared/tools/gen/jax_mlp.py (JAX 0.10.2 on CPU, 30
  training steps with StepTraceAnnotation markers, HLO protos in /host:metadata);
- 2025_12_10_00_00_00_tpu_v6e: a real Cloud TPU v6e inference profile (4 TensorCores, XLA
  ops, HLO protos), the tests' tpu_v6e_inference fixture; `r` switches to it.
"""
from __future__ import annotations

import pathlib


def demo_logdir() -> str:
    return str(pathlib.Path(__file__).resolve().parent / "logdir")
