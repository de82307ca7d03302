"""Build synthetic multi-host TPU profiles for the pod viewer and megascale stats.

usage: python scripts/make_pod_fixtures.py [OUT_DIR] [--no-oracle]   (default tests/fixtures/pod)

The real profiles we have are single-host and have neither pod-scale steps nor DCN traffic,
so this script writes XSpace files the way a TPU pod slice records them, following XProf's
schema (plane / line / stat names from XProf's and XLA's sources):

  /device:TPU:<n>   plane id = core id; plane stats `core_details` (CoreDetails bytes),
                    `device_type_string`, peak FLOPS / bandwidths
    "Steps"         one event per step, name = step number, stat `group_id`
    "XLA Modules"   `<module>(<program_id>)` per step, stats run_id / group_id
    "XLA Ops"       HLO ops; metadata stats hlo_category, program_id, symbol_id, flops,
                    bytes_accessed...; event stats device_offset_ps / device_duration_ps /
                    group_id (the file is "grouped", so XProf takes the ids as they are)
  /host:metadata    the HLO module (`Hlo Proto` bytes, `program_id`), needed by megascale
                    stats to read send/recv rendezvous names, transfer types and shapes
  /host:CPU         `train` step markers; with DCN, `MegaScale: ...` transport TraceMes
  Task Environment  profile_start_time / profile_stop_time

Fixtures (each run is a logdir `<name>/plugins/profile/<run>/<host>.xplane.pb`):
  pod_v5e_single    1 host, 4 chips x 1 core (TPU v5 lite), 6 steps
  pod_v4_32         4 hosts, 4 chips x 2 cores (TPU v4) = 32 cores, steps misaligned across
                    hosts and a step missing on one core (XProf intersects them)
  dcn_2slices       2 slices x 1 host x 4 chips, DCN collectives over host send/recv
                    (ALL_REDUCE, ALL_GATHER, ONE_TO_ONE, REDUCE_SCATTER)

With the oracle (default), XProf's own outputs are written beside each fixture in
`<name>/oracle/` (pod_viewer.json, overview_page.json, megascale_stats.<host>.json), by
running ../shared/tools/oracle.py under /opt/venvs/oracle. Needs jax (HLO text -> proto).
`build_run()` is also imported by tests to make larger pods (e.g. 256 cores) in a tmp dir.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tputui.proto import xplane_pb2  # noqa: E402

RUN = "2026_11_23_10_00_00"
ORACLE_PY = os.environ.get("XPROF_PYTHON", "/opt/venvs/oracle/bin/python")  # a python with xprof
ORACLE = ROOT.parent / "shared" / "tools" / "oracle.py"
US = 1_000_000  # ps per microsecond
T0_NS = 20_000  # line timestamps: 20 us after the profile start, before every event
DEVICE_CLOCK_SKEW_PS = 7_300_000  # device_offset_ps is on the device clock
PROFILE_START_NS = 1_795_000_000_000_000_000
PROGRAM_ID = 4242424242
MODULE = "jit_train_step"
EXECUTE_CONTEXT = 5  # TraceMe 2.0 context linking the Python-side Execute to the launches
RUN_ID_MASK = (1 << 28) - 1  # the device records the low 28 bits of the launch run id
ALL_REDUCE_TRANSFER_US = 160  # the pod-wide all-reduce's transfer, after the slowest core arrives


def launch_id(host: int, step: int) -> int:
    return (host + 1) * 1_000_003 + step * 7919


def run_id(step: int) -> int:
    return 0x1234_0000 + 100 + step  # above 28 bits: XProf masks host run ids to 28 LSB


# --- tiny protobuf writer for the few XProf messages stored as bytes stats -------------
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(num: int, value) -> bytes:
    if isinstance(value, bytes):
        return _varint(num << 3 | 2) + _varint(len(value)) + value
    return _varint(num << 3) + _varint(int(value))


def core_details(host: str, ordinal: int, core_num: int, local_chip: int, global_chip: int,
                 global_core: int) -> bytes:
    """tensorflow.profiler.CoreDetails (op_stats.proto)."""
    return (_field(1, host.encode()) + _field(2, ordinal) + _field(3, core_num) + _field(4, local_chip)
            + _field(5, global_chip) + _field(6, global_core))


TRANSFER_TYPES = {"ALL_TO_ALL": 1, "ONE_TO_ONE": 2, "REDUCE_SCATTER": 3, "ALL_GATHER": 4, "ALL_REDUCE": 5}


def dcn_collective_info(transfer_type: str, slices: int, device: int) -> bytes:
    """tensorflow.profiler.DcnCollectiveInfoProto: who exchanges with whom over DCN."""
    ep = lambda s, d: _field(1, s) + _field(2, d)  # noqa: E731  Endpoint{slice_id, device_id}
    out = _field(1, TRANSFER_TYPES[transfer_type])
    if transfer_type == "ONE_TO_ONE":
        for s in range(slices):
            out += _field(3, _field(1, ep(s, device)) + _field(2, ep((s + 1) % slices, device)))
    else:
        out += _field(2, b"".join(_field(1, ep(s, device)) for s in range(slices)))
    return out


# --- XSpace building ---------------------------------------------------------------
class PlaneBuilder:
    """Interns event and stat metadata of one XPlane; ref-valued strings like real files."""

    def __init__(self, plane: xplane_pb2.XPlane):
        self.p = plane
        self._events: dict[tuple, int] = {}
        self._stats: dict[str, int] = {}

    def stat_id(self, name: str) -> int:
        sid = self._stats.get(name)
        if sid is None:
            sid = self._stats[name] = len(self._stats) + 1
            self.p.stat_metadata[sid].id = sid
            self.p.stat_metadata[sid].name = name
        return sid

    def set_stat(self, stat, name: str, value) -> None:
        stat.metadata_id = self.stat_id(name)
        if isinstance(value, bytes):
            stat.bytes_value = value
        elif isinstance(value, str):
            stat.ref_value = self.stat_id(value)
        elif isinstance(value, float):
            stat.double_value = value
        elif isinstance(value, tuple):  # ("u", n) -> uint64
            stat.uint64_value = value[1]
        else:
            stat.int64_value = value

    def add_stats(self, owner, stats: dict) -> None:
        for k, v in stats.items():
            self.set_stat(owner.stats.add(), k, v)

    def metadata(self, name: str, display: str = "", stats: dict | None = None) -> int:
        key = (name, display)
        mid = self._events.get(key)
        if mid is None:
            mid = self._events[key] = len(self._events) + 1
            md = self.p.event_metadata[mid]
            md.id, md.name = mid, name
            if display:
                md.display_name = display
            self.add_stats(md, stats or {})
        return mid

    def line(self, lid: int, name: str, ts_ns: int = T0_NS) -> xplane_pb2.XLine:
        ln = self.p.lines.add()
        ln.id, ln.name, ln.display_name, ln.timestamp_ns = lid, name, name, ts_ns
        return ln

    def event(self, line, mid: int, start_ps: int, dur_ps: int, stats: dict | None = None):
        ev = line.events.add()
        ev.metadata_id, ev.offset_ps, ev.duration_ps = mid, start_ps - line.timestamp_ns * 1000, dur_ps
        self.add_stats(ev, stats or {})
        return ev


@dataclass
class Op:
    """One HLO op instance on one core: name, category, start and duration (ps), children."""
    name: str
    category: str
    start: int
    dur: int
    hlo: str = ""
    flops: int = 0
    bytes_accessed: int = 0
    children: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)


# The step program every core runs: (op name, category, base duration us, flops, bytes).
COMPUTE_OPS = [
    ("fusion.12", "convolution fusion", 900, 2_400_000_000_000 // 1000, 120 << 20),
    ("fusion.13", "output fusion", 520, 900_000_000_000 // 1000, 90 << 20),
    ("fusion.14", "loop fusion", 240, 40_000_000, 300 << 20),
]
WHILE_BODY = [("fusion.20", "loop fusion", 110, 20_000_000, 80 << 20),
              ("convolution.21", "convolution", 310, 600_000_000_000 // 1000, 60 << 20)]
TAIL_OPS = [("all-gather.5", "all-gather", 70, 0, 64 << 20), ("copy.6", "copy", 30, 0, 32 << 20)]
ICI_OPS = [("send.4", "send", 6), ("recv.4", "recv", 5), ("send-done.4", "send-done", 18),
           ("recv-done.4", "recv-done", 55)]
# DCN collectives between slices: rendezvous, transfer type, op suffix, elements (f32).
DCN = [("dcn_allreduce_grads", "ALL_REDUCE", 10, 4 << 20),
       ("dcn_allgather_params", "ALL_GATHER", 11, 2 << 20),
       ("dcn_pipeline_p2p", "ONE_TO_ONE", 12, 1 << 20),
       ("dcn_reducescatter_opt", "REDUCE_SCATTER", 13, 512 << 10)]


@dataclass
class PodSpec:
    name: str
    device_type: str
    hosts_per_slice: int
    chips_per_host: int
    cores_per_chip: int
    steps: int
    slices: int = 1
    seed: int = 0
    host_prefix: str = "tpu-w"
    # Capture edges: {host index: steps not captured} and {(host, core): steps w/o marker}.
    missing_host_steps: dict = field(default_factory=dict)
    missing_markers: dict = field(default_factory=dict)
    peak_tflops: float = 197.0
    peak_hbm_gbps: float = 819.0
    # Chip numbering: None, host after host (chips h*chips_per_host..); (X, Y, Z), the slice's
    # shape: hosts are 2x2x1 blocks in it and global chip ids run x fastest over the slice.
    mesh: tuple | None = None
    # DCN stalls overridden: {channel: (send-done us, recv-done us)} (else the ones _dcn_ops draws)
    dcn_stalls: dict | None = None
    # Extra small, low-FLOPS ops at the end of every step (a long tail of op time), fixed durations
    small_ops: int = 0
    # Extra instructions in the step program's entry computation (HLO text lines)
    extra_hlo: tuple = ()

    @property
    def hosts(self) -> int:
        return self.hosts_per_slice * self.slices

    @property
    def cores_per_host(self) -> int:
        return self.chips_per_host * self.cores_per_chip

    def global_chip(self, h: int, chip: int) -> int:
        if self.mesh is None:
            return h * self.chips_per_host + chip
        X, Y, _Z = self.mesh
        hosts_x, hosts_y = X // 2, Y // 2
        x = 2 * (h % hosts_x) + chip % 2
        y = 2 * ((h // hosts_x) % hosts_y) + chip // 2
        z = h // (hosts_x * hosts_y)
        return x + X * (y + Y * z)

    def host_name(self, h: int) -> str:
        if self.slices > 1:
            return f"{self.host_prefix}-s{h // self.hosts_per_slice}-{h % self.hosts_per_slice}"
        return f"{self.host_prefix}-{h}"


def simulate(spec: PodSpec) -> dict:
    """Per (host, core): list of steps, each (step_start, step_end, [Op]) in ps.

    Cores run the same program; an all-reduce synchronises the whole pod, so slow cores
    wait less in it (what the pod viewer's heatmap shows). One chip per host is a bit
    slower, one host has a slow input pipeline.
    """
    rng = np.random.default_rng(spec.seed)
    n_h, n_c = spec.hosts, spec.cores_per_host
    slow_chip = rng.integers(0, spec.chips_per_host, size=n_h)
    out = {(h, c): [] for h in range(n_h) for c in range(n_c)}
    t = 50 * US
    for step in range(spec.steps):
        ends, per_core = {}, {}
        for h in range(n_h):
            for c in range(n_c):
                chip = c // spec.cores_per_chip
                speed = 1.0 + 0.08 * (chip == slow_chip[h]) + rng.normal(0, 0.01)
                cur = t + int(rng.integers(2, 9) * US)
                ops = []
                infeed = (40 + (160 if h == n_h - 1 else 0)) * (1 + rng.normal(0, 0.05))
                ops.append(Op("infeed.0", "infeed", cur, int(infeed * US), bytes_accessed=8 << 20))
                cur += ops[-1].dur + 2 * US
                for name, cat, base, fl, by in COMPUTE_OPS:
                    d = int(base * speed * US)
                    ops.append(Op(name, cat, cur, d, flops=fl, bytes_accessed=by))
                    cur += d + int(rng.integers(1, 4) * US)
                w = Op("while.2", "while", cur, 0)
                inner = cur + 4 * US
                for name, cat, base, fl, by in WHILE_BODY:
                    d = int(base * speed * US)
                    w.children.append(Op(name, cat, inner, d, flops=fl, bytes_accessed=by))
                    inner += d + 3 * US
                w.dur = inner - cur + 2 * US
                ops.append(w)
                cur += w.dur + 2 * US
                per_core[(h, c)] = ops
                ends[(h, c)] = cur
        # Pod-wide all-reduce: everyone leaves when the slowest arrives + the transfer.
        ar_end = max(ends.values()) + ALL_REDUCE_TRANSFER_US * US
        for (h, c), ops in per_core.items():
            cur = ends[(h, c)]
            ops.append(Op("all-reduce.3", "all-reduce", cur, ar_end - cur, bytes_accessed=256 << 20,
                          stats={"all_reduce_unique_id": ("u", 1000 + step)}))
            cur = ar_end + 2 * US
            for name, cat, base in ICI_OPS:
                d = int(base * (1 + rng.normal(0, 0.05)) * US)
                ops.append(Op(name, cat, cur, d, bytes_accessed=16 << 20))
                cur += d + US
            if spec.slices > 1:
                cur = _dcn_ops(spec, step, ops, cur, rng)
            for name, cat, base, fl, by in TAIL_OPS:
                d = int(base * (1 + rng.normal(0, 0.03)) * US)
                ops.append(Op(name, cat, cur, d, flops=fl, bytes_accessed=by))
                cur += d + US
            for i in range(spec.small_ops):  # no random draws: the other fixtures stay as they were
                d = (8 + i % 5) * US
                ops.append(Op(f"fusion.{200 + i}", "loop fusion", cur, d, flops=4096, bytes_accessed=64 << 10))
                cur += d + US
            ops.append(Op("outfeed.7", "outfeed", cur, 24 * US, bytes_accessed=1 << 20))
            ends[(h, c)] = cur + 24 * US + 3 * US
        step_end = max(ends.values()) + 5 * US
        for key, ops in per_core.items():
            out[key].append((t, ends[key] + 2 * US, ops))
        t = step_end + 60 * US  # host-side gap between steps
    return out


def _dcn_ops(spec: PodSpec, step: int, ops: list, cur: int, rng) -> int:
    """Host send/recv ops of the DCN collectives, interleaved with compute (as XLA schedules
    them): all sends and recvs first, some compute, then the done ops in order."""
    starts = []
    for _rdv, _tt, k, _n in DCN:
        if step == 0 and k == 10:
            continue  # capture began after this collective's send: only its done ops exist
        for op in ("send", "recv"):
            d = int((4 + rng.random() * 3) * US)
            ops.append(Op(f"{op}.{k}", f"host {op}", cur, d, bytes_accessed=_nbytes(k)))
            cur += d + US
        starts.append(k)
    d = int(180 * US)
    ops.append(Op("fusion.30", "loop fusion", cur, d, flops=10_000_000, bytes_accessed=40 << 20))
    cur += d + US
    for _rdv, _tt, k, _n in DCN:
        stall = {10: 420, 11: 150, 12: 60, 13: 95}[k] * (1 + rng.normal(0, 0.15))
        send_done = 3 + rng.random() * 4
        if spec.dcn_stalls and k in spec.dcn_stalls:  # drawn above all the same: the others stay as they were
            send_done, stall = spec.dcn_stalls[k]
        for op, dus in (("send-done", send_done), ("recv-done", stall)):
            d = int(dus * US)
            ops.append(Op(f"{op}.{k}", f"host {op}", cur, d, bytes_accessed=_nbytes(k)))
            cur += d + US
        # Compute overlapping the later collectives gives each its own slack.
        d = int({10: 90, 11: 35, 12: 140, 13: 20}[k] * (1 + rng.normal(0, 0.1)) * US)
        ops.append(Op(f"fusion.{30 + k}", "output fusion", cur, d, flops=50_000_000, bytes_accessed=20 << 20))
        cur += d + US
    return cur


def _nbytes(k: int) -> int:
    return next(n for _r, _t, kk, n in DCN if kk == k) * 4


def hlo_module_proto(spec: PodSpec) -> bytes:
    """xla.HloProto{hlo_module} for the step program, parsed from HLO text by XLA itself."""
    from jax._src.lib import xla_client as xc

    lines = ["  p0 = f32[1024]{0} parameter(0)", "  after-all.1 = token[] after-all()",
             "  c0 = f32[] constant(0)"]
    root = "p0"
    if spec.slices > 1:
        for rdv, tt, k, n in DCN:
            attrs = f'frontend_attributes={{_xla_host_transfer_rendezvous="{rdv}",_xla_megascale_transfer_type="{tt}"}}'
            shp = f"f32[{n}]{{0}}"
            lines += [
                f"  b{k} = {shp} broadcast(c0), dimensions={{}}",
                f"  send.{k} = ({shp}, u32[], token[]) send(b{k}, after-all.1), channel_id={2 * k}, "
                f"is_host_transfer=true, {attrs}",
                f"  send-done.{k} = token[] send-done(send.{k}), channel_id={2 * k}, is_host_transfer=true, {attrs}",
                f"  recv.{k} = ({shp}, u32[], token[]) recv(after-all.1), channel_id={2 * k + 1}, is_host_transfer=true, {attrs}",
                f"  recv-done.{k} = ({shp}, token[]) recv-done(recv.{k}), channel_id={2 * k + 1}, is_host_transfer=true, {attrs}",
            ]
    lines += list(spec.extra_hlo)
    text = (f"HloModule {MODULE}, entry_computation_layout={{(f32[1024]{{0}})->f32[1024]{{0}}}}\n\n"
            "ENTRY main.1 {\n" + "\n".join(lines) + f"\n  ROOT copy.99 = f32[1024]{{0}} copy({root})\n}}\n")
    module = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    return _field(1, module)


def build_host(spec: PodSpec, h: int, sim: dict, hlo: bytes) -> xplane_pb2.XSpace:
    host = spec.host_name(h)
    xs = xplane_pb2.XSpace()
    xs.hostnames.append(host)
    skip_steps = set(spec.missing_host_steps.get(h, ()))
    last_end = 0
    for c in range(spec.cores_per_host):
        p = xs.planes.add()
        p.id, p.name = c, f"/device:TPU:{c}"
        pb = PlaneBuilder(p)
        chip, core_num = divmod(c, spec.cores_per_chip)
        gchip = spec.global_chip(h, chip)
        pb.add_stats(p, {
            "core_details": core_details(host, c, core_num, chip, gchip, gchip * spec.cores_per_chip + core_num),
            "device_type_string": spec.device_type,
            "peak_teraflops_per_second": spec.peak_tflops,
            "peak_hbm_bw_gigabytes_per_second": spec.peak_hbm_gbps,
            "peak_sram_rd_bw_gigabytes_per_second": 20000.0, "peak_sram_wr_bw_gigabytes_per_second": 15000.0,
            "peak_cmem_rd_bw_gigabytes_per_second": 0.0, "peak_cmem_wr_bw_gigabytes_per_second": 0.0,
            "peak_vmem_rd_bw_gigabytes_per_second": 20000.0, "peak_vmem_wr_bw_gigabytes_per_second": 15000.0,
            "has_megacore": 0, "has_merged_vmem": 1,
        })
        steps_line, modules_line, ops_line = pb.line(1, "Steps"), pb.line(2, "XLA Modules"), pb.line(3, "XLA Ops")
        no_marker = set(spec.missing_markers.get((h, c), ()))
        symbols: dict[str, int] = {}
        for step, (s0, s1, ops) in enumerate(sim[(h, c)]):
            if step in skip_steps:
                continue
            # No group_id: like real captures, XProf groups device events itself, through the
            # module's consumer link (_ct/_c) to the host launch inside the `train` step.
            gid = {}
            dev = lambda a, d: {"device_offset_ps": ("u", a + DEVICE_CLOCK_SKEW_PS), "device_duration_ps": ("u", d)}  # noqa: E731
            if step not in no_marker:
                pb.event(steps_line, pb.metadata(str(step)), s0, s1 - s0, {**dev(s0, s1 - s0), **gid})
            m0, m1 = ops[0].start - US, ops[-1].start + ops[-1].dur + US
            pb.event(modules_line, pb.metadata(f"{MODULE}({PROGRAM_ID})"), m0, m1 - m0,
                     {"run_id": ("u", run_id(step) & RUN_ID_MASK), "queue_id": ("u", 0), "core_type": ("u", 0)})
            for op in ops:
                for o in [op, *op.children]:
                    sym = symbols.setdefault(o.name, len(symbols) + 1)
                    md_stats = {"hlo_category": o.category, "program_id": ("u", PROGRAM_ID), "symbol_id": sym,
                                "flops": o.flops, "model_flops": o.flops, "bytes_accessed": o.bytes_accessed,
                                "shape_with_layout": "f32[1024]{0:T(1024)}",
                                "tf_op": f"jit(train_step)/jit(main)/{o.category.replace(' ', '_')}"}
                    if o.name.startswith("send.") and o.category == "host send":
                        rdv = next(d for d in DCN if d[2] == int(o.name.split(".")[1]))
                        md_stats["dcn_collective_info"] = dcn_collective_info(rdv[1], spec.slices, c)
                    hlo_text = f"%{o.name} = f32[1024]{{0:T(1024)}} {o.name.split('.')[0]}(f32[1024]{{0}} %p0)"
                    mid = pb.metadata(hlo_text, o.name, md_stats)
                    pb.event(ops_line, mid, o.start, o.dur, {**dev(o.start, o.dur), **gid, **o.stats})
            last_end = max(last_end, s1)
        # XLA Ops must be time-ordered, parents before their children.
        evs = sorted(ops_line.events, key=lambda e: (e.offset_ps, -e.duration_ps))
        del ops_line.events[:]
        ops_line.events.extend(evs)
    _host_planes(xs, spec, h, sim, hlo, skip_steps, last_end)
    return xs


def _host_planes(xs, spec: PodSpec, h: int, sim: dict, hlo: bytes, skip_steps: set, last_end: int) -> None:
    md = xs.planes.add()
    md.name = "/host:metadata"
    mb = PlaneBuilder(md)
    mb.metadata(f"{MODULE}({PROGRAM_ID})", f"{MODULE}({PROGRAM_ID})",
                {"Hlo Proto": hlo, "program_id": ("u", PROGRAM_ID)})
    cpu = xs.planes.add()
    cpu.name = "/host:CPU"
    cb = PlaneBuilder(cpu)
    py = cb.line(4242, "python")
    queue = cb.line(4343, "tfrt-non-blocking-queue")
    for step, (s0, s1, _ops) in enumerate(sim[(h, 0)]):
        if step in skip_steps:
            continue
        cb.event(py, cb.metadata("train"), s0 - 30 * US, s1 - s0 + 20 * US, {"step_num": step, "_r": 1})
        # JAX on TPU: the step's Execute (context 5) hands the program to a queue thread
        # whose DoEnqueueProgram (context 12) launches the XLA module on every core.
        cb.event(py, cb.metadata("PjitFunction(train_step)"), s0 - 25 * US, 20 * US)
        cb.event(py, cb.metadata("TfrtTpuLoadedExecutable::Execute"), s0 - 22 * US, 14 * US,
                 {"_pt": EXECUTE_CONTEXT, "_p": launch_id(h, step)})
        for c in range(spec.cores_per_host):  # one launch per core; XProf links it to the
            # core's XLA Modules event by (device_ordinal, queue_id, run_id, core_type)
            cb.event(queue, cb.metadata("DoEnqueueProgram"), s0 - 12 * US + c * US, US // 2,
                     {"_ct": EXECUTE_CONTEXT, "_c": launch_id(h, step), "device_ordinal": ("u", c),
                      "queue_id": ("u", 0), "run_id": ("u", run_id(step))})
    if spec.slices > 1:
        ms = cb.line(5151, "megascale_transport")
        for step, (_s0, _s1, ops) in enumerate(sim[(h, 0)]):
            if step in skip_steps:
                continue
            for op in ops:
                if op.category not in ("host send", "host recv-done"):
                    continue
                k = int(op.name.split(".")[1])
                rdv = next(d for d in DCN if d[2] == k)
                name = ("MegaScale: Communication Transport Send" if op.category == "host send"
                        else "MegaScale: Communication Transport Receive")
                src = h // spec.hosts_per_slice
                cb.event(ms, cb.metadata(name), op.start + 2 * US, max(op.dur, 10 * US), {
                    "dcn_label": rdv[0], "dcn_source_slice_id": src,
                    "dcn_source_per_slice_device_id": 0,
                    "dcn_destination_slice_id": (src + 1) % spec.slices,
                    "dcn_destination_per_slice_device_id": 0, "dcn_chunk": 0, "dcn_loop_index": step,
                    "payload_size_bytes": _nbytes(k)})
    env = xs.planes.add()
    env.name = "Task Environment"
    eb = PlaneBuilder(env)
    eb.add_stats(env, {"profile_start_time": ("u", PROFILE_START_NS),
                       "profile_stop_time": ("u", PROFILE_START_NS + T0_NS + last_end // 1000 + 100_000)})


def build_run(spec: PodSpec, run_dir: pathlib.Path) -> list[pathlib.Path]:
    """Write one .xplane.pb per host of the pod into run_dir; returns the paths."""
    run_dir.mkdir(parents=True, exist_ok=True)
    sim = simulate(spec)
    hlo = hlo_module_proto(spec)
    paths = []
    for h in range(spec.hosts):
        path = run_dir / f"{spec.host_name(h)}.xplane.pb"
        path.write_bytes(build_host(spec, h, sim, hlo).SerializeToString())
        paths.append(path)
    return paths


FIXTURES = [
    PodSpec("pod_v5e_single", "TPU v5 lite", hosts_per_slice=1, chips_per_host=4, cores_per_chip=1,
            steps=6, seed=1, host_prefix="v5e-w"),
    PodSpec("pod_v4_32", "TPU v4", hosts_per_slice=4, chips_per_host=4, cores_per_chip=2, steps=7, seed=2,
            host_prefix="v4-w", missing_host_steps={2: (0,)}, missing_markers={(0, 5): (6,)},
            peak_tflops=275.0, peak_hbm_gbps=1200.0),
    PodSpec("dcn_2slices", "TPU v5 lite", hosts_per_slice=1, chips_per_host=4, cores_per_chip=1, steps=5,
            slices=2, seed=3, host_prefix="ms"),
    # One collective (the all-gather) stalls in send-done while its recv-done is short: the
    # megascale guide's sign of a hardware or network problem (issue #31).
    PodSpec("dcn_hw_stall", "TPU v5 lite", hosts_per_slice=1, chips_per_host=2, cores_per_chip=1, steps=4,
            slices=2, seed=4, host_prefix="hw", dcn_stalls={11: (520, 12)}),
    # 90 small loop fusions (8-12 us, 4 KFLOP each) after the step's work: a long tail of low-FLOPS ops
    # taking about a quarter of the op time (the performance guide's check; issue #31).
    PodSpec("pod_long_tail", "TPU v5 lite", hosts_per_slice=1, chips_per_host=1, cores_per_chip=1, steps=4,
            seed=5, host_prefix="tail", small_ops=90),
    # A [33554432, 2] f32 buffer tiled T(8,128): 256 MiB of data padded to 16 GiB, a v5e chip's whole HBM
    # (the performance guide's padding check, at the size where it risks running out of memory; issue #31).
    PodSpec("pod_padding_oom", "TPU v5 lite", hosts_per_slice=1, chips_per_host=1, cores_per_chip=1, steps=2,
            seed=6, host_prefix="pad",
            extra_hlo=("  pad.1 = f32[33554432,2]{1,0:T(8,128)} iota(), iota_dimension=0",)),
    # The step's convolution.21 as the performance guide's padding example: batch 16 and 3 input features
    # (padded to 128 and 8 on the MXU, about 5% used), so the op profile's card can say so (issue #31).
    PodSpec("pod_conv_fit", "TPU v5 lite", hosts_per_slice=1, chips_per_host=1, cores_per_chip=1, steps=2,
            seed=7, host_prefix="conv",
            extra_hlo=("  x.21 = f32[16,32,32,3]{3,2,1,0} broadcast(c0), dimensions={}",
                       "  k.21 = f32[3,3,3,8]{3,2,1,0} broadcast(c0), dimensions={}",
                       "  convolution.21 = f32[16,32,32,8]{3,2,1,0} convolution(x.21, k.21), "
                       "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f")),
]


def run_oracle(logdir: pathlib.Path, tool: str, params: dict | None = None) -> bytes:
    cmd = [ORACLE_PY, str(ORACLE), str(logdir), tool]
    if params:
        cmd += ["--params", json.dumps(params)]
    return subprocess.run(cmd, check=True, capture_output=True, timeout=600).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "fixtures" / "pod"))
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--only", help="build one fixture by name")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    for spec in FIXTURES:
        if a.only and spec.name != a.only:
            continue
        base = out / spec.name
        shutil.rmtree(base, ignore_errors=True)
        paths = build_run(spec, base / "plugins" / "profile" / RUN)
        sizes = [p.stat().st_size for p in paths]
        print(f"{spec.name}: {len(paths)} hosts, {sum(sizes)} bytes (max {max(sizes)})")
        if a.no_oracle:
            continue
        od = base / "oracle"
        od.mkdir(parents=True, exist_ok=True)
        index = {"tool": "xprof 2.24.2 via shared/tools/oracle.py", "outputs": {}}
        for tool in ("pod_viewer", "overview_page") + (("hlo_stats", "op_profile") if spec.small_ops else ()):
            (od / f"{tool}.json").write_bytes(run_oracle(base, tool))
            index["outputs"][tool] = f"{tool}.json"
        if spec.slices > 1:
            for h in range(spec.hosts):
                host = spec.host_name(h)
                f = f"megascale_stats.{host}.json"
                (od / f).write_bytes(run_oracle(base, "megascale_stats", {"host": host}))
                index["outputs"][f"megascale_stats:{host}"] = f
        (od / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
