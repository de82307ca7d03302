"""Megascale stats: DCN collectives between TPU slices, as XProf 2.24's `megascale_stats` reports them.

    analyze(run, host=None, dcn_gbps=None) -> MegascaleResult   (one host; the first by default)

How XProf gets there (xprof/convert/xplane_to_dcn_collective_stats.cc, xspace_to_dcn_slack_analysis.cc,
process_megascale_dcn.cc), reproduced here:

- A run has DCN stats only if every host's `/host:CPU` plane has an event named `MegaScale: ...`;
  otherwise every host's table is empty.
- Only `/device:TPU:0` is read (here the default; `device` picks another TPU of the host). Its
  `XLA Ops` events whose `hlo_category` contains "host send" or "host recv" are looked up in the
  HLO module of the `XLA Modules` event containing them (`/host:metadata` "Hlo Proto", keyed
  `<module>(<program_id>)`): opcode, channel id, frontend attributes `_xla_host_transfer_rendezvous`
  (the collective's name) and `_xla_megascale_transfer_type`.
- Per rendezvous, in line order: send starts an occurrence; every DCN op adds its duration to the
  stall of its own rendezvous and to the "overlap" of every open one; recv-done closes it with
  slack = recv-done start - send start - overlap (ns -> whole us), observed = recv-done end - send
  start, and bytes from the recv-done shape by transfer type (all-reduce 2(g-1)/g, all-gather (g-1)/g,
  reduce-scatter (g-1), one-to-one g, all-to-all (g-1)/g; g from the send's `dcn_collective_info`).
  A recv-done before any send of its rendezvous is skipped. Values are stored as whole microseconds,
  then averaged per rendezvous (whole microseconds again): the table is in milliseconds.
- Required bandwidth (Gbps) = bytes / slack: bytes * 8 / (slack us * 1000); INT_MAX with no slack.

Beyond XProf: findings (analysis/dcn_diagnosis.py: stall outliers and their likely cause, collectives
needing more than the network); with no bandwidth given, rows are flagged against the DCN bandwidth of the host's TPU
generation (per chip, from the Cloud TPU docs, times the chips on the host) when it is known.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import dcn_diagnosis, giant_host, host_map
from tputui.analysis.hlo_ops import perf_env
from tputui.analysis.op_metrics import metadata_stats_table, tensor_core_planes
from tputui.analysis.tool_facts import MEGASCALE, has_megascale_events
from tputui.data import pbwire, schema
from tputui.data.event_subset import events_named
from tputui.data.run_data import RunData
from tputui.data.stat_values import to_int
from tputui.data.xspace import XSpaceFrame, plane_filter
from tputui.errors import UserError

INT_MAX = 2147483647
DEFAULT_DEVICE = "/device:TPU:0"  # the only plane XProf reads DCN collectives from
RENDEZVOUS_ATTR = "_xla_host_transfer_rendezvous"
TRANSFER_TYPE_ATTR = "_xla_megascale_transfer_type"
# xla PrimitiveType -> bytes per element (TOKEN / TUPLE / OPAQUE have no elements).
_ELEMENT_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 15: 8,
                  16: 2, 18: 16, 19: 1, 20: 1, 21: 1, 22: 1, 23: 1, 24: 1, 25: 1, 26: 1, 27: 1, 28: 1,
                  29: 1, 30: 1}
_TRANSFER_TYPES = {1: "ALL_TO_ALL", 2: "ONE_TO_ONE", 3: "REDUCE_SCATTER", 4: "ALL_GATHER", 5: "ALL_REDUCE",
                   6: "RAGGED_ALL_TO_ALL"}

ROW_SCHEMA = {
    "name": pl.String, "recv_op_name": pl.String, "send_op_name": pl.String, "transfer_type": pl.String,
    "slack_time_ms": pl.Float64, "observed_duration_ms": pl.Float64, "send_stall_ms": pl.Float64,
    "send_done_stall_ms": pl.Float64, "recv_stall_ms": pl.Float64, "recv_done_stall_ms": pl.Float64,
    "stall_duration_ms": pl.Float64, "occurrences": pl.Int64, "aggregated_total_stall_ms": pl.Float64,
    "data_transmitted_bytes": pl.Int64, "required_bandwidth_gbps": pl.Float64,
    "exceeds_network": pl.Boolean,
}
# What the screen and CSV show, in order (the JSON keeps every column).
COLUMNS = list(ROW_SCHEMA)

# Data center network (DCN) bandwidth per chip in Gbps, by TPU generation, from the Cloud TPU
# system architecture pages (cloud.google.com/tpu/docs/v5e, /v5p, /v6e): v5e "data center network
# bandwidth per Pod 6.4 Tbps" over 256 chips (2 x 100 Gbps NICs per 8-chip host) = 25; v5p "DCN
# bandwidth per chip 50 Gbps"; v6e 25.6 Tbps per 256-chip Pod (4 x 200 Gbps NICs per 8-chip host)
# = 100. Other generations have no published per-chip figure: the user sets one with `B`.
DCN_GBPS_PER_CHIP = {"v5e": 25.0, "v5p": 50.0, "v6e": 100.0}


def tpu_generation(device_type: str) -> str | None:
    """'TPU v6 Lite' -> 'v6e', 'TPU v5 lite' -> 'v5e', 'TPU v5' / 'TPU v5p' -> 'v5p' (XProf's device type strings)."""
    s = device_type.lower().replace("tpu", "").strip()
    for gen in ("v5", "v6"):
        if s.startswith(gen):
            rest = s[len(gen):].strip()
            if rest in ("e", "lite", "litepod"):
                return gen + "e"
            if rest in ("", "p"):
                return gen + "p"
    return None


def suggested_dcn_gbps(device_type: str, chips_per_host: int) -> tuple[float | None, str]:
    """The host's DCN bandwidth for its TPU generation (Gbps) and where the figure comes from."""
    gen = tpu_generation(device_type)
    per_chip = DCN_GBPS_PER_CHIP.get(gen or "")
    if per_chip is None or chips_per_host <= 0:
        return None, f"no published DCN bandwidth for {device_type or 'this device'}"
    return per_chip * chips_per_host, (f"TPU {gen}: {per_chip:g} Gbps per chip x {chips_per_host} chips "
                                       "(Cloud TPU docs)")


@dataclass
class MegascaleResult:
    host: str
    hosts: list[str]
    rows: pl.DataFrame  # ROW_SCHEMA, sorted by aggregated total stall, largest first
    cores_per_host: int = 0
    dcn_gbps: float | None = None
    diagnostics: list[str] = field(default_factory=list)
    # (rendezvous, recv-done start ps, end ps) of every closed occurrence, for the trace viewer jump
    recv_done_spans: pl.DataFrame | None = None
    device_type: str = ""
    suggested_gbps: float | None = None  # the TPU generation's DCN bandwidth for this host
    suggestion: str = ""  # where suggested_gbps comes from (or why there is none)
    device: str = DEFAULT_DEVICE  # the TPU device plane the table is for
    devices: list[str] = field(default_factory=list)  # the host's TPU device planes (the picker's choices)
    peers: dict[str, list[int]] = field(default_factory=dict)  # collective -> other slices (dcn_diagnosis)
    findings: list[dict[str, Any]] = field(default_factory=list)  # dcn_diagnosis.findings, set by flag()

    @property
    def no_data_note(self) -> str | None:
        """Why there is nothing to show (the export says it on stderr, exit 0, as for the tools
        that find no data of their kind), or None."""
        return (self.diagnostics[0] if self.diagnostics else "no DCN collectives") if not len(self.rows) else None

    def to_json(self) -> dict[str, Any]:
        rows = self.rows.drop("exceeds_network") if self.dcn_gbps is None else self.rows
        return {"host": self.host, "hosts": self.hosts, "cores_per_host": self.cores_per_host,
                "dcn_gbps": self.dcn_gbps, "device_type": self.device_type,
                "suggested_dcn_gbps": self.suggested_gbps, "suggestion": self.suggestion,
                "device": self.device, "devices": self.devices,
                "rows": rows.to_dicts(), "diagnostics": self.diagnostics, "findings": self.findings}

    @property
    def flagged_names(self) -> set[str]:
        """Collectives that need more than the DCN bandwidth set with `flag`."""
        return set(self.rows.filter(pl.col("exceeds_network"))["name"].to_list()) if self.dcn_gbps else set()

    def first_recv_done(self, name: str) -> tuple[int, int] | None:
        """(start, end) ps of the collective's first closed recv-done, for the trace viewer jump."""
        spans = self.recv_done_spans
        sel = spans.filter(pl.col("name") == name) if spans is not None else None
        if sel is None or not len(sel):
            return None
        first = sel.sort("start_ps").row(0, named=True)
        return int(first["start_ps"]), int(first["end_ps"])

    @property
    def exceeding_count(self) -> int:
        """Collectives that need more than the DCN bandwidth set with `flag` (0 when none is set)."""
        return int(self.rows["exceeds_network"].sum()) if self.dcn_gbps else 0

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"megascale_stats": self.rows}

    def flag(self, dcn_gbps: float | None) -> MegascaleResult:
        """The same table with `exceeds_network` for a network of `dcn_gbps` Gbps per host."""
        rows = self.rows.with_columns(exceeds_network=(
            (pl.col("required_bandwidth_gbps") * self.cores_per_host > dcn_gbps) if dcn_gbps
            else pl.lit(False)))
        found = dcn_diagnosis.findings(rows, dcn_gbps or None, self.cores_per_host, self.peers)
        return dataclasses.replace(self, rows=rows, dcn_gbps=dcn_gbps or None, findings=found)

    @property
    def stall_outlier_names(self) -> set[str]:
        return {f["collective"] for f in self.findings if f["kind"] == "stall_outlier"}

    def findings_of(self, name: str) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["collective"] == name]


