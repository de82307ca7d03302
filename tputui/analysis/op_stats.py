"""The per-host intermediate every op-based tool reads (XProf's OpStats), and how hosts combine.

    map_host(frame, host) -> HostOpStats      the *map*: one host's decoded frame, walked once
    combine(hosts)        -> OpStats          the *reduce* the overview and input pipeline read

A HostOpStats holds everything the op-based tools need from one host: the host and device op-metrics
databases, the step databases (the host's own steps and XProf's per-core step database), per-core
all-reduce spans, XProf's step groups (event_grouping.HostGrouping, which the trace viewer reads
too), device-op extras for the op profile / HLO stats / roofline, GPU kernels, send /
recv events for the pod viewer's channels, hardware caps, run environment and diagnostics. It is
small (tables of ops and steps, not events), so it is cached on disk and sent between processes
(tputui/analysis/host_map.py); the frame is not needed again once it exists.

Every tool is a reduce over the hosts' HostOpStats: overview and input pipeline through `combine`,
framework op stats / op profile / HLO stats / roofline through the device ops
(`hlo_ops.combine_device_ops`), the pod viewer through the step databases, kernel stats through
the kernel tables. No tool recomputes from the frame.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.analysis import group_extract, hlo_modules, hlo_ops, steps, tool_facts, tpu_steps
from tputui.analysis import op_metrics as om
from tputui.analysis.barrier_cores import (
    DEBUG_PRINT,
    SPECIAL_OP,
    HostFractions,
    PlaneFractions,
    fractions_of,
    plane_fractions,
    special_op_fractions,
)
from tputui.analysis.batch_size import BatchSize, host_batch_size
from tputui.analysis.event_grouping import HostGrouping, LaunchKey, host_grouping
from tputui.analysis.event_groups import LOOP_OPS
from tputui.analysis.gpu_kernels import frame_kernels
from tputui.analysis.op_metrics import OpMetricsDb
from tputui.analysis.steps import StepDb
from tputui.analysis.tf_input import TfInputFacts, host_tf_input
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
    grouping: HostGrouping = field(default_factory=HostGrouping.empty)  # XProf's step groups (trace viewer too)
    # Which frame-only tools have data here (tool_facts: memory events, MegaScale, counters, ...),
    # so the tool picker answers from the op stats without decoding the host again.
    tool_facts: frozenset[str] = frozenset()
    batch_size: BatchSize | None = None  # recorded by the profile, else derived from the step program
    tf_input: TfInputFacts | None = None  # tf.data iterator calls against the steps, Python in the pipelines


# --- the map ---------------------------------------------------------------------------------
def map_host(frame: XSpaceFrame, host: str) -> HostOpStats:
    """Walk one host's frame once into its HostOpStats."""
    if om.tensor_core_planes(frame):
        hp = host_part(frame)
        return assemble_tpu_host(host, hp, [device_part(frame, hp.launches)])
    hostname = frame.hostnames[0] if frame.hostnames else "localhost"
    gpu = om.gpu_planes(frame)
    device_type, hardware = ("GPU", "GPU") if gpu else ("CPU", "CPU_ONLY")
    mxu, hbm, has_host = _host_plane_utilization(frame)
    device_db = om.device_op_metrics(frame) if gpu else None
    host_steps, step_db = steps.host_step_dbs(frame, host, hostname)
    modules = hlo_modules.frame_modules(frame, host)
    return HostOpStats(
        host=host, hostname=hostname, errors=list(frame.errors), warnings=list(frame.warnings),
        hardware=hardware, device_type=device_type, core_count=len(gpu),
        peak_teraflops=0.0, peak_hbm_gbps=0.0, mxu_utilization_percent=mxu, hbm_utilization_percent=hbm,
        has_tpu_planes=False, has_host_plane=has_host, perf=hlo_ops.perf_env([frame]), is_training=is_training(frame),
        host_db=om.host_op_metrics(frame), device_db=device_db, steps=host_steps, step_db=step_db,
        all_reduce={}, device_ops=None, kernels=frame_kernels(frame) if gpu else None,
        send_recv=pl.DataFrame(schema=SEND_RECV_SCHEMA), barrier_cores=special_op_fractions(frame, host),
        hlo_module_names=tuple(m.name for m in modules),
        grouping=host_grouping(frame), tool_facts=tool_facts.frame_facts(frame),
        batch_size=host_batch_size(frame, modules), tf_input=host_tf_input(frame, host_grouping(frame)),
    )


