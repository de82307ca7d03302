"""The per-host intermediate every op-based tool reads (XProf's OpStats), and how hosts combine.

    map_host(frame, host) -> HostOpStats      the *map*: one host's decoded frame, walked once
    combine(hosts)        -> OpStats          the *reduce* the overview and input pipeline read

A HostOpStats holds everything the op-based tools need from one host: the host and device op-metrics
databases, the step databases (the host's own steps and XProf's per-core step database), per-core
all-reduce spans, device-op extras for the op profile / HLO stats / roofline, GPU kernels, send /
recv events for the pod viewer's channels, hardware caps, run environment and diagnostics. It is
small (tables of ops and steps, not events), so it is cached on disk and sent between processes
(tputui/analysis/host_map.py); the frame is not needed again once it exists.

Every tool is a reduce over the hosts' HostOpStats: overview and input pipeline through `combine`,
framework op stats / op profile / HLO stats / roofline through the device ops
(`hlo_ops.combine_device_ops`), the pod viewer through the step databases, kernel stats through
the kernel tables. No tool recomputes from the frame.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.analysis import hlo_modules, hlo_ops, steps
from tputui.analysis import op_metrics as om
from tputui.analysis.barrier_cores import HostFractions, special_op_fractions
from tputui.analysis.gpu_kernels import frame_kernels
from tputui.analysis.op_metrics import OpMetricsDb
from tputui.analysis.steps import StepDb
from tputui.analysis.tpu_steps import HostSteps, line_rows
from tputui.data import schema
from tputui.data.stat_values import stat_float
from tputui.data.xspace import XSpaceFrame

_SEND_RECV_SUFFIX = re.compile(r"^(send|recv|send-done|recv-done)(\.\d+)?$")
SEND_RECV_SCHEMA = {"ch": pl.String, "cat": pl.String, "plane_id": pl.Int64, "name": pl.String,
                    "start": pl.Int64, "end": pl.Int64, "bytes": pl.Int64}


@dataclass
class HostOpStats:
    """One host's op stats (see module doc). Plain data: picklable, no frame references."""

    host: str
    hostname: str
    errors: list[str]
    warnings: list[str]
    hardware: str  # "TPU" | "GPU" | "CPU_ONLY"
    device_type: str  # "TPU v6 Lite", "GPU", "CPU"
    core_count: int  # TensorCores, or GPU planes
    peak_teraflops: float
    peak_hbm_gbps: float
    mxu_utilization_percent: float  # host plane stats, when the profiler recorded them
    hbm_utilization_percent: float
    has_tpu_planes: bool
    has_host_plane: bool
    perf: hlo_ops.PerfEnv  # peak figures of the TPU (defaults elsewhere)
    is_training: bool
    host_db: OpMetricsDb
    device_db: OpMetricsDb | None  # TPU TensorCores, or else GPU planes; None on CPU-only hosts
    steps: StepDb  # the steps XProf finds on this host alone
    step_db: HostSteps  # XProf's per-core step database (pod viewer, multi-host step intersection)
    all_reduce: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]  # plane id -> (start, end, unique id)
    device_ops: hlo_ops.HostDeviceOps | None  # TPU only
    kernels: pl.DataFrame | None  # GPU kernels (None: no GPU plane)
    send_recv: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SEND_RECV_SCHEMA))
    barrier_cores: HostFractions | None = None  # the smart-suggestion rule's per-core step shares
    hlo_module_names: tuple[str, ...] = ()  # the host's XLA programs (`<module>(<program id>)`)