# --- minimal protobuf reading (xla.HloProto and DcnCollectiveInfoProto) ------------------------
def _fields(buf: bytes):
    """(field number, value) of a serialized message."""
    return ((number, value) for number, _, value in pbwire.fields(buf))


def _shape_bytes(shape: bytes) -> int:
    """XLA's ByteSizeOfElements for an array; for a tuple, the sum of its elements' sizes."""
    etype, dims, tuples = 0, [], []
    for num, v in _fields(shape):
        if num == 2:
            etype = v
        elif num == 3:
            if isinstance(v, (bytes, bytearray)):
                j = 0
                while j < len(v):
                    d, j = pbwire.varint(v, j)
                    dims.append(d)
            else:
                dims.append(v)
        elif num == 4:
            tuples.append(v)
    if etype == 13:  # TUPLE
        return sum(_shape_bytes(t) for t in tuples)
    return int(np.prod(dims, dtype=np.int64)) * _ELEMENT_BYTES.get(etype, 0) if etype in _ELEMENT_BYTES else 0


@dataclass
class Instr:
    opcode: str
    channel_id: int
    rendezvous: str | None
    transfer_type: str | None
    size: int


def parse_hlo_instructions(hlo_proto: bytes) -> tuple[str, dict[str, Instr]]:
    """(module name, {instruction name: Instr}) of a serialized xla.HloProto."""
    module = next((v for n, v in _fields(hlo_proto) if n == 1), b"")
    name, out = "", {}
    for num, v in _fields(module):
        if num == 1:
            name = bytes(v).decode()
        elif num == 3:
            for cn, cv in _fields(v):
                if cn != 2:
                    continue
                iname, opcode, shape, channel, attrs = "", "", b"", 0, {}
                for fn, fv in _fields(cv):
                    if fn == 1:
                        iname = bytes(fv).decode()
                    elif fn == 2:
                        opcode = bytes(fv).decode()
                    elif fn == 3:
                        shape = fv
                    elif fn == 26:
                        channel = fv
                    elif fn == 68:
                        for en, ev in _fields(fv):
                            if en == 1:
                                kv = dict(_fields(ev))
                                attrs[bytes(kv.get(1, b"")).decode()] = bytes(kv.get(2, b"")).decode()
                if opcode in ("send", "recv", "send-done", "recv-done"):
                    out[iname] = Instr(opcode, channel, attrs.get(RENDEZVOUS_ATTR), attrs.get(TRANSFER_TYPE_ATTR),
                                       _shape_bytes(shape))
    return name, out