def _host_plane_utilization(frame: XSpaceFrame) -> tuple[float, float, bool]:
    """(MXU %, HBM %, has a host plane) from the `/host:CPU` plane's stats."""
    hp = frame.plane_index(schema.HOST_PLANE)
    if hp is None:
        return 0.0, 0.0, False
    ps = frame.plane_stat_map(hp)
    return stat_float(ps, "matrix_unit_utilization_percent"), stat_float(ps, "hbm_utilization_percent"), True


# A TPU host is mapped in two kinds of parts, so that a giant one can be read in pieces
# (analysis/host_pieces.py) and still give what one reading of the whole host gives:
# - the HostPart, from every plane but the TensorCores (host threads, /host:metadata, ...), which is
#   also the host's first pass: the launch groups every TensorCore needs for its steps;
# - a DevicePart per piece of TensorCores (whole chips), each core's share kept apart and tagged with
#   the plane's place in the host file, so assembly combines them in plane order as XProf does.
@dataclass
class HostPart:
    """What a TPU host's op stats take from its planes other than the TensorCores."""

    hostname: str
    errors: list[str]
    warnings: list[str]
    mxu: float
    hbm: float
    has_host_plane: bool
    is_training: bool
    host_db: OpMetricsDb
    grouping: HostGrouping  # the host's first pass: XProf's step groups and its launches' groups
    groups_loop_ops: bool  # the host plane has TF loop ops, which stop XProf's grouping
    may_group: bool  # the host plane's metadata names a root: its threads' events may form groups
    hlo_module_names: tuple[str, ...]
    program_names: list[tuple[int, list[tuple[int, str, bool]]]]  # (plane index, entries) of /host:metadata
    protos: dict[int, bytes]  # program id -> HloProto, for fusions whose metadata has no children
    tool_facts: frozenset[str] = frozenset()  # of the planes this part was read from
    batch_size: BatchSize | None = None
    tf_input: TfInputFacts | None = None

    @property
    def launches(self) -> dict[LaunchKey, int]:
        return self.grouping.launch_map()


@dataclass
class CorePart:
    """One TensorCore's share of its host's op stats."""

    index: int  # the plane's place in the host file: parts combine in this order
    plane_id: int
    db: OpMetricsDb
    steps: tpu_steps.CoreSteps
    all_reduce: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    send_recv: list[tuple]
    extras: list[dict]
    fused: dict[str, list[hlo_ops.FusedChild]]
    program_names: list[tuple[int, str, bool]]
    special: PlaneFractions
    debug_print: PlaneFractions


@dataclass
class DevicePart:
    """The TensorCores of a piece of a TPU host (whole chips: duty cycles are per chip)."""

    cores: list[CorePart]
    busy_ps: int
    idle_ps: int
    first_plane_stats: dict | None  # device type and peaks: XProf takes them from the first core
    loop_ops: bool  # a TF loop op name among its metadata (the host's grouping would have stopped)
    tool_facts: frozenset[str] = frozenset()


def host_part(frame: XSpaceFrame, index: list[int] | None = None) -> HostPart:
    """The HostPart of a TPU host from a frame holding (at least) its non-TensorCore planes;
    `index`: each frame plane's place in the host file (default: the frame is the whole file)."""
    index = index if index is not None else list(range(len(frame.raw.plane_name)))
    mxu, hbm, has_host = _host_plane_utilization(frame)
    meta = frame.plane_index(schema.METADATA_PLANE)
    modules = hlo_modules.frame_modules(frame, "")
    grouping = host_grouping(frame)
    return HostPart(
        hostname=frame.hostnames[0] if frame.hostnames else "localhost",
        errors=list(frame.errors), warnings=list(frame.warnings), mxu=mxu, hbm=hbm, has_host_plane=has_host,
        is_training=is_training(frame), host_db=om.host_op_metrics(frame), grouping=grouping,
        groups_loop_ops=has_loop_ops(frame), may_group=group_extract.may_group(frame),
        hlo_module_names=tuple(m.name for m in modules),
        program_names=[(index[meta], hlo_ops.plane_program_names(frame, meta))] if meta is not None else [],
        protos=hlo_ops.hlo_protos([frame]),
        tool_facts=tool_facts.frame_facts(frame), batch_size=host_batch_size(frame, modules),
        tf_input=host_tf_input(frame, grouping),
    )


