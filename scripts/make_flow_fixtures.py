"""Build a synthetic GPU profile with kernel launches, XFlow stats, counters and allocator activity,
and reduce XProf's trace viewer output of it (and of real fixtures) to its flow links.

usage: python scripts/make_flow_fixtures.py [--no-oracle]   (writes tests/fixtures/flows)

`flows/gpu_launch`: one host, `/host:CPU` with a `python` thread launching 4 kernels and a memcpy
(`cuLaunchKernel` / `cuMemcpyHtoDAsync`, each with a `correlation_id`), a producer / consumer pair
carrying XFlow `flow` stats (out on one thread, in on another), MemoryAllocation /
MemoryDeallocation events with `bytes_allocated` on allocator `GPU_0_bfc`; `/device:GPU:0` with
the kernels and the memcpy (same correlation ids) on a stream line and a `_counters_` line of 6
samples of two counters. None of the real profiles has GPU launches (the CPU/JAX ones have no
device; `gpu_kernels` has kernels without their host launches).

`flows/unmatched` (issue #33): flow ends without a partner, which real profiles have (a capture
cut mid-flight): host `typed` has `_p` / `_c` ids with their `_pt` / `_ct` types that never meet,
an XFlow out with no in, a GPU launch whose kernel is not in the profile, and one XFlow pair that
does match; host `untyped` has `_p` / `_c` without any type stat, ids that never meet. The trace
viewer links the one pair and shows every event (it used to fail on both hosts).

`flows/oracle/<fixture>.flows.json`: XProf 2.24.2's trace_viewer output (../shared/tools/oracle.py)
reduced to its links: XProf writes the one `flow` stat each event keeps as an arg (id in bits
2-57, direction in bits 0-1: 1 in, 2 out, 3 in-out); every out / in-out event links to every in /
in-out event of the same id. Each link is `[[pid, tid, ts_ns, name], [pid, tid, ts_ns, name]]`.
`counters` lists XProf's `"ph":"C"` events (pid, name, ts_ns) when it writes any.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from make_pod_fixtures import PROFILE_START_NS, US, PlaneBuilder  # noqa: E402

from tputui.proto import xplane_pb2  # noqa: E402

ORACLE_PY = os.environ.get("XPROF_PYTHON", "/work/xvenv/bin/python")
ORACLE = os.environ.get("XPROF_ORACLE", "/work/shared/tools/oracle.py")
OUT = ROOT / "tests" / "fixtures" / "flows"
RUN = "2026_11_25_01_00_00"
HOST = "gpu-launch"
# (fixture name, logdir) whose XProf flows the tests compare with ours
ORACLE_FIXTURES = {
    "gpu_launch": OUT / "gpu_launch",
    "pod_v5e_single": ROOT / "tests" / "fixtures" / "pod" / "pod_v5e_single",
    "tpu_v6e_inference": ROOT / "tests" / "fixtures" / "profiles" / "tpu_v6e_inference",
    "jax_mlp": ROOT / "tests" / "fixtures" / "profiles" / "jax_mlp",
}
FLOW_OUT, FLOW_IN = 2, 1


def xflow(flow_id: int, direction: int, category: int = 0) -> tuple[str, int]:
    return ("u", direction | (flow_id << 2) | (category << 58))


def build_host() -> xplane_pb2.XSpace:
    xs = xplane_pb2.XSpace()
    xs.hostnames.append(HOST)
    host = xs.planes.add()
    host.id, host.name = 0, "/host:CPU"
    hb = PlaneBuilder(host)
    py = hb.line(1, "python")
    worker = hb.line(2, "worker")
    gpu = xs.planes.add()
    gpu.id, gpu.name = 1, "/device:GPU:0"
    gb = PlaneBuilder(gpu)
    stream = gb.line(7, "Stream #7(Compute)")
    counters = gb.line(99, "_counters_")
    step = hb.metadata("train_step")
    hb.event(py, step, 10 * US, 200 * US)
    for k in range(4):  # launches at 20, 60, 100, 140 us; kernels 5 us later, 20 us long
        cid = k + 1
        hb.event(py, hb.metadata("cuLaunchKernel"), (20 + 40 * k) * US, 4 * US, {"correlation_id": ("u", cid)})
        gb.event(stream, gb.metadata(f"gemm_kernel_{k % 2}"), (25 + 40 * k) * US, 20 * US,
                 {"correlation_id": ("u", cid)})
    hb.event(py, hb.metadata("cuMemcpyHtoDAsync"), 180 * US, 3 * US, {"correlation_id": ("u", 5)})
    gb.event(stream, gb.metadata("MemcpyH2D"), 185 * US, 10 * US, {"correlation_id": ("u", 5)})
    # A producer on python and its consumer on the worker thread, linked by XFlow stats.
    hb.event(py, hb.metadata("EnqueueBatch"), 12 * US, 5 * US, {"flow": xflow(4242, FLOW_OUT, 5)})
    hb.event(worker, hb.metadata("ProcessBatch"), 30 * US, 50 * US, {"flow": xflow(4242, FLOW_IN, 5)})
    # Allocator activity: 1 MiB, then 3 MiB, then back to 2 MiB in use.
    for t, name, in_use in ((15, "MemoryAllocation", 1 << 20), (50, "MemoryAllocation", 3 << 20),
                            (150, "MemoryDeallocation", 2 << 20)):
        hb.event(worker, hb.metadata(name), t * US, 0,
                 {"allocator_name": "GPU_0_bfc", "bytes_allocated": in_use, "allocation_bytes": 1 << 20})
    for k in range(6):
        for name, value in (("SM_ACTIVE", 10 * k * k), ("DRAM_READ_BYTES", 1000 * (6 - k))):
            gb.event(counters, gb.metadata(name), (20 + 30 * k) * US, 0, {"counter_value": ("u", value)})
    env = xs.planes.add()
    env.id, env.name = 2, "Task Environment"
    PlaneBuilder(env).add_stats(env, {"profile_start_time": ("u", PROFILE_START_NS),
                                      "profile_stop_time": ("u", PROFILE_START_NS + 1_000_000)})
    return xs


def build_unmatched(typed: bool) -> xplane_pb2.XSpace:
    """One host of `flows/unmatched` (see the module docstring)."""
    xs = xplane_pb2.XSpace()
    name = "typed" if typed else "untyped"
    xs.hostnames.append(name)
    host = xs.planes.add()
    host.id, host.name = 0, "/host:CPU"
    hb = PlaneBuilder(host)
    main, worker = hb.line(1, "main"), hb.line(2, "worker")
    p_stats: dict = {"_p": ("u", 11)}
    c_stats: dict = {"_c": ("u", 12)}
    if typed:
        p_stats["_pt"], c_stats["_ct"] = ("u", 1), ("u", 1)
    hb.event(main, hb.metadata("Produce"), 10 * US, 5 * US, p_stats)
    hb.event(worker, hb.metadata("Consume"), 30 * US, 5 * US, c_stats)
    if typed:
        hb.event(main, hb.metadata("SendLost"), 40 * US, 2 * US, {"flow": xflow(7, FLOW_OUT)})
        hb.event(main, hb.metadata("Send"), 50 * US, 2 * US, {"flow": xflow(8, FLOW_OUT)})
        hb.event(worker, hb.metadata("Receive"), 60 * US, 4 * US, {"flow": xflow(8, FLOW_IN)})
        hb.event(main, hb.metadata("cuLaunchKernel"), 70 * US, 3 * US, {"correlation_id": ("u", 5)})
    env = xs.planes.add()
    env.id, env.name = 1, "Task Environment"
    PlaneBuilder(env).add_stats(env, {"profile_start_time": ("u", PROFILE_START_NS),
                                      "profile_stop_time": ("u", PROFILE_START_NS + 1_000_000)})
    return xs


def write_unmatched() -> None:
    base = OUT / "unmatched"
    shutil.rmtree(base, ignore_errors=True)
    run_dir = base / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    for typed in (True, False):
        xs = build_unmatched(typed)
        (run_dir / f"{xs.hostnames[0]}.xplane.pb").write_bytes(xs.SerializeToString())


def xprof_links(doc: dict) -> dict:
    """The links and counters of XProf's trace_viewer JSON (see the module docstring)."""
    by_id: dict[int, tuple[list, list]] = {}
    counters = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "C":
            counters.append([e["pid"], e["name"], round(float(e["ts"]) * 1000)])
        flow = (e.get("args") or {}).get("flow")
        if e.get("ph") not in ("X", "i") or flow is None:
            continue
        v = int(flow)
        key = [e["pid"], e.get("tid", 0), round(float(e["ts"]) * 1000), e["name"]]
        outs, ins = by_id.setdefault((v >> 2) & ((1 << 56) - 1), ([], []))
        if v & FLOW_OUT:
            outs.append(key)
        if v & FLOW_IN:
            ins.append(key)
    links = sorted([a, b] for outs, ins in by_id.values() for a in outs for b in ins if a != b)
    return {"tool": "xprof 2.24.2 trace_viewer via shared/tools/oracle.py, reduced by scripts/make_flow_fixtures.py",
            "links": links, "counters": sorted(counters)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-oracle", action="store_true")
    a = ap.parse_args()
    base = OUT / "gpu_launch"
    shutil.rmtree(base, ignore_errors=True)
    run_dir = base / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / f"{HOST}.xplane.pb").write_bytes(build_host().SerializeToString())
    write_unmatched()
    if a.no_oracle:
        return
    od = OUT / "oracle"
    od.mkdir(exist_ok=True)
    for name, logdir in ORACLE_FIXTURES.items():
        out = subprocess.run([ORACLE_PY, ORACLE, str(logdir), "trace_viewer"], check=True, capture_output=True,
                             timeout=1200).stdout
        doc = json.loads(out[out.index(b"{"):])
        (od / f"{name}.flows.json").write_text(json.dumps(xprof_links(doc), indent=0) + "\n")


if __name__ == "__main__":
    main()