def replica_group_size(info: bytes) -> int:
    """DcnCollectiveInfoProto: 1 for one-to-one groups, else the first endpoint group's size."""
    f = list(_fields(info))
    if any(n == 3 for n, _ in f):
        return 1
    groups = [v for n, v in f if n == 2]
    if groups:
        return sum(1 for n, _ in _fields(groups[0]) if n == 1)
    return 0


def transmitted_bytes(size: int, group: int, transfer_type: str) -> int:
    if group == 0:
        return 0
    if transfer_type == "ONE_TO_ONE":
        return group * size
    if transfer_type == "ALL_GATHER":
        return int(((group - 1) * size) / group)
    if transfer_type == "ALL_REDUCE":
        return int(2 * ((group - 1) / group) * size)
    if transfer_type == "ALL_TO_ALL":
        return int(((group - 1) / group) * size)
    if transfer_type == "REDUCE_SCATTER":
        return size * (group - 1)
    return 0


# --- the tracker (XProf's DcnTracker) ---------------------------------------------------------
def _slacks(frame: XSpaceFrame, device: str = DEFAULT_DEVICE) -> tuple[list[dict], list[tuple[str, int, int]]]:
    """Per occurrence: rendezvous, names, times (whole us), bytes; and recv-done spans (ps), of one
    TPU device plane (XProf reads /device:TPU:0 only)."""
    raw = frame.raw
    tpu0 = frame.plane_index(device)
    if tpu0 is None:
        return [], []
    lines = {raw.line_name[ln]: ln for ln in frame.lines_of(tpu0)}
    if schema.LINE_XLA_OPS not in lines or schema.LINE_XLA_MODULES not in lines:
        return [], []
    hlo = _hlo_by_module(frame)
    ms = frame.line_events(lines[schema.LINE_XLA_MODULES])
    mrows = np.arange(ms.start, ms.stop, dtype=np.int64)
    m_start = frame.start_ps[mrows].astype(np.int64)
    m_end = m_start + raw.event_duration_ps[mrows].astype(np.int64)
    m_names = frame.metadata_names(frame.events["metadata"].to_numpy()[mrows]).to_list()
    order = np.argsort(m_start, kind="stable")
    m_start, m_end, m_names = m_start[order], m_end[order], [m_names[i] for i in order]
    os_ = frame.line_events(lines[schema.LINE_XLA_OPS])
    rows = np.arange(os_.start, os_.stop, dtype=np.int64)
    md = frame.events["metadata"].to_numpy()[rows].astype(np.int64)
    mt = metadata_stats_table(frame, ["hlo_category"], md)
    cat_ids = mt["hlo_category.text"]
    dcn_text = {t for t in set(cat_ids.tolist()) if t >= 0 and ("host send" in frame.text(t) or "host recv" in frame.text(t))}
    sel = np.isin(cat_ids, list(dcn_text))
    rows, md = rows[sel], md[sel]
    if not len(rows):
        return [], []
    start = frame.start_ps[rows].astype(np.int64)
    dur = raw.event_duration_ps[rows].astype(np.int64)
    ts_ns = raw.line_timestamp_ns[raw.event_line[rows]].astype(np.int64) + raw.event_offset_ps[rows] // 1000
    dur_ns = dur // 1000
    names = frame.metadata_names(md, display=True).to_list()
    long_names = frame.metadata_names(md).to_list()
    info = _collective_info(frame, md)
    idx = np.searchsorted(m_start, start, "right") - 1  # containing module (host time)
    state: dict[str, dict] = {}
    ch_to_rdv: dict[int, str] = {}
    rdv_group: dict[str, int] = {}
    out, spans = [], []
    for i in range(len(rows)):
        j = idx[i]
        if j < 0 or m_end[j] < start[i] + dur[i]:
            continue
        module = hlo.get(m_names[j])
        name = names[i] or long_names[i]
        ins = module.get(name) if module else None
        if ins is None:
            continue
        if ins.rendezvous is not None:
            rdv = ins.rendezvous
            ch_to_rdv[ins.channel_id] = rdv
        elif ins.channel_id in ch_to_rdv:
            rdv = ch_to_rdv[ins.channel_id]
        else:
            continue
        st = state.setdefault(rdv, {"start": 0, "overlap": 0, "stall": 0, "type": "", "send_name": "",
                                    "send": (0, 0), "recv": (0, 0), "send_done": (0, 0), "group": 0})
        st["stall"] += int(dur_ns[i])
        t_ps, d_ps = int(start[i]), int(dur[i])
        if ins.opcode == "send":
            st.update(start=int(ts_ns[i]), type=ins.transfer_type or "", overlap=0, stall=int(dur_ns[i]),
                      send_name=name, send=(t_ps, d_ps))
            if rdv not in rdv_group:
                group_info = info[i]
                rdv_group[rdv] = replica_group_size(group_info) if group_info else 0
            st["group"] = rdv_group[rdv]
        elif ins.opcode == "recv":
            st["recv"] = (t_ps, d_ps)
        elif ins.opcode == "send-done":
            st["send_done"] = (t_ps, d_ps)
        elif ins.opcode == "recv-done" and st["start"] != 0:
            end_ns = int(ts_ns[i]) + int(dur_ns[i])
            out.append({
                "rdv": rdv, "type": st["type"], "send_start_us": int(st["start"] / 1000),
                "recv_done_end_us": int(end_ns / 1000),
                "slack_us": int((int(ts_ns[i]) - st["start"] - st["overlap"]) / 1000),
                "bytes": transmitted_bytes(ins.size, st["group"], st["type"]),
                "stall_us": int(st["stall"] / 1000), "recv_name": name, "send_name": st["send_name"],
                "send_ps": st["send"][1], "recv_ps": st["recv"][1], "send_done_ps": st["send_done"][1],
                "recv_done_ps": d_ps,
            })
            spans.append((rdv, int(start[i]), int(start[i] + dur[i])))
        for s in state.values():  # UpdateActiveOps: every open rendezvous overlaps this op
            s["overlap"] += int(dur_ns[i])
    return out, spans


