"""Small JAX CPU profiles that each show one of the Cloud TPU performance guide's patterns (issue #31).

usage: XLA_FLAGS=... python scripts/make_guide_fixtures.py NAME OUT_LOGDIR   (run by --all, which sets them)
       python scripts/make_guide_fixtures.py --all [--oracle PYTHON]

  unfused_elementwise     a chain of elementwise ops (multiply, add, tanh) on 2 MiB arrays, compiled with XLA's
                          fusion pass disabled (XLA_FLAGS=--xla_disable_hlo_passes=fusion): every op is its own
                          kernel, each intermediate written to memory and read back
  materialized_broadcast  a [1024] vector broadcast to [2048, 1024] (8 MiB), then added, fusion disabled as above:
                          the broadcast is written to memory instead of fused into the add (one elementwise op
                          only, so the unfused-chain check has nothing to say)
  spmd_small_batch        a [96, 100] batch sharded over 8 CPU devices (--xla_force_host_platform_device_count=8):
                          the partitioned program's parameters hold one core's 12 x 100, outside the guide's
                          per-core batch rules
  conv_small_batch        a 3x3 convolution of 16 NHWC images with 3 input features: the performance guide's
                          padding example (batch 16 -> 128, features 3 -> 8 on the MXU, about 5% used)

Each run: 3 steps (StepTraceAnnotation), compiled before the trace. With --oracle, XProf's memory_viewer and
graph-free figures for each go to <fixture>/oracle/ (its converter via ../shared/tools/oracle.py).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "guides"
ORACLE = ROOT.parent / "shared" / "tools" / "oracle.py"
# XLA's fusion pass off: each op its own kernel (XLA CPU fuses these otherwise; an optimization barrier does
# not keep a broadcast out of its consumer on CPU either)
FLAGS = {"unfused_elementwise": "--xla_disable_hlo_passes=fusion",
         "materialized_broadcast": "--xla_disable_hlo_passes=fusion",
         "conv_small_batch": "",
         # eight CPU devices: the program is SPMD-partitioned over them, as a TPU job's over its cores
         "spmd_small_batch": "--xla_force_host_platform_device_count=8"}


def program(name: str):
    import jax
    import jax.numpy as jnp
    import numpy as np

    if name == "unfused_elementwise":
        @jax.jit
        def step(a, b, c):
            return jnp.tanh(a * b + c)

        shape = (1024, 512)  # 2 MiB of f32
        args = [np.full(shape, v, np.float32) for v in (0.5, 1.5, -0.25)]
    elif name == "materialized_broadcast":
        @jax.jit
        def step(v, y):
            return jnp.broadcast_to(v, (2048, 1024)) + y

        args = [np.linspace(0, 1, 1024, dtype=np.float32), np.ones((2048, 1024), np.float32)]  # host arrays:
        # no jitted helper programs in the profile
    elif name == "conv_small_batch":
        @jax.jit
        def step(x, k):  # NHWC images, HWIO kernel: batch 16, 3 input features, 8 output features
            return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

        args = [np.ones((16, 32, 32, 3), np.float32), np.ones((3, 3, 3, 8), np.float32)]
    elif name == "spmd_small_batch":
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = Mesh(np.array(jax.devices()), ("data",))

        @jax.jit
        def step(x, w):  # a global batch of 96 over 8 devices: 12 rows and 100 features per core
            return jnp.tanh(x @ w)

        args = [jax.device_put(np.ones((96, 100), np.float32), NamedSharding(mesh, P("data", None))),
                jax.device_put(np.ones((100, 256), np.float32), NamedSharding(mesh, P(None, None)))]
    else:
        raise SystemExit(f"unknown fixture {name}")
    return step, args


def capture(name: str, logdir: str) -> None:
    import jax

    shutil.rmtree(logdir, ignore_errors=True)
    step, args = program(name)
    args = [a if isinstance(a, jax.Array) else jax.device_put(a) for a in args]
    step(*args).block_until_ready()  # compile outside the trace
    with jax.profiler.trace(logdir):
        for i in range(3):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                step(*args).block_until_ready()
    for p in pathlib.Path(logdir).rglob("*.trace.json.gz"):  # the same events again, as Chrome JSON
        p.unlink()


def xprof_memory_viewer(logdir: pathlib.Path) -> None:
    """XProf's memory viewer (HBM, space 0) for every module, as oracle/memory_viewer.json {module: output}."""
    import json

    sys.path.insert(0, str(ORACLE.parent))
    import oracle  # ../shared/tools/oracle.py

    run = oracle.Run(str(next(logdir.glob("plugins/profile/*"))))
    result = {}
    for module in run.hlo_modules():
        data, _ = run.convert("memory_viewer", {"module_name": module, "memory_space": "0"})
        result[module] = json.loads(data) if data else None
    run.close()
    (logdir / "oracle").mkdir(exist_ok=True)
    (logdir / "oracle" / "memory_viewer.json").write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", nargs="?")
    ap.add_argument("logdir", nargs="?")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--oracle", metavar="PYTHON", help="a python with xprof: write XProf's outputs beside each")
    ap.add_argument("--xprof-memory", metavar="LOGDIR", help=argparse.SUPPRESS)
    ap.add_argument("--only", metavar="NAME", help="with --all: build this fixture only")
    a = ap.parse_args()
    if a.xprof_memory:
        xprof_memory_viewer(pathlib.Path(a.xprof_memory))
        return
    if not a.all:
        capture(a.name, a.logdir)
        return
    ap_only = [n for n in FLAGS if not a.only or n == a.only]
    for name in ap_only:
        flags = FLAGS[name]
        out = OUT / name
        env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
        # one process per fixture: XLA_FLAGS are read once, at backend start
        # a relative script path: the source file names JAX puts in the HLO hold no path of this machine
        # (python makes a script's own path absolute; runpy keeps it as given)
        launch = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
        subprocess.run([sys.executable, "-c", launch, "scripts/make_guide_fixtures.py", name, str(out)], check=True,
                       env=env, cwd=ROOT)
        if a.oracle:  # XProf's memory viewer per module (the buffer sizes the checks name)
            subprocess.run([a.oracle, __file__, "--xprof-memory", str(out)], check=True, cwd=ROOT)
        size = sum(p.stat().st_size for p in out.rglob("*.xplane.pb"))
        print(f"{name}: {size:,} bytes")


if __name__ == "__main__":
    main()