def device_part(frame: XSpaceFrame, launches: dict, index: list[int] | None = None) -> DevicePart:
    """The DevicePart of the TensorCore planes in `frame` (whole chips), given the host's launch
    groups; `index` as for host_part."""
    index = index if index is not None else list(range(len(frame.raw.plane_name)))
    hostname = frame.hostnames[0] if frame.hostnames else "localhost"
    planes = om.tensor_core_planes(frame)
    reduces = all_reduce_events(frame)
    cores = []
    for p in planes:
        extras, fused = hlo_ops.plane_extras(frame, p, index[p])
        cores.append(CorePart(
            index=index[p], plane_id=int(frame.raw.plane_id[p]), db=om.device_plane_op_metrics(frame, p),
            steps=tpu_steps.core_steps(frame, p, launches, hostname),
            all_reduce=reduces.get(int(frame.raw.plane_id[p])), send_recv=_plane_send_recv(frame, p),
            extras=extras, fused=fused, program_names=hlo_ops.plane_program_names(frame, p),
            special=plane_fractions(frame, p, SPECIAL_OP), debug_print=plane_fractions(frame, p, DEBUG_PRINT),
        ))
    busy, idle = om.duty_cycle(frame, planes)
    return DevicePart(cores=cores, busy_ps=busy, idle_ps=idle,
                      first_plane_stats=frame.plane_stat_map(planes[0]) if planes else None,
                      loop_ops=has_loop_ops(frame), tool_facts=tool_facts.frame_facts(frame))


def has_loop_ops(frame: XSpaceFrame) -> bool:
    return any(nm in LOOP_OPS for nm in frame.raw.em_name)


@dataclass
class ThreadsPart:
    """Some `/host:CPU` threads' share of a TPU host's HostPart (a giant host's host plane is read
    in pieces of threads): their framework ops and their events that grouping needs."""

    ops: om.HostThreadOps | None
    groups: group_extract.GroupExtract


def threads_part(frame: XSpaceFrame, grouping: bool = True) -> ThreadsPart:
    """`grouping`: extract the events grouping needs (not when the host can have no group)."""
    extract = group_extract.extract(frame) if grouping else group_extract.GroupExtract.empty()
    extract.loop_ops = extract.loop_ops or has_loop_ops(frame)
    return ThreadsPart(om.host_thread_ops(frame), extract)


def host_part_of(meta: HostPart, threads: list[ThreadsPart]) -> HostPart:
    """The HostPart of a host whose `/host:CPU` threads were read in pieces (in thread order) apart
    from its other planes and the host plane's own fields (`meta`)."""
    loop = meta.groups_loop_ops or any(t.groups.loop_ops for t in threads)
    return dataclasses.replace(
        meta, host_db=om.host_op_metrics_of([t.ops for t in threads]), groups_loop_ops=loop,
        grouping=HostGrouping.empty(enabled=False) if loop else group_extract.grouping_of([t.groups for t in threads]))


class PiecesDisagree(Exception):
    """A host read in pieces cannot be assembled exactly (read it whole instead)."""