def _hlo_by_module(frame: XSpaceFrame) -> dict[str, dict[str, Instr]]:
    """`<module>(<program_id>)` -> send/recv instructions, from `/host:metadata`."""
    p = frame.plane_index(schema.METADATA_PLANE)
    if p is None:
        return {}
    rows = np.flatnonzero(frame.raw.em_plane == p)
    out = {}
    for r in rows:
        st = frame.metadata_stat_map(int(r))
        blob = st.get("Hlo Proto")
        if not isinstance(blob, (bytes, bytearray)):
            continue
        name, instrs = parse_hlo_instructions(bytes(blob))
        pid = st.get("program_id", frame.raw.em_id[r])
        out[f"{name}({to_int(pid)})"] = instrs
    return out


def _collective_info(frame: XSpaceFrame, md: np.ndarray) -> list[bytes | None]:
    sv = frame.stat_values("metadata", "dcn_collective_info")
    blobs = {}
    for owner in set(sv["owner"].to_list()):
        v = frame.stat_map("metadata", int(owner)).get("dcn_collective_info")
        if isinstance(v, (bytes, bytearray)):
            blobs[int(owner)] = bytes(v)
    return [blobs.get(int(m)) for m in md]


def summarize(occ: list[dict]) -> pl.DataFrame:
    """XProf's per-rendezvous summary: sums in whole microseconds, then whole-microsecond averages."""
    acc: dict[str, dict] = {}
    for a in occ:
        s = acc.setdefault(a["rdv"], {"slack": 0, "n": 0, "stall": 0, "observed": 0, "send": 0, "recv": 0,
                                      "send_done": 0, "recv_done": 0})
        s["slack"] += a["slack_us"]
        s["n"] += 1
        s["type"], s["bytes"] = a["type"], a["bytes"]
        s["stall"] += a["stall_us"]
        s["observed"] += a["recv_done_end_us"] - a["send_start_us"]
        s["recv_name"], s["send_name"] = a["recv_name"], a["send_name"]
        s["send"] = int(s["send"] + a["send_ps"] / 1e6)
        s["recv"] = int(s["recv"] + a["recv_ps"] / 1e6 / 1e6)  # XProf divides this one twice
        s["send_done"] = int(s["send_done"] + a["send_done_ps"] / 1e6)
        s["recv_done"] = int(s["recv_done"] + a["recv_done_ps"] / 1e6)
    rows = []
    for rdv, s in acc.items():
        n = s["n"]
        avg = {k: int(s[k] / n) for k in ("slack", "stall", "observed", "send", "recv", "send_done", "recv_done")}
        rows.append({
            "name": rdv, "recv_op_name": s["recv_name"], "send_op_name": s["send_name"], "transfer_type": s["type"],
            "slack_time_ms": avg["slack"] / 1000, "observed_duration_ms": avg["observed"] / 1000,
            "send_stall_ms": avg["send"] / 1000, "send_done_stall_ms": avg["send_done"] / 1000,
            "recv_stall_ms": avg["recv"] / 1000, "recv_done_stall_ms": avg["recv_done"] / 1000,
            "stall_duration_ms": avg["stall"] / 1000, "occurrences": n,
            "aggregated_total_stall_ms": avg["stall"] * n / 1000, "data_transmitted_bytes": s["bytes"],
            "required_bandwidth_gbps": (float(INT_MAX) if avg["slack"] == 0
                                        else s["bytes"] / avg["slack"] * 8e-9 / 1e-6),
            "exceeds_network": False,
        })
    df = pl.DataFrame(rows, schema=ROW_SCHEMA)
    return df.sort(["aggregated_total_stall_ms", "name"], descending=[True, False])


