"""Build the event-grouping fixture: serving roots, continuation launches, run ids above 2**27.

usage: python scripts/make_grouping_fixture.py [OUT_DIR] [--no-oracle]   (default tests/fixtures/grouping)

One TPU host (2 TensorCores, 8 steps) whose host plane settles the three points where tputui's op-stats
side and trace side used to disagree (issue #29), each against XProf's own converter:

  roots      even steps are `OrbaxServing::ProcessBatch` events, odd steps `ProcessBatch` events, neither
             with an `_r` stat: only the event names XProf's preprocessing marks as roots start steps
  launches   steps 2 and 5 launch their XLA module with `DoEnqueueContinuationProgram`, the others with
             `DoEnqueueProgram` (one launch per core, nested in the step's root)
  run ids    every host launch's run id has bits 27 and 29 set; the device's `XLA Modules` event
             records the low 27 bits: a 27-bit mask ties them, a 28-bit one does not

Device planes, HLO program and metadata come from scripts/make_pod_fixtures.py. With the oracle
(default) XProf's outputs are written to `<out>/orbax_serving/oracle/`: overview_page, op_profile,
input_pipeline_analyzer, pod_viewer (JSON) and trace_viewer (reduced to digest + summary as
scripts/copy_fixtures.py does), each from ../shared/tools/oracle.py run by XPROF_PYTHON (default
/work/xvenv/bin/python). Run this script itself with a python that has jax (the HLO text -> proto step).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import make_pod_fixtures as pods  # noqa: E402
from copy_fixtures import digest  # noqa: E402

NAME = "orbax_serving"
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")
US = pods.US
DEVICE_RUN_ID_BITS = (1 << 27) - 1  # what the device keeps of a launch's run id
CONTINUATION_STEPS = (2, 5)
SPEC = pods.PodSpec(NAME, "TPU v5 lite", hosts_per_slice=1, chips_per_host=2, cores_per_chip=1, steps=8, seed=7,
                    host_prefix="serve")


def host_run_id(step: int) -> int:
    return (1 << 29) | (1 << 27) | (1000 + step)


def root_name(step: int) -> str:
    return "OrbaxServing::ProcessBatch" if step % 2 == 0 else "ProcessBatch"


def launch_name(step: int) -> str:
    return "DoEnqueueContinuationProgram" if step in CONTINUATION_STEPS else "DoEnqueueProgram"


def build(run_dir: pathlib.Path) -> pathlib.Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    sim = pods.simulate(SPEC)
    hlo = pods.hlo_module_proto(SPEC)
    pods.run_id = host_run_id  # the device planes record run_id(step) & RUN_ID_MASK
    pods.RUN_ID_MASK = DEVICE_RUN_ID_BITS
    xs = pods.build_host(SPEC, 0, sim, hlo)
    cpu = next(p for p in xs.planes if p.name == "/host:CPU")
    cpu.Clear()
    cpu.name = "/host:CPU"
    cb = pods.PlaneBuilder(cpu)
    batch = cb.line(700, "batch_thread")
    for step, (s0, s1, _ops) in enumerate(sim[(0, 0)]):
        cb.event(batch, cb.metadata(root_name(step)), s0 - 30 * US, s1 - s0 + 20 * US)
        for c in range(SPEC.cores_per_host):
            cb.event(batch, cb.metadata(launch_name(step)), s0 - 12 * US + c * US, US // 2,
                     {"device_ordinal": ("u", c), "queue_id": ("u", 0), "run_id": ("u", host_run_id(step))})
    path = run_dir / f"{SPEC.host_name(0)}.xplane.pb"
    path.write_bytes(xs.SerializeToString())
    return path


def oracle(logdir: pathlib.Path, tool: str, params: dict | None = None) -> bytes:
    cmd = [ORACLE_PY, str(pods.ORACLE), str(logdir), tool]
    if params:
        cmd += ["--params", json.dumps(params)]
    return subprocess.run(cmd, check=True, capture_output=True, timeout=900).stdout


def trace_summary(raw: bytes) -> dict:
    sys.path.insert(0, str(pods.ORACLE.parent))
    code = ("import json, sys; from oracle import trace_summary; "
            "print(json.dumps(trace_summary(sys.stdin.buffer.read()), indent=1))")
    out = subprocess.run([ORACLE_PY, "-c", code], input=raw, capture_output=True, check=True,
                         cwd=str(pods.ORACLE.parent)).stdout
    return json.loads(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "fixtures" / "grouping"))
    ap.add_argument("--no-oracle", action="store_true")
    a = ap.parse_args()
    base = pathlib.Path(a.out) / NAME
    shutil.rmtree(base, ignore_errors=True)
    path = build(base / "plugins" / "profile" / pods.RUN)
    print(f"{NAME}: {path.stat().st_size} bytes")
    if a.no_oracle:
        return
    od = base / "oracle"
    od.mkdir(parents=True, exist_ok=True)
    index = {"tool": "xprof 2.24.2 via shared/tools/oracle.py", "outputs": {}}
    for tool in ("overview_page", "op_profile", "input_pipeline_analyzer", "pod_viewer"):
        (od / f"{tool}.json").write_bytes(oracle(base, tool))
        index["outputs"][tool] = f"{tool}.json"
    raw = oracle(base, "trace_viewer")
    with tempfile.TemporaryDirectory() as tmp:
        tj = pathlib.Path(tmp) / "trace_viewer.json"
        tj.write_bytes(raw)
        digest(tj, od / "trace_viewer.digest.npz")
    (od / "trace_viewer.summary.json").write_text(json.dumps(trace_summary(raw), indent=1) + "\n")
    index["outputs"]["trace_viewer"] = "trace_viewer.digest.npz + trace_viewer.summary.json"
    (od / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