# --- the map ---------------------------------------------------------------------------------
def map_host(frame: XSpaceFrame, host: str) -> HostOpStats:
    """Walk one host's frame once into its HostOpStats."""
    hostname = frame.hostnames[0] if frame.hostnames else "localhost"
    tpu = om.tensor_core_planes(frame)
    gpu = om.gpu_planes(frame)
    device_type, hardware, peak_tf, peak_bw = "CPU", "CPU_ONLY", 0.0, 0.0
    if tpu:
        st = frame.plane_stat_map(tpu[0])
        device_type, hardware = str(st.get(schema.STAT_DEVICE_TYPE_STRING) or "TPU"), "TPU"
        peak_tf = stat_float(st, schema.STAT_PEAK_TFLOPS)
        peak_bw = stat_float(st, schema.STAT_PEAK_HBM_BW)
    elif gpu:
        device_type, hardware = "GPU", "GPU"
    mxu = hbm = 0.0
    hp = frame.plane_index(schema.HOST_PLANE)
    if hp is not None:
        ps = frame.plane_stat_map(hp)
        mxu = stat_float(ps, "matrix_unit_utilization_percent")
        hbm = stat_float(ps, "hbm_utilization_percent")
    device_db = om.device_op_metrics(frame) if (tpu or gpu) else None
    host_steps, step_db = steps.host_step_dbs(frame, host, hostname)
    return HostOpStats(
        host=host, hostname=hostname, errors=list(frame.errors), warnings=list(frame.warnings),
        hardware=hardware, device_type=device_type, core_count=len(tpu) or len(gpu),
        peak_teraflops=peak_tf, peak_hbm_gbps=peak_bw, mxu_utilization_percent=mxu, hbm_utilization_percent=hbm,
        has_tpu_planes=bool(tpu), has_host_plane=hp is not None, perf=hlo_ops.perf_env([frame]), is_training=is_training(frame),
        host_db=om.host_op_metrics(frame), device_db=device_db, steps=host_steps, step_db=step_db,
        all_reduce=all_reduce_events(frame) if tpu else {},
        device_ops=hlo_ops.host_device_ops(frame, device_db) if tpu and device_db is not None else None,
        kernels=frame_kernels(frame) if gpu else None,
        send_recv=send_recv_events(frame) if tpu else pl.DataFrame(schema=SEND_RECV_SCHEMA),
        barrier_cores=special_op_fractions(frame, host),
        hlo_module_names=tuple(m.name for m in hlo_modules.frame_modules(frame, host)),
    )


def is_training(frame: XSpaceFrame) -> bool:
    """XProf's ModelTracker: training when an HLO op name has a `transpose(` name scope (JAX
    gradients) or a `gradients` / `gradient_tape` scope (TF)."""
    if frame.plane_index(schema.METADATA_PLANE) is None:
        return False
    from tputui.proto import hlo_pb2  # the generated module is slow to import; most runs never need it

    owners = frame.stat_values("metadata", schema.STAT_HLO_PROTO)["owner"].to_list()
    for owner in owners:
        data = frame.metadata_stat_map(int(owner)).get(schema.STAT_HLO_PROTO)
        if not isinstance(data, (bytes, bytearray)):
            continue
        if b"transpose(" not in data and b"gradient" not in data:
            continue
        proto = hlo_pb2.HloProto()
        try:
            proto.ParseFromString(data)
        except Exception:  # noqa: BLE001,S112 (a broken proto only loses this hint)
            continue
        for comp in proto.hlo_module.computations:
            for ins in comp.instructions:
                name = ins.metadata.op_name
                if not name:
                    continue
                scopes = name.split("/")
                if any(sc.startswith("transpose(") for sc in scopes):
                    return True
                if any(sc == "gradient_tape" or (sc.startswith("gradients")) for sc in scopes[:-1]):
                    return True
    return False