PLANES = [schema.TPU_PLANE_PREFIX, schema.METADATA_PLANE, schema.HOST_PLANE]


def device_plane(device: str | int | None, devices: list[str]) -> str:
    """`/device:TPU:N`, `TPU:N` or `N` as the host's plane name (None: TPU:0, as XProf)."""
    if device is None or str(device).strip() == "":
        return DEFAULT_DEVICE
    text = str(device).strip()
    name = text if text.startswith("/device:") else schema.TPU_PLANE_PREFIX + text.removeprefix("TPU:")
    if devices and name not in devices:
        raise UserError(f"no device {text!r} on this host (devices: {', '.join(devices)})")
    return name


def _tpu_devices(frame: XSpaceFrame) -> list[str]:
    names = [n for n in frame.raw.plane_name if n.startswith(schema.TPU_PLANE_PREFIX)]
    return sorted(names, key=lambda n: (len(n), n))


def analyze(run: RunData, host: str | None = None, dcn_gbps: float | None = None, device: str | None = None,
            **_options) -> MegascaleResult:
    """One host's table, flagged against `dcn_gbps` (Gbps per host); None: the TPU generation's, 0: none.
    `device`: which TPU of the host (`/device:TPU:N` or N; default TPU:0, the only one XProf reads)."""
    hosts = list(run.hosts)
    if not hosts:
        raise UserError("the run has no readable host")
    host = host or hosts[0]
    if host not in hosts:
        raise UserError(f"no host {host!r} in this run (hosts: {', '.join(hosts)})")
    giant = giant_host.pieces(run, host) is not None
    if giant:  # the one TPU plane read and the HLO protos, every other plane without its lines
        devices = _tpu_devices(giant_host.planes_without_lines(run, host, plane_filter(PLANES)))
        plane = device_plane(device, devices)
        frame = giant_host.frame_with_lines(run, host, PLANES, lambda n: n in (plane, schema.METADATA_PLANE))
    else:
        frame = run.frame(host, planes=PLANES)
        devices = _tpu_devices(frame)
        plane = device_plane(device, devices)
    gated = all(has_megascale_events(frame if h == host else _host_plane_names(run, h)) for h in hosts)
    diagnostics = []
    if gated:
        occ, spans = _slacks(frame, plane)
        rows = summarize(occ)
    else:
        occ, spans, rows = [], [], pl.DataFrame(schema=ROW_SCHEMA)
        diagnostics.append("No DCN (megascale) collectives: a host has no `MegaScale:` events.")
    if gated and not len(rows):
        diagnostics.append(f"No DCN send/recv ops found on {plane}.")
    cores = len(tensor_core_planes(frame))
    device_type = perf_env([frame]).device_type if cores else ""
    # One tensor-core plane per chip on the generations with a figure (v5e / v6e: one core per
    # chip; v5p runs its two cores as one megacore device).
    suggested, suggestion = suggested_dcn_gbps(device_type, cores)
    res = MegascaleResult(host, hosts, rows, cores, None, diagnostics,
                          pl.DataFrame(spans, schema={"name": pl.String, "start_ps": pl.Int64, "end_ps": pl.Int64},
                                       orient="row"), device_type, suggested, suggestion, plane, devices)
    # the peers are read only when a collective's stall stands out (the finding names them)
    res.peers = (dcn_diagnosis.slice_peers(_transport_events(run, host, frame) if giant else frame)
                 if dcn_diagnosis.stall_outliers(rows) else {})
    gbps = suggested if dcn_gbps is None else dcn_gbps
    return res.flag(gbps)


def _host_plane_names(run: RunData, host: str) -> XSpaceFrame:
    """A frame that names the host plane's events: a giant host's plane without its lines."""
    if giant_host.pieces(run, host) is None:
        return run.frame(host, planes=PLANES)
    return giant_host.planes_without_lines(run, host, lambda n: n == schema.HOST_PLANE)


def _transport_events(run: RunData, host: str, frame: XSpaceFrame) -> XSpaceFrame | None:
    """A giant host's plane of MegaScale transport events alone (what slice_peers reads)."""
    p = frame.plane_index(schema.HOST_PLANE)
    names = [n for n, q in zip(frame.raw.em_name, frame.raw.em_plane) if q == p
             and n.startswith(dcn_diagnosis.TRANSPORT)] if p is not None else []
    return events_named(run.host_file(host), schema.HOST_PLANE, names)


def has_data(run: RunData) -> bool:
    """Listed only where XProf finds DCN collectives: every host has `MegaScale:` events."""
    return bool(run.hosts) and all(MEGASCALE in facts for facts in host_map.host_facts(run))
