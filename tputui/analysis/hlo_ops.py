"""Per-HLO-op device metrics for op_profile, hlo_stats and roofline_model.

Builds on op_metrics' device database (XProf's `device_op_metrics_db`: ops keyed by program and
symbol, self time from nesting on device time, IDLE) and adds what those tools need beyond it,
read from the TPU planes' event metadata and the HLO protos:
- memory traffic by space and direction from `memory_access_breakdown` (per execution, so
  multiplied by occurrences like flops): HBM read / write, on-chip, CMEM and VMEM;
- source (`source`, `source_stack`) and `shape_with_layout` for the details card;
- the ops fused into each fusion (event-metadata children, else the fusion's computation in the
  `/host:metadata` HLO proto), the op profile's last level;
- the device's peaks (PerfEnv) from the device plane stats, and program names.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.analysis import op_metrics
from tputui.analysis.result import NoDataError
from tputui.data import pbwire, schema
from tputui.data.stat_values import stat_float, to_int
from tputui.data.xspace import XSpaceFrame

DEVICE_PLANE = re.compile(r"^/device:TPU:\d+$")
MODULE_NAME = re.compile(r"^(.*)\((\d+)\)$")  # XProf's program names: "<module>(<program id>)"
OP_LINES = (schema.LINE_XLA_OPS, schema.LINE_FRAMEWORK_OPS, schema.LINE_TF_OPS)
IDLE = "IDLE"

# XProf's MemBwType order for peak bandwidths: HBM, SRAM rd, SRAM wr, CMEM rd, CMEM wr, VMEM rd, VMEM wr.
_PEAK_BW_STATS = (
    "peak_hbm_bw_gigabytes_per_second",
    "peak_sram_rd_bw_gigabytes_per_second", "peak_sram_wr_bw_gigabytes_per_second",
    "peak_cmem_rd_bw_gigabytes_per_second", "peak_cmem_wr_bw_gigabytes_per_second",
    "peak_vmem_rd_bw_gigabytes_per_second", "peak_vmem_wr_bw_gigabytes_per_second",
)

# Summed memory-traffic columns, from `memory_access_breakdown`
# (operation type READ=1 / WRITE=2; memory space HBM=1, CMEM=2, VMEM=3, others on-chip).
MEM_COLUMNS = ("mem_hbm", "mem_hbm_rd", "mem_hbm_wr", "mem_chip_rd", "mem_chip_wr",
               "mem_cmem_rd", "mem_cmem_wr", "mem_vmem_rd", "mem_vmem_wr", "mem_entries")


@dataclass
class PerfEnv:
    """Peak figures of the device (from the device plane's stats)."""

    device_type: str = ""
    hardware: str = "CPU"  # TPU | GPU | CPU
    peak_tflops: float = 0.0
    peak_bws_gbps: list[float] = field(default_factory=lambda: [0.0] * 7)
    has_megacore: bool = False
    has_merged_vmem: bool = False
    has_cmem: bool = False
    core_count: int = 0

    def peak_bw_gbps(self, index: int) -> float:
        return self.peak_bws_gbps[index] if index < len(self.peak_bws_gbps) else self.peak_bws_gbps[0]


@dataclass
class FusedChild:
    """An HLO inside a fusion (event-metadata children), for the op profile's last level."""

    name: str
    long_name: str
    category: str
    provenance: str
    flops: int
    model_flops: int
    children: list[FusedChild] = field(default_factory=list)


@dataclass
class DeviceOps:
    """XProf's device op metrics db: one row per (program_id, name), IDLE last."""

    ops: pl.DataFrame
    total_time_ps: int
    total_op_time_ps: int
    perf: PerfEnv
    program_names: dict[int, str]
    fused: dict[str, list[FusedChild]]  # metadata_key -> fused children

    @property
    def idle_ps(self) -> int:
        return self.total_time_ps - self.total_op_time_ps

    def program_name(self, program_id: int) -> str:
        name = self.program_names.get(program_id)
        return f"{name}({program_id})" if name else "main"

    def total_time(self, exclude_idle: bool) -> int:
        return self.total_op_time_ps if exclude_idle else self.total_time_ps


def device_planes(fr: XSpaceFrame) -> list[int]:
    return [i for i, n in enumerate(fr.raw.plane_name) if DEVICE_PLANE.match(n)]


def has_device_ops(fr: XSpaceFrame) -> bool:
    lines = fr.lines
    planes = set(device_planes(fr))
    if not planes:
        return False
    sel = lines.filter(pl.col("plane").is_in(list(planes)) & pl.col("name").is_in(OP_LINES))
    return bool(sel.height and sel["num_events"].sum() > 0)


# --- reading ------------------------------------------------------------------------------
def perf_env(frames: list[XSpaceFrame]) -> PerfEnv:
    return combine_perf([perf_env_of(len(planes), fr.plane_stat_map(planes[0]) if planes else None)
                         for fr in frames for planes in [device_planes(fr)]])


def perf_env_of(core_count: int, first_plane_stats: dict | None) -> PerfEnv:
    """A host's PerfEnv from its device-plane count and its first device plane's stats."""
    env = PerfEnv()
    env.core_count = core_count
    if first_plane_stats is not None:
        st = first_plane_stats
        env.hardware = "TPU"
        env.device_type = str(st.get("device_type_string", "TPU"))
        env.peak_tflops = stat_float(st, "peak_teraflops_per_second")
        env.peak_bws_gbps = [stat_float(st, k) for k in _PEAK_BW_STATS]
        env.has_megacore = bool(st.get("has_megacore", 0))
        env.has_merged_vmem = bool(st.get("has_merged_vmem", 0))
        env.has_cmem = env.peak_bws_gbps[3] > 0 or env.peak_bws_gbps[4] > 0
    return env


def parse_memory_breakdown(blob: bytes) -> list[tuple[int, int, int]]:
    """`MemoryAccessBreakdown` bytes -> [(operation_type, memory_space, bytes)]."""
    out = []
    try:
        for number, wire, value in pbwire.fields(blob):
            if number == 1 and wire == 2:  # repeated MemoryAccessed (varint fields 1-3)
                f = pbwire.varint_fields(value)
                out.append((f.get(1, 0), f.get(2, 0), f.get(3, 0)))
    except pbwire.WireError:
        pass  # keep what was readable
    return out


def memory_sums(entries: list[tuple[int, int, int]]) -> dict[str, int]:
    s = dict.fromkeys(MEM_COLUMNS, 0)
    for op_type, space, nbytes in entries:
        if space == 1:
            s["mem_hbm"] += nbytes
            if op_type == 1:
                s["mem_hbm_rd"] += nbytes
            elif op_type == 2:
                s["mem_hbm_wr"] += nbytes
        else:
            if op_type == 1:
                s["mem_chip_rd"] += nbytes
            elif op_type == 2:
                s["mem_chip_wr"] += nbytes
            if space in (2, 3) and op_type in (1, 2):
                s[f"mem_{'cmem' if space == 2 else 'vmem'}_{'rd' if op_type == 1 else 'wr'}"] += nbytes
    s["mem_entries"] = len(entries)
    return s


_META_STATS = ("program_id", "symbol_id", "hlo_category", "tf_op", "flops", "model_flops",
               "bytes_accessed", "memory_access_breakdown", "deduplicated_name", "source",
               "source_stack", "shape_with_layout")


def _metadata_facts(fr: XSpaceFrame, rows: np.ndarray) -> dict[int, dict]:
    """{metadata row: facts} for the given event-metadata rows (a few thousand at most)."""
    wanted = set(int(r) for r in rows)
    facts: dict[int, dict] = {r: {} for r in wanted}
    sv = fr.stat_values("metadata", _META_STATS).filter(pl.col("owner").is_in(list(wanted)))
    for owner, name, ival, uval, fval, tid, bid in sv.select(
            "owner", "stat_name", "int", "uint", "float", "text_id", "blob_id").iter_rows():
        f = facts[owner]
        if tid >= 0:
            f[name] = fr.text(tid)
        elif bid >= 0:  # memory_access_breakdown: a serialized MemoryAccessBreakdown
            f[name] = fr.blob(bid)
        elif uval is not None:
            f[name] = int(uval)
        elif ival is not None:
            f[name] = int(ival)
        elif fval is not None:
            f[name] = fval
    return facts


def _fused_children(fr: XSpaceFrame, m: int, depth: int = 0) -> list[FusedChild]:
    raw = fr.raw
    if depth > 8 or not len(raw.em_child_owner):
        return []
    ids = raw.em_child_id[raw.em_child_owner == m]
    if not len(ids):
        return []
    plane = int(raw.em_plane[m])
    out = []
    for cid in ids:
        hit = np.flatnonzero((raw.em_plane == plane) & (raw.em_id == cid))
        if not len(hit):
            continue
        c = int(hit[0])
        f = _metadata_facts(fr, np.array([c]))[c]
        disp, full = raw.em_display_name[c], raw.em_name[c]
        flops = int(f.get("flops", 0) or 0)
        out.append(FusedChild(
            name=disp or full, long_name=full if disp else "", category=str(f.get("hlo_category", "")),
            provenance=str(f.get("tf_op", "")), flops=flops,
            model_flops=int(f.get("model_flops", 0) or 0),
            children=_fused_children(fr, c, depth + 1)))
    return out


_ELEMENTWISE = frozenset("""abs add and atan2 cbrt ceil clamp clz compare complex constant convert cosine divide
exponential exponential-minus-one floor imag is-finite log log-plus-one logistic maximum minimum
multiply negate not or popcnt power real reduce-precision remainder round-nearest-afz
round-nearest-even rsqrt select shift-left shift-right-arithmetic shift-right-logical sign sine sqrt
stochastic-convert subtract tan tanh xor erf bitcast-convert""".split())
_DATA_FORMATTING = frozenset("bitcast copy reshape transpose".split())


def hlo_category(opcode: str) -> str:
    """XProf's op category for an HLO inside a fusion (the common opcodes; others as themselves)."""
    if opcode in _ELEMENTWISE:
        return "non-fusion elementwise"
    if opcode in _DATA_FORMATTING:
        return "data formatting"
    return opcode


def hlo_protos(frames: list[XSpaceFrame]) -> dict[int, bytes]:
    """program_id -> serialized HloProto, from the `/host:metadata` plane's `Hlo Proto` stats."""
    out: dict[int, bytes] = {}
    for fr in frames:
        plane = fr.plane_index(schema.METADATA_PLANE)
        if plane is None:
            continue
        for m in np.flatnonzero(fr.raw.em_plane == plane):
            st = fr.metadata_stat_map(int(m))
            data = st.get("Hlo Proto")
            if isinstance(data, bytes):
                pid = to_int(st.get("program_id", fr.raw.em_id[m])) & 0xFFFFFFFFFFFFFFFF
                out.setdefault(pid, data)
    return out


def fused_children_from_hlo(protos: dict[int, bytes], wanted: list[tuple[int, str]]) -> dict[tuple[int, str], list[FusedChild]]:
    """The instructions inside each wanted fusion (program_id, name), in computation order,
    parameters left out, nested fusions recursively (XProf's fused-op level of the op profile)."""
    from tputui.proto import hlo_pb2

    out: dict[tuple[int, str], list[FusedChild]] = {}
    by_program: dict[int, list[str]] = {}
    for pid, name in wanted:
        by_program.setdefault(pid, []).append(name)
    for pid, names in by_program.items():
        data = protos.get(pid)
        if data is None:
            continue
        proto = hlo_pb2.HloProto()
        try:
            proto.ParseFromString(data)
        except Exception:  # an unreadable module only loses the fused level
            continue
        comps = {c.id: c for c in proto.hlo_module.computations}
        instrs = {i.name: i for c in proto.hlo_module.computations for i in c.instructions}

        def children(ins, depth=0, comps=comps):
            kids = []
            for cid in ins.called_computation_ids if ins.opcode == "fusion" and depth < 8 else ():
                for c in comps[cid].instructions if cid in comps else ():
                    if c.opcode == "parameter":
                        continue
                    md = c.metadata
                    kids.append(FusedChild(
                        name=c.name, long_name="", category=hlo_category(c.opcode),
                        provenance=f"{md.op_name}:{md.op_type}", flops=0, model_flops=0,
                        children=children(c, depth + 1)))
            return kids

        for name in names:
            if name in instrs:
                out[(pid, name)] = children(instrs[name])
    return out


def module_program_id(module: str) -> int | None:
    """The program id XProf appends to module names: "jit_f(1219...)" -> 1219..., None without one."""
    m = MODULE_NAME.match(module)
    return int(m.group(2)) if m else None


def program_name_entries(fr: XSpaceFrame) -> list[tuple[int, str, bool]]:
    """(program_id, module name, from /host:metadata) in plane order, from `/host:metadata` and the
    device planes' `<module>(<program_id>)` event metadata (see program_names)."""
    return [e for i in range(len(fr.raw.plane_name)) for e in plane_program_names(fr, i)]


def plane_program_names(fr: XSpaceFrame, i: int) -> list[tuple[int, str, bool]]:
    """program_name_entries of one plane (none unless it is `/host:metadata` or a device plane)."""
    n = fr.raw.plane_name[i]
    if n != schema.METADATA_PLANE and not DEVICE_PLANE.match(n):
        return []
    out = []
    for m in np.flatnonzero(fr.raw.em_plane == i):
        mt = MODULE_NAME.match(fr.raw.em_name[m])
        if mt:
            out.append((int(mt.group(2)), mt.group(1), n == schema.METADATA_PLANE))
    return out


def program_names(entries: list[list[tuple[int, str, bool]]]) -> dict[int, str]:
    """program_id -> HLO module name over hosts: `/host:metadata` names win, else the first seen."""
    names: dict[int, str] = {}
    for host_entries in entries:
        for pid, name, meta in host_entries:
            if meta or pid not in names:
                names[pid] = name
    return names


def plane_extras(fr: XSpaceFrame, plane: int, index: int) -> tuple[list[dict], dict[str, list[FusedChild]]]:
    """One device plane's per-execution facts that op_metrics does not carry (memory traffic by
    memory space, source, shape), read from its event metadata, with each row's fused children
    from the metadata. Rows are keyed "<index>:<n>": the plane's place in the host file and the
    metadata's place in the plane, the same whether the host is read whole or in pieces."""
    raw = fr.raw
    rows = []
    fused: dict[str, list[FusedChild]] = {}
    mds = np.flatnonzero(raw.em_plane == plane)
    facts = _metadata_facts(fr, mds)
    for n, m in enumerate(mds.tolist()):
        f = facts[m]
        if "program_id" not in f or not f.get("symbol_id"):
            continue
        disp, full = raw.em_display_name[m], raw.em_name[m]
        src = str(f.get("source", "") or "")
        file_, _, line_s = src.rpartition(":")
        mem = memory_sums(parse_memory_breakdown(f.get("memory_access_breakdown", b"") or b""))
        key = f"{index}:{n}"
        rows.append({
            "program_id": int(f["program_id"]), "name": disp or full,
            "source_file": file_ if line_s.isdigit() else "",
            "source_line": int(line_s) if line_s.isdigit() else 0,
            "source_stack": str(f.get("source_stack", "")),
            "shape_with_layout": str(f.get("shape_with_layout", "")),
            "metadata_key": key, **mem,
        })
        fused[key] = _fused_children(fr, m)
    return rows, fused


@dataclass
class HostDeviceOps:
    """One TPU host's part of the device ops (op_stats' map): its op database plus what the event
    metadata adds (memory traffic, source, shape), fused children per metadata key and program
    names. Metadata keys are "<plane>:<n>" within the host (plane_extras)."""

    db: op_metrics.OpMetricsDb
    extras: pl.DataFrame
    fused: dict[str, list[FusedChild]]
    program_names: list[tuple[int, str, bool]]


def host_device_ops(fr: XSpaceFrame, db: op_metrics.OpMetricsDb) -> HostDeviceOps:
    """The map: one host's device-op facts, read from its frame once."""
    rows: list[dict] = []
    fused: dict[str, list[FusedChild]] = {}
    for p in device_planes(fr):
        r, f = plane_extras(fr, p, p)
        rows += r
        fused.update(f)
    return assemble_device_ops(db, rows, fused, program_name_entries(fr), lambda: hlo_protos([fr]))


def assemble_device_ops(db: op_metrics.OpMetricsDb, rows: list[dict], fused: dict[str, list[FusedChild]],
                        program_names: list[tuple[int, str, bool]],
                        protos: Callable[[], dict[int, bytes]]) -> HostDeviceOps:
    """A host's device ops from its device planes' extras rows and fused children (in plane
    order) and its program names; `protos` gives the host's HLO protos when they are needed."""
    if not rows:
        return HostDeviceOps(db=db, extras=pl.DataFrame(), fused={}, program_names=program_names)
    extras = pl.DataFrame(rows, schema_overrides={"program_id": pl.UInt64}).unique(
        ["program_id", "name"], keep="first", maintain_order=True)
    kept = {k: fused[k] for k in extras["metadata_key"].to_list()}
    # XProf takes the fused level from the HLO protos when the metadata has no children.
    fusions = db.ops.filter(pl.col("category").str.ends_with(" fusion")).select("program_id", "name").join(
        extras.select("program_id", "name", "metadata_key"), on=["program_id", "name"])
    missing = [(int(p), n, k) for p, n, k in fusions.iter_rows() if not kept.get(k)]
    if missing:
        got = fused_children_from_hlo(protos(), [(p, n) for p, n, _ in missing])
        for p, n, k in missing:
            kept[k] = got.get((p, n), [])
    return HostDeviceOps(db=db, extras=extras, fused=kept, program_names=program_names)


def combine_perf(envs: list[PerfEnv]) -> PerfEnv:
    """Over hosts (as perf_env over their frames): cores add up, the first TPU host gives the peaks."""
    first = next((e for e in envs if e.hardware != "CPU"), None)
    out = dataclasses.replace(first) if first is not None else PerfEnv()
    out.core_count = sum(e.core_count for e in envs)
    return out


def combine_device_ops(parts: list[HostDeviceOps | None], perf: PerfEnv) -> DeviceOps:
    """The reduce: every TPU host's device ops combined (XProf's ALL_HOSTS op metrics db with memory
    traffic, source and fused children). `parts` follows the run's host order, None for hosts
    without TPU planes."""
    present = [p for p in parts if p is not None]
    db = op_metrics.combine([p.db for p in present])
    if not present or db.ops.height == 0:
        raise NoDataError("no TPU device ops in this profile (XLA Ops lines on /device:TPU planes)")
    extras = [p.extras.with_columns(metadata_key=pl.lit(f"{h}:") + pl.col("metadata_key"))
              for h, p in enumerate(parts) if p is not None and p.extras.height]
    ops = db.with_idle()
    if extras:
        ex = pl.concat(extras, how="vertical_relaxed").unique(["program_id", "name"], keep="first",
                                                               maintain_order=True)
        ops = ops.join(ex, on=["program_id", "name"], how="left", maintain_order="left")
    for c in MEM_COLUMNS + ("source_line",):
        ops = ops.with_columns((pl.col(c) if c in ops.columns else pl.lit(0)).fill_null(0).cast(pl.Int64).alias(c))
    for c in ("source_file", "source_stack", "shape_with_layout", "metadata_key"):
        ops = ops.with_columns((pl.col(c) if c in ops.columns else pl.lit("")).fill_null("").alias(c))
    # Breakdown bytes are per execution in the metadata: multiply out like flops.
    ops = ops.with_columns(*[(pl.col(c) * pl.col("occurrences")).alias(c) for c in MEM_COLUMNS
                             if c != "mem_entries"], dma_stall_ps=pl.lit(0, pl.Int64))
    fused: dict[str, list[FusedChild]] = {}
    for key in ops["metadata_key"].to_list():
        if key:
            h, _, local = key.partition(":")
            fused[key] = parts[int(h)].fused.get(local, [])  # type: ignore[union-attr]
    return DeviceOps(ops=ops, total_time_ps=db.total_time_ps, total_op_time_ps=db.total_op_time_ps,
                     perf=perf,
                     program_names=program_names([p.program_names for p in parts if p is not None]),
                     fused=fused)


def sorted_by_self_time(ops: pl.DataFrame) -> pl.DataFrame:
    """XProf's SortedOpMetricsDb order: self time descending, then name ascending."""
    return ops.sort(["self_time_ps", "name"], descending=[True, False])