def all_reduce_events(frame: XSpaceFrame) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per TensorCore (plane id): device (start, end) and unique id of its all-reduce ops."""
    out = {}
    for p in om.tensor_core_planes(frame):
        rows = line_rows(frame, p, schema.LINE_XLA_OPS)
        if not len(rows):
            continue
        has, uid = om.event_stat(frame, "all_reduce_unique_id", rows)
        if has.any():
            s, e = om.device_spans(frame, rows[has])
            out[int(frame.raw.plane_id[p])] = (s, e, uid[has])
    return out


def send_recv_events(frame: XSpaceFrame) -> pl.DataFrame:
    """Send and recv-done ops of every TensorCore, by HLO op suffix (send.4 / recv-done.4): what the
    pod viewer pairs into channels."""
    rows = []
    raw = frame.raw
    for p in om.tensor_core_planes(frame):
        ops = line_rows(frame, p, schema.LINE_XLA_OPS)
        if not len(ops):
            continue
        md = frame.events["metadata"].to_numpy()[ops].astype(np.int64)
        mt = om.metadata_stats_table(frame, [schema.STAT_HLO_CATEGORY, schema.STAT_BYTES_ACCESSED], md)
        cat_ids = mt["hlo_category.text"]
        wanted = [t for t in np.unique(cat_ids).tolist() if frame.text(t) in ("send", "recv-done")]
        sel = np.isin(cat_ids, wanted)  # per category text, not a string per op
        if not sel.any():
            continue
        s, e = om.device_spans(frame, ops[sel])
        names = frame.metadata_names(md[sel], display=True).to_list()
        cats = [frame.text(t) for t in cat_ids[sel].tolist()]
        for nm, cat, a, b, by in zip(names, cats, s, e, mt["bytes_accessed"][sel]):
            m = _SEND_RECV_SUFFIX.match(nm)
            if m:
                rows.append((m.group(2) or "", cat, int(raw.plane_id[p]), nm, int(a), int(b), int(by)))
    return pl.DataFrame(rows, schema=SEND_RECV_SCHEMA, orient="row")


# --- the reduce --------------------------------------------------------------------------------
@dataclass
class OpStats:
    """The hosts' op stats combined (one host, or XProf's ALL_HOSTS)."""

    hosts: list[str]
    hardware_type: str  # "TPU" | "GPU" | "CPU_ONLY"
    device_type: str
    device_core_count: int
    steps: StepDb
    host_db: OpMetricsDb
    device_db: OpMetricsDb
    is_training: bool
    per_host: list[HostOpStats]
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    peak_teraflops: float = 0.0
    peak_hbm_gbps: float = 0.0
    mxu_utilization_percent: float = 0.0
    hbm_utilization_percent: float = 0.0


def combine(hosts: list[HostOpStats]) -> OpStats:
    """XProf's OpStats combiner over the hosts (in host order): op databases added, steps
    intersected, the last device host names the device, MXU utilization averaged over hosts."""
    errors: list[str] = []
    warnings: list[str] = []
    device_type, hardware, cores = "CPU", "CPU_ONLY", 0
    peak_tf = peak_bw = mxu = hbm = 0.0
    for h in hosts:
        errors += [e for e in h.errors if e not in errors]
        warnings += [w for w in h.warnings if w not in warnings]
        if h.hardware != "CPU_ONLY":
            device_type, hardware = h.device_type, h.hardware
            cores += h.core_count
        if h.hardware == "TPU":
            peak_tf, peak_bw = h.peak_teraflops, h.peak_hbm_gbps
        mxu += h.mxu_utilization_percent
        hbm = max(hbm, h.hbm_utilization_percent)
    return OpStats(
        hosts=[h.host for h in hosts], hardware_type=hardware, device_type=device_type, device_core_count=cores,
        steps=steps.combine_hosts_steps(hosts),
        host_db=om.combine([h.host_db for h in hosts], update_num_cores=False),
        device_db=om.combine([h.device_db for h in hosts if h.device_db is not None]),
        is_training=any(h.is_training for h in hosts), per_host=list(hosts), errors=errors, warnings=warnings,
        peak_teraflops=peak_tf, peak_hbm_gbps=peak_bw, mxu_utilization_percent=mxu / len(hosts) if hosts else 0.0,
        hbm_utilization_percent=hbm,
    )