def assemble_tpu_host(host: str, hp: HostPart, parts: list[DevicePart]) -> HostOpStats:
    """A TPU host's op stats from its HostPart and DevicePart(s): the same whether the parts came
    from one frame of the whole host or from pieces of it."""
    if any(d.loop_ops for d in parts) and not hp.groups_loop_ops and hp.launches:
        raise PiecesDisagree("a TensorCore plane names a TF loop op: XProf's grouping stops")
    cores = sorted((c for d in parts for c in d.cores), key=lambda c: c.index)
    first = next(d.first_plane_stats for d in sorted(parts, key=lambda d: min((c.index for c in d.cores), default=1 << 30))
                 if d.first_plane_stats is not None)
    device_type = str(first.get(schema.STAT_DEVICE_TYPE_STRING) or "TPU")
    device_db = om.combine([c.db for c in cores])
    device_db.busy_time_ps = sum(d.busy_ps for d in parts)
    device_db.idle_duty_ps = sum(d.idle_ps for d in parts)
    step_db = tpu_steps.combine_core_steps(host, str(first.get("device_type_string", "") or ""), [c.steps for c in cores])
    extras = [r for c in cores for r in c.extras]
    fused = {k: v for c in cores for k, v in c.fused.items()}
    names = sorted(hp.program_names + [(c.index, c.program_names) for c in cores], key=lambda x: x[0])
    device_ops = hlo_ops.assemble_device_ops(device_db, extras, fused, [e for _, es in names for e in es],
                                             lambda: hp.protos)
    send_recv = [r for c in cores for r in c.send_recv]
    return HostOpStats(
        host=host, hostname=hp.hostname, errors=hp.errors, warnings=hp.warnings,
        hardware="TPU", device_type=device_type, core_count=len(cores),
        peak_teraflops=stat_float(first, schema.STAT_PEAK_TFLOPS), peak_hbm_gbps=stat_float(first, schema.STAT_PEAK_HBM_BW),
        mxu_utilization_percent=hp.mxu, hbm_utilization_percent=hp.hbm, has_tpu_planes=True,
        has_host_plane=hp.has_host_plane, perf=hlo_ops.perf_env_of(len(cores), first), is_training=hp.is_training,
        host_db=hp.host_db, device_db=device_db, steps=steps.device_steps_of(step_db, host), step_db=step_db,
        all_reduce={c.plane_id: c.all_reduce for c in cores if c.all_reduce is not None},
        device_ops=device_ops, kernels=None,
        send_recv=pl.DataFrame(send_recv, schema=SEND_RECV_SCHEMA, orient="row"),
        barrier_cores=fractions_of(host, [c.special for c in cores], [c.debug_print for c in cores]),
        hlo_module_names=hp.hlo_module_names, grouping=hp.grouping,
        tool_facts=hp.tool_facts.union(*(d.tool_facts for d in parts)), batch_size=hp.batch_size,
        tf_input=hp.tf_input,
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
    rows = [r for p in om.tensor_core_planes(frame) for r in _plane_send_recv(frame, p)]
    return pl.DataFrame(rows, schema=SEND_RECV_SCHEMA, orient="row")


def _plane_send_recv(frame: XSpaceFrame, p: int) -> list[tuple]:
    rows: list[tuple] = []
    ops = line_rows(frame, p, schema.LINE_XLA_OPS)
    if not len(ops):
        return rows
    md = frame.events["metadata"].to_numpy()[ops].astype(np.int64)
    mt = om.metadata_stats_table(frame, [schema.STAT_HLO_CATEGORY, schema.STAT_BYTES_ACCESSED], md)
    cat_ids = mt["hlo_category.text"]
    wanted = [t for t in np.unique(cat_ids).tolist() if frame.text(t) in ("send", "recv-done")]
    sel = np.isin(cat_ids, wanted)  # per category text, not a string per op
    if not sel.any():
        return rows
    s, e = om.device_spans(frame, ops[sel])
    names = frame.metadata_names(md[sel], display=True).to_list()
    cats = [frame.text(t) for t in cat_ids[sel].tolist()]
    for nm, cat, a, b, by in zip(names, cats, s, e, mt["bytes_accessed"][sel]):
        m = _SEND_RECV_SUFFIX.match(nm)
        if m:
            rows.append((m.group(2) or "", cat, int(frame.raw.plane_id[p]), nm, int(a), int(b), int(by)))
    return rows


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
