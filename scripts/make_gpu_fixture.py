"""Build the small GPU profile used by the kernel_stats tests (no GPU profile exists here).

It follows the GPU conventions XProf reads (xplane_to_kernel_stats_db.cc, gpu_event_stats.cc):
`/device:GPU:<n>` planes with a `device_vendor` plane stat, one line per CUDA stream, kernel
events carrying `kernel_details` ("regs:.. static_shared:.. dynamic_shared:.. grid:x,y,z
block:x,y,z occ_pct:.."), the framework op in `tf_op`, einsum equations in `equation`, XLA kernels
with `hlo_op` / `hlo_module` / `program_id`, and memcpy events with `memcpy_details` (not kernels).
Edge cases on purpose: a zero-duration kernel, the same kernel with other launch dims, the same
kernel on two GPUs, durations that are not whole nanoseconds, a stat stored by reference.

    python scripts/make_gpu_fixture.py [OUT_LOGDIR]   (default tests/fixtures/gpu_kernels)
    python scripts/make_gpu_fixture.py --no-device-events [OUT_LOGDIR]   (default tests/fixtures/gpu_no_device_events)

`--no-device-events`: the same host and GPU planes with no event on the GPUs and the warning TensorFlow's
GPU tracer leaves in the XSpace when CUPTI was refused (what the Profiler guide names as the usual cause
of a GPU trace without device events); its oracle is XProf's overview_page.

Then the oracle: /opt/venvs/oracle/bin/python ../shared/tools/oracle.py OUT_LOGDIR kernel_stats
> OUT_LOGDIR/oracle/kernel_stats.json (scripts/make_gpu_fixture.py --oracle does both).
"""
from __future__ import annotations

import os
import subprocess
import sys

from tputui.proto import xplane_pb2

RUN = "2026_01_01_00_00_00"
HOST = "gpu-host"
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/opt/venvs/oracle/bin/python")  # a python with xprof
ORACLE_TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tools", "oracle.py")

GEMM = "volta_h884gemm_128x128_ldg8_nn"
CONV = "void cudnn::cnn::conv2d_grouped_direct_kernel<float, float, float, float, float, false>(int, int)"
ELTWISE = "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<float>, long>(float, long)"
FUSION = "loop_add_fusion"
EINSUM = "ampere_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"
SOFTMAX = "softmax_kernel_fp32"

# (kernel, details, stats, [durations in ps])
KERNELS_GPU0 = [
    (GEMM, "regs:128 static_shared:0 dynamic_shared:49152 grid:64,2,1 block:256,1,1 occ_pct:25.0",
     {"tf_op": "model/dense/MatMul:MatMul"}, [120_000, 118_000, 125_500, 119_000]),
    (GEMM, "regs:128 static_shared:0 dynamic_shared:49152 grid:32,4,1 block:256,1,1 occ_pct:25.0",
     {"tf_op": "model/dense_1/MatMul:MatMul"}, [60_000, 61_000]),
    (CONV, "regs:64 static_shared:16384 dynamic_shared:0 grid:128,1,1 block:128,1,1 occ_pct:50.0",
     {"tf_op": "model/conv2d/Conv2D:Conv2D"}, [300_000, 310_000, 290_000]),
    (ELTWISE, "regs:16 static_shared:0 dynamic_shared:0 grid:1024,1,1 block:1024,1,1 occ_pct:100.0",
     {"tf_op": "model/relu/Relu:Relu"}, [9_000, 9_500, 8_999, 10_001, 0]),
    (FUSION, "regs:32 static_shared:0 dynamic_shared:0 grid:256,1,1 block:128,1,1 occ_pct:75.5",
     {"hlo_op": "add_fusion.3", "hlo_module": "jit_step", "program_id": 42}, [15_000, 14_000]),
    (EINSUM, "regs:168 static_shared:0 dynamic_shared:98304 grid:16,8,1 block:128,1,1 occ_pct:12.5",
     {"tf_op": "model/einsum/Einsum:Einsum", "equation": "ab,bc->ac"}, [80_000, 82_000]),
    (SOFTMAX, "regs:24 static_shared:512 dynamic_shared:0 grid:8,1,1 block:512,1,1",
     {"tf_op": "model/softmax/Softmax:Softmax"}, [7_000]),
]
KERNELS_GPU1 = [
    (GEMM, "regs:128 static_shared:0 dynamic_shared:49152 grid:64,2,1 block:256,1,1 occ_pct:25.0",
     {"tf_op": "model/dense/MatMul:MatMul"}, [121_000, 200_000]),
    (CONV, "regs:64 static_shared:16384 dynamic_shared:0 grid:128,1,1 block:128,1,1 occ_pct:50.0",
     {"tf_op": "model/conv2d/Conv2D:Conv2D"}, [305_000]),
]
MEMCPY = ("MemcpyH2D", {"memcpy_details": "kind:HtoD size:4194304 dest:0 async:1"}, [50_000, 52_000])
REF_STATS = {"tf_op"}  # stored as ref_value (a stat-metadata name), like real profiles do


class PlaneBuilder:
    def __init__(self, plane: xplane_pb2.XPlane):
        self.p = plane
        self.stat_ids: dict[str, int] = {}
        self.event_ids: dict[str, int] = {}

    def stat_id(self, name: str) -> int:
        if name not in self.stat_ids:
            i = len(self.stat_ids) + 1
            self.stat_ids[name] = i
            self.p.stat_metadata[i].id = i
            self.p.stat_metadata[i].name = name
        return self.stat_ids[name]

    def event_id(self, name: str) -> int:
        if name not in self.event_ids:
            i = len(self.event_ids) + 1
            self.event_ids[name] = i
            self.p.event_metadata[i].id = i
            self.p.event_metadata[i].name = name
        return self.event_ids[name]

    def set_stat(self, stat: xplane_pb2.XStat, name: str, value) -> None:
        stat.metadata_id = self.stat_id(name)
        if name in REF_STATS:
            stat.ref_value = self.stat_id(value)
        elif isinstance(value, str):
            stat.str_value = value
        elif isinstance(value, float):
            stat.double_value = value
        else:
            stat.int64_value = value

    def add_events(self, line: xplane_pb2.XLine, kernels, t0_ps: int) -> int:
        t = t0_ps
        for name, details, stats, durations in kernels:
            for d in durations:
                ev = line.events.add()
                ev.metadata_id = self.event_id(name)
                ev.offset_ps = t
                ev.duration_ps = d
                if details:
                    self.set_stat(ev.stats.add(), "kernel_details", details)
                for k, v in stats.items():
                    self.set_stat(ev.stats.add(), k, v)
                self.set_stat(ev.stats.add(), "correlation_id", len(line.events))
                t += d + 5_000
        return t


def gpu_plane(space: xplane_pb2.XSpace, index: int, kernels) -> None:
    plane = space.planes.add()
    plane.id = index + 1
    plane.name = f"/device:GPU:{index}"
    b = PlaneBuilder(plane)
    for name, value in (("device_vendor", "Nvidia"), ("devcap_core_count", 80),
                        ("devcap_compute_cap_major", 7), ("devcap_compute_cap_minor", 0)):
        b.set_stat(plane.stats.add(), name, value)
    compute = plane.lines.add()
    compute.id, compute.name, compute.timestamp_ns = 13, "Stream #13(Compute)", 1_000
    compute.display_name = compute.name
    end = b.add_events(compute, kernels, 0)
    copies = plane.lines.add()
    copies.id, copies.name, copies.timestamp_ns = 14, "Stream #14(MemcpyH2D)", 1_000
    name, stats, durations = MEMCPY
    b.add_events(copies, [(name, "", stats, durations)], end // 2)


def host_plane(space: xplane_pb2.XSpace) -> None:
    plane = space.planes.add()
    plane.name = "/host:CPU"
    b = PlaneBuilder(plane)
    line = plane.lines.add()
    line.id, line.name, line.timestamp_ns = 7, "python", 0
    ev = line.events.add()
    ev.metadata_id = b.event_id("train_step")
    ev.offset_ps, ev.duration_ps = 0, 2_000_000_000


CUPTI_WARNING = ("CUPTI error: CUPTI could not be initialized: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES "
                 "(the GPU tracer recorded no device activity)")


def build(out_dir: str, device_events: bool = True) -> str:
    space = xplane_pb2.XSpace()
    space.hostnames.append(HOST)
    host_plane(space)
    gpu_plane(space, 0, KERNELS_GPU0 if device_events else [])
    gpu_plane(space, 1, KERNELS_GPU1 if device_events else [])
    if not device_events:
        for plane in space.planes:  # the stream lines are there, empty
            for line in plane.lines:
                if plane.name.startswith("/device:GPU"):
                    del line.events[:]
        space.warnings.append(CUPTI_WARNING)
    run_dir = os.path.join(out_dir, "plugins", "profile", RUN)
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, f"{HOST}.xplane.pb")
    with open(path, "wb") as f:
        f.write(space.SerializeToString(deterministic=True))
    return path


def write_oracle(out_dir: str, tool: str = "kernel_stats") -> str:
    """XProf's own output of `tool` for the fixture (kernel_stats: it reads as a GPU profile)."""
    out = subprocess.run([ORACLE_PY, ORACLE_TOOL, out_dir, tool], check=True,
                         capture_output=True, text=True, timeout=300).stdout
    os.makedirs(os.path.join(out_dir, "oracle"), exist_ok=True)
    path = os.path.join(out_dir, "oracle", f"{tool}.json")
    with open(path, "w") as f:
        f.write(out)
    return path


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    empty = "--no-device-events" in sys.argv
    default = "gpu_no_device_events" if empty else "gpu_kernels"
    target = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", default)
    print(build(target, device_events=not empty))
    if "--oracle" in sys.argv:
        print(write_oracle(target, "overview_page" if empty else "kernel_stats"))
