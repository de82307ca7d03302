"""Per-op metrics (XProf's OpMetricsDb) from a decoded profile: self time from nesting, IDLE.

Shared by the overview, input pipeline, op tools and the live monitor. API (stable; add, don't rename):

    OpMetricsDb                    one database: `ops` (Polars, one row per op, no IDLE row),
                                   `total_time_ps`, `total_op_time_ps` (sum of self times),
                                   `idle_time_ps`, `idle_ratio`, `with_idle()` (ops + an IDLE row),
                                   `busy_time_ps` / `idle_duty_ps` (device duty cycle, TPU only)
    device_op_metrics(frame)       every TPU TensorCore plane (or GPU plane) combined
    device_plane_op_metrics(frame, plane)   one device plane (XLA Ops / TensorFlow Ops lines)
    host_op_metrics(frame)         TF / tf.data ops on `/host:CPU` threads (what XProf counts on hosts)
    tf_op_metrics(device_db)       device ops rolled up to framework ops (name from `tf_op` provenance)
    combine(dbs)                   add databases (hosts, cores) like XProf's OpMetricsDbCombiner
    nest_parents(start, end)       parent row of each interval by nesting (from analysis/nesting.py)
    self_times(start, end)         duration minus the durations of direct children
    parse_tf_op(fullname)          XProf's TfOp parse: (category, name, type)
    tensor_core_planes(frame)      plane rows of TPU TensorCores (`/device:TPU:<n>`)

`ops` columns: program_id (u64: XLA program, 0 for framework / host ops), name, long_name, category,
provenance (framework op name, `tf_op`), deduplicated_name, occurrences, time_ps, self_time_ps,
min_time_ps, flops, model_flops, bytes_accessed (totals over occurrences), is_eager, num_cores.

Facts from XProf (xplane_to_op_metrics_db.cc, op_metrics_db_utils.cc): device op time uses the
`device_offset_ps` / `device_duration_ps` stats when present; per-op facts (program_id, symbol_id,
hlo_category, tf_op, flops, model_flops, bytes_accessed, deduplicated_name) sit on the event
metadata; events without program_id/symbol_id still nest but are not counted; flops and bytes are
per occurrence in the metadata and multiplied out; a plane's total time runs from its first to
its last op or step (a step marker by its own span, an op by its device span); IDLE = total
time - sum of self times.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from tputui.analysis.nesting import nest_parents
from tputui.data import pbwire, schema
from tputui.data.xspace import XSpaceFrame

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # a dtype class or instance (no public alias)

IDLE = "IDLE"
OP_LINE_NAMES = (schema.LINE_XLA_OPS, schema.LINE_TF_OPS, schema.LINE_SPARSE_CORE_OPS)
STEP_LINE_NAMES = (schema.LINE_STEPS, schema.LINE_SPARSE_CORE_STEPS)
_TENSOR_CORE = re.compile(r"^/device:TPU:\d+$")

OPS_SCHEMA: dict[str, PolarsDataType] = {
    "program_id": pl.UInt64, "name": pl.String, "long_name": pl.String, "category": pl.String,
    "provenance": pl.String, "deduplicated_name": pl.String, "occurrences": pl.Int64,
    "time_ps": pl.Int64, "self_time_ps": pl.Int64, "min_time_ps": pl.Int64, "flops": pl.Int64,
    "model_flops": pl.Int64, "bytes_accessed": pl.Int64, "is_eager": pl.Boolean, "num_cores": pl.Int64,
}


def empty_ops() -> pl.DataFrame:
    return pl.DataFrame(schema=OPS_SCHEMA)


@dataclass
class OpMetricsDb:
    ops: pl.DataFrame = field(default_factory=empty_ops)
    total_time_ps: int = 0
    total_op_time_ps: int = 0
    # Device duty cycle (XProf's DutyCycleTracker), set for TPU device databases only.
    busy_time_ps: int | None = None
    idle_duty_ps: int | None = None
    # Host infeed enqueues (XProf's HostOpMetricsDbBuilder::EnterHostInfeedEnqueue): per thread, the
    # duration of each enqueue but the last and the gaps between consecutive enqueue starts.
    host_infeed_enq_ps: int = 0
    host_infeed_enq_start_diff_ps: int = 0

    def host_infeed_enqueue_ratio(self) -> float | None:
        """XProf's HostInfeedEnqueueRatio: share of host time spent enqueuing (None: no enqueue pairs)."""
        if self.host_infeed_enq_start_diff_ps > 0:
            return self.host_infeed_enq_ps / self.host_infeed_enq_start_diff_ps
        return None

    @property
    def idle_time_ps(self) -> int:
        return max(self.total_time_ps - self.total_op_time_ps, 0)

    @property
    def idle_ratio(self) -> float:
        """XProf's IdleTimeRatio: 1 - op time / total time (1.0 when there is no time at all)."""
        return 1.0 - (self.total_op_time_ps / self.total_time_ps if self.total_time_ps else 0.0)

    def with_idle(self) -> pl.DataFrame:
        """`ops` plus XProf's IDLE row (occurrences 0, time = self time = idle time)."""
        idle = pl.DataFrame({
            "program_id": [0], "name": [IDLE], "long_name": [""], "category": [IDLE], "provenance": [""],
            "deduplicated_name": [""], "occurrences": [0], "time_ps": [self.idle_time_ps],
            "self_time_ps": [self.idle_time_ps], "min_time_ps": [0], "flops": [0], "model_flops": [0],
            "bytes_accessed": [0], "is_eager": [False], "num_cores": [0],
        }, schema=OPS_SCHEMA)
        return pl.concat([self.ops, idle])


# --- nesting -------------------------------------------------------------------------------
def self_times(start: np.ndarray, end: np.ndarray, parent: np.ndarray | None = None) -> np.ndarray:
    """Duration minus the summed durations of direct children (sorted input, see nest_parents)."""
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    if parent is None:
        parent = nest_parents(start, end)
    dur = end - start
    child = parent >= 0
    children = np.zeros(len(start), np.int64)
    np.add.at(children, parent[child], dur[child])
    return dur - children


# --- stats helpers ---------------------------------------------------------------------------
def event_stat(frame: XSpaceFrame, name: str, rows: np.ndarray | None = None,
               kind: str = "int", memo: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(present mask, values) of one event stat for event rows (all events when None).

    kind: "int" (int64/uint64), "float", "text" (str/ref resolved to a text id, -1 absent), "any"
    (present whatever the kind). memo=False: the stat's columns are not kept on the frame (a
    one-shot reader whose frame must not grow, such as the trace export's counters).
    """
    owners, vals = _stat_by_owner(frame, name, kind, memo)
    default = -1 if kind == "text" else 0
    dtype = np.float64 if kind == "float" else np.int64
    if rows is None:
        present = np.zeros(frame.num_events, bool)
        values = np.full(frame.num_events, default, dtype)
        present[owners] = True
        values[owners] = vals
        return present, values
    rows = np.asarray(rows, np.int64)
    if not len(owners) or not len(rows):
        return np.zeros(len(rows), bool), np.full(len(rows), default, dtype)
    if rows[-1] - rows[0] == len(rows) - 1 and (len(rows) < 2 or bool((np.diff(rows) == 1).all())):
        # A contiguous run of events (one line): the stat's owners inside it are one slice.
        a, b = np.searchsorted(owners, [rows[0], rows[-1] + 1])
        present = np.zeros(len(rows), bool)
        values = np.full(len(rows), default, dtype)
        at = owners[a:b] - rows[0]
        present[at] = True
        values[at] = vals[a:b]  # a repeated owner: the last value wins
        return present, values
    # A few rows of many events: binary search the stat's owners (event order) instead of
    # spreading them over arrays as long as the whole profile.
    i = np.clip(np.searchsorted(owners, rows, side="right") - 1, 0, None)  # the last value wins
    present = owners[i] == rows
    return present, np.where(present, vals[i], default).astype(dtype)


def _stat_by_owner(frame: XSpaceFrame, name: str, kind: str, memo: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(owner rows in event order, values) of one event stat where it has a value; kept on the
    frame (unless memo=False), since the device planes' lines, the step engine and several tools
    ask for the same."""
    def compute() -> tuple[np.ndarray, np.ndarray]:
        owners, vals = frame.stat_arrays("event", name, kind)
        if kind == "text":
            keep = vals >= 0
            owners, vals = owners[keep], vals[keep]
        if len(owners) > 1 and not (owners[1:] >= owners[:-1]).all():
            order = np.argsort(owners, kind="stable")
            owners, vals = owners[order], vals[order]
        return owners, vals

    if not memo:
        return compute()
    return frame.derived(("event_stat", name, kind), compute)  # type: ignore[return-value]


def metadata_stat_arrays(frame: XSpaceFrame, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int value, text id, present) of one metadata stat for every metadata row plus a last slot
    for row -1 (0 / -1 / False); kept on the frame, several tools gather from the same."""
    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n_md = len(frame.raw.em_id)
        ints = np.zeros(n_md + 1, np.int64)
        texts = np.full(n_md + 1, -1, np.int64)
        has = np.zeros(n_md + 1, bool)
        s = frame.stat_values("metadata", name)
        if len(s):
            own = s["owner"].to_numpy()
            ints[own] = s["int"].fill_null(0).to_numpy()
            texts[own] = s["text_id"].fill_null(-1).to_numpy()
            has[own] = True
        return ints, texts, has

    return frame.derived(("metadata_stat", name), compute)  # type: ignore[return-value]


def metadata_stats_table(frame: XSpaceFrame, names: list[str], rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per metadata row (of `rows`): int stats as int64 (0 absent) and text stats as str ("")."""
    out: dict[str, np.ndarray] = {}
    n_md = len(frame.raw.em_id)
    idx = np.where(rows >= 0, rows, n_md)
    for name in names:
        ints, texts, has = metadata_stat_arrays(frame, name)
        out[name] = ints[idx]
        out[name + ".text"] = texts[idx]
        out[name + ".has"] = has[idx]
    return out


def tensor_core_planes(frame: XSpaceFrame) -> list[int]:
    return [i for i, n in enumerate(frame.raw.plane_name) if _TENSOR_CORE.match(n)]


def gpu_planes(frame: XSpaceFrame) -> list[int]:
    return [i for i, n in enumerate(frame.raw.plane_name) if n.startswith(schema.GPU_PLANE_PREFIX)]


def device_spans(frame: XSpaceFrame, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in ps of events, from device_offset_ps/device_duration_ps when both exist."""
    start = frame.start_ps[rows]
    dur = frame.raw.event_duration_ps[rows]
    has_o, off = event_stat(frame, "device_offset_ps", rows)
    has_d, ddur = event_stat(frame, "device_duration_ps", rows)
    both = has_o & has_d
    start = np.where(both, off, start)
    dur = np.where(both, ddur, dur)
    return start.astype(np.int64), (start + dur).astype(np.int64)


def _sorted_line_rows(frame: XSpaceFrame, line: int, start: np.ndarray | None = None,
                      end: np.ndarray | None = None) -> np.ndarray:
    sl = frame.line_events(line)
    rows = np.arange(sl.start, sl.stop, dtype=np.int64)
    s = frame.start_ps[rows] if start is None else start
    e = s + frame.raw.event_duration_ps[rows] if end is None else end
    order = np.lexsort((-e, s))
    return rows[order]


# --- device databases ------------------------------------------------------------------------
def device_plane_op_metrics(frame: XSpaceFrame, plane: int) -> OpMetricsDb:
    """One TPU TensorCore plane: ops of the XLA Ops / TensorFlow Ops lines, keyed by
    (program_id, symbol_id), with self time from nesting on device time."""
    raw = frame.raw
    lines = frame.lines_of(plane)
    op_rows, step_rows = [], []
    for ln in lines:
        line_name = raw.line_name[ln]
        sl = frame.line_events(ln)
        rows = np.arange(sl.start, sl.stop, dtype=np.int64)
        if line_name in OP_LINE_NAMES:
            op_rows.append(rows)
        elif line_name in STEP_LINE_NAMES:
            step_rows.append(rows)
    first, last = None, None
    parts = []
    for rows in op_rows:
        if len(rows) == 0:
            continue
        s, e = device_spans(frame, rows)
        order = np.lexsort((-e, s))
        rows, s, e = rows[order], s[order], e[order]
        first = s.min() if first is None else min(first, s.min())
        last = e.max() if last is None else max(last, e.max())
        selft = self_times(s, e)
        parts.append((rows, e - s, selft))
    for rows in step_rows:
        if len(rows):
            # Step markers count with their own (host-clock) span here: what XProf 2.24's device
            # idle figures agree with (ops use their device span).
            s = frame.start_ps[rows]
            e = s + raw.event_duration_ps[rows]
            first = s.min() if first is None else min(first, s.min())
            last = e.max() if last is None else max(last, e.max())
    total = int(last - first) if first is not None else 0
    if not parts:
        return OpMetricsDb(total_time_ps=total)
    rows = np.concatenate([p[0] for p in parts])
    time_ps = np.concatenate([p[1] for p in parts])
    self_ps = np.concatenate([p[2] for p in parts])
    md = frame.events["metadata"].to_numpy()[rows].astype(np.int64)
    # Keys and the keep mask per metadata row first, then one gather each: per-event copies of
    # every stat would cost 24 arrays as long as the plane's ops.
    program, _, has_program = metadata_stat_arrays(frame, "program_id")
    symbol, _, has_symbol = metadata_stat_arrays(frame, "symbol_id")
    idx = np.where(md >= 0, md, len(raw.em_id))  # the arrays' last slot answers row -1
    keep = (has_program & has_symbol & (symbol != 0))[idx]
    st = {"program_id": program[idx], "symbol_id": symbol[idx]}
    occ = np.maximum(raw.event_num_occurrences[rows], 1)
    ev = pl.DataFrame({
        "md": md, "program_id": st["program_id"].astype(np.uint64), "symbol_id": st["symbol_id"],
        "occurrences": occ, "time_ps": time_ps, "self_time_ps": self_ps,
        "min_time_ps": raw.event_duration_ps[rows],
    }).filter(pl.Series(keep))
    ops = ev.group_by("program_id", "symbol_id", maintain_order=True).agg(
        pl.col("md").first(), pl.col("occurrences").sum(), pl.col("time_ps").sum(),
        pl.col("self_time_ps").sum(), pl.col("min_time_ps").min(),
    )
    mdr = ops["md"].to_numpy()
    st = metadata_stats_table(frame, ["hlo_category", "tf_op", "flops", "model_flops", "bytes_accessed",
                                      "deduplicated_name"], mdr)
    disp = [raw.em_display_name[m] for m in mdr]
    full = [raw.em_name[m] for m in mdr]
    name = [d if d else f for d, f in zip(disp, full)]
    long_name = [f if d else "" for d, f in zip(disp, full)]
    occ = ops["occurrences"].to_numpy()
    flops = st["flops"] * occ
    model_flops = np.where(st["model_flops"] > 0, st["model_flops"] * occ, flops)
    ops = pl.DataFrame({
        "program_id": ops["program_id"], "name": name, "long_name": long_name,
        "category": [frame.text(t) for t in st["hlo_category.text"]],
        "provenance": [frame.text(t) for t in st["tf_op.text"]],
        "deduplicated_name": [frame.text(t) for t in st["deduplicated_name.text"]],
        "occurrences": occ, "time_ps": ops["time_ps"], "self_time_ps": ops["self_time_ps"],
        "min_time_ps": ops["min_time_ps"], "flops": flops, "model_flops": model_flops,
        "bytes_accessed": st["bytes_accessed"] * occ, "is_eager": np.zeros(len(occ), bool),
        "num_cores": np.ones(len(occ), np.int64),
    }, schema=OPS_SCHEMA)
    return OpMetricsDb(ops=ops, total_time_ps=total, total_op_time_ps=int(ops["self_time_ps"].sum()))


def gpu_plane_op_metrics(frame: XSpaceFrame, plane: int) -> OpMetricsDb:
    """A GPU plane, approximated: XLA ops named by their `hlo_op` stat, keyed by program; time is
    event time (no nesting on GPU streams). XProf refines names and flops from the HLO protos."""
    raw = frame.raw
    rows_all, first, last = [], None, None
    for ln in frame.lines_of(plane):
        sl = frame.line_events(ln)
        rows = np.arange(sl.start, sl.stop, dtype=np.int64)
        if len(rows):
            s = frame.start_ps[rows]
            e = s + raw.event_duration_ps[rows]
            first = s.min() if first is None else min(first, s.min())
            last = e.max() if last is None else max(last, e.max())
            rows_all.append(rows)
    total = int(last - first) if first is not None else 0
    if not rows_all:
        return OpMetricsDb(total_time_ps=total)
    rows = np.concatenate(rows_all)
    has_op, op_text = event_stat(frame, "hlo_op", rows, kind="text")
    _, prog = event_stat(frame, "program_id", rows)
    dur = raw.event_duration_ps[rows]
    ev = pl.DataFrame({"op": op_text, "program_id": prog.astype(np.uint64), "dur": dur}).filter(
        pl.Series(has_op))
    g = ev.group_by("program_id", "op", maintain_order=True).agg(
        occurrences=pl.len().cast(pl.Int64), time_ps=pl.col("dur").sum(), min_time_ps=pl.col("dur").min())
    n = len(g)
    ops = pl.DataFrame({
        "program_id": g["program_id"], "name": [frame.text(t) for t in g["op"].to_list()],
        "long_name": [""] * n, "category": ["unknown"] * n, "provenance": [""] * n,
        "deduplicated_name": [""] * n, "occurrences": g["occurrences"], "time_ps": g["time_ps"],
        "self_time_ps": g["time_ps"], "min_time_ps": g["min_time_ps"], "flops": np.zeros(n, np.int64),
        "model_flops": np.zeros(n, np.int64), "bytes_accessed": np.zeros(n, np.int64),
        "is_eager": np.zeros(n, bool), "num_cores": np.ones(n, np.int64),
    }, schema=OPS_SCHEMA)
    return OpMetricsDb(ops=ops, total_time_ps=total, total_op_time_ps=int(ops["self_time_ps"].sum()))


def device_op_metrics(frame: XSpaceFrame) -> OpMetricsDb:
    """All TPU TensorCore planes (or else all GPU planes) of one host, combined; TPU databases
    carry the duty cycle (busy / idle) as well."""
    tpu = tensor_core_planes(frame)
    if tpu:
        db = combine([device_plane_op_metrics(frame, p) for p in tpu])
        busy, idle = duty_cycle(frame, tpu)
        db.busy_time_ps, db.idle_duty_ps = busy, idle
        return db
    gpu = gpu_planes(frame)
    return combine([gpu_plane_op_metrics(frame, p) for p in gpu])


# --- duty cycle ------------------------------------------------------------------------------
# HLO categories during which a TensorCore waits on the host (XProf's IsOffDutyOp).
OFF_DUTY_CATEGORIES = frozenset({"infeed", "outfeed", "host send", "host send-done", "host recv",
                                 "host recv-done", "megacore fusion"})


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total length covered by a set of intervals."""
    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    s, e = np.asarray(start, np.int64)[order], np.asarray(end, np.int64)[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    seg = np.cumsum(new) - 1
    seg_start = s[new]
    seg_end = np.zeros(len(seg_start), np.int64)
    np.maximum.at(seg_end, seg, e)
    return int((seg_end - seg_start).sum())


def chip_of(frame: XSpaceFrame, plane: int) -> int | None:
    """local_chip_id (field 4) of the plane's `core_details` (a serialized CoreDetails)."""
    blob = frame.plane_stat_map(plane).get("core_details")
    if not isinstance(blob, (bytes, bytearray)):
        return None
    try:
        return pbwire.varint_fields(blob).get(4, 0)
    except pbwire.WireError:
        return None


def duty_cycle(frame: XSpaceFrame, planes: list[int]) -> tuple[int, int]:
    """(busy ps, idle ps) summed over chips, as XProf's DutyCycleTracker / Combiner: a chip is busy
    while any of its cores runs an XLA op that is not off-duty (infeed, host send/recv, ...,
    custom-calls without model flops); its span runs over its XLA Ops and XLA Modules events."""
    raw = frame.raw
    per_chip: dict[object, list] = {}
    for p in planes:
        starts, ends, active = [], [], []
        for ln in frame.lines_of(p):
            name = raw.line_name[ln]
            if name not in (schema.LINE_XLA_OPS, schema.LINE_SPARSE_CORE_OPS, schema.LINE_XLA_MODULES, "Sparse Core Modules"):
                continue
            sl = frame.line_events(ln)
            rows = np.arange(sl.start, sl.stop, dtype=np.int64)
            if not len(rows):
                continue
            s = frame.start_ps[rows]
            e = s + raw.event_duration_ps[rows]
            if name == schema.LINE_XLA_OPS:
                md = frame.events["metadata"].to_numpy()[rows].astype(np.int64)
                st = metadata_stats_table(frame, ["hlo_category", "model_flops"], md)
                ev_cat_has, ev_cat = event_stat(frame, "hlo_category", rows, kind="text")
                cat_ids = np.where(ev_cat_has, ev_cat, st["hlo_category.text"])
                texts = {t: frame.text(int(t)) for t in np.unique(cat_ids)}
                off_ids = np.array([t for t, c in texts.items() if c in OFF_DUTY_CATEGORIES], np.int64)
                cc_ids = np.array([t for t, c in texts.items() if c == "custom-call"], np.int64)
                off = np.isin(cat_ids, off_ids) | (
                    np.isin(cat_ids, cc_ids) & st["model_flops.has"] & (st["model_flops"] == 0))
                act = ~off
            elif name == schema.LINE_SPARSE_CORE_OPS:
                act = np.ones(len(rows), bool)
            else:
                act = np.zeros(len(rows), bool)
            starts.append(s)
            ends.append(e)
            active.append(act)
        if not starts:
            continue
        chip = chip_of(frame, p)
        key = ("chip", chip) if chip is not None else ("plane", p)
        per_chip.setdefault(key, []).append((np.concatenate(starts), np.concatenate(ends),
                                             np.concatenate(active)))
    busy = idle = 0
    for parts in per_chip.values():
        s = np.concatenate([x[0] for x in parts])
        e = np.concatenate([x[1] for x in parts])
        a = np.concatenate([x[2] for x in parts])
        b = union_length(s[a], e[a])
        busy += b
        idle += int(e.max() - s.min()) - b
    return busy, idle


# --- framework (TF) ops ----------------------------------------------------------------------
_TF_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*\Z")
_TF_OP_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*\Z")
_JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?\Z", re.DOTALL)

CAT_UNKNOWN, CAT_TENSORFLOW, CAT_JAX, CAT_TF_DATA, CAT_MEMCPY = "unknown", "tensorflow", "jax", "tf.data", "memcpy"


def _derive_op_type(full: str) -> str:
    op = full.split("/")[-1]
    base, sep, suffix = op.rpartition("_")
    if sep and re.fullmatch(r"[+-]?\d+", suffix):
        return base
    return op


@lru_cache(maxsize=65536)
def parse_tf_op(fullname: str) -> tuple[str, str, str]:
    """(category, name, type) as XProf's ParseTfOpFullname; category "unknown" for other events."""
    parts = fullname.split(":", 1)
    if len(parts) != 2:
        low = parts[0].lower()
        for prefix, typ in (("memcpyhtod", "MemcpyHToD"), ("memcpydtoh", "MemcpyDToH"),
                            ("memcpydtod", "MemcpyDToD"), ("memcpyhtoh", "MemcpyHToH")):
            if low.startswith(prefix):
                return CAT_MEMCPY, fullname, typ
        return CAT_UNKNOWN, fullname, ""
    name, typ = parts
    if name == "Iterator":
        return CAT_TF_DATA, fullname, "Dataset"
    if _TF_OP_NAME.match(name) and _TF_OP_TYPE.match(typ):
        return CAT_TENSORFLOW, name, typ
    op_type = _derive_op_type(name) if typ == "" else typ
    if _JAX_OP_TYPE.match(op_type):
        return CAT_JAX, name, op_type.split("[", 1)[0]
    if typ == "":
        return CAT_TENSORFLOW, name, op_type
    return CAT_UNKNOWN, fullname, ""


def tf_op_metrics(device_db: OpMetricsDb, with_idle: bool = False) -> OpMetricsDb:
    """Device ops rolled up to framework ops (XProf's CreateTfMetricsDbFromDeviceOpMetricsDb):
    name and type from the `tf_op` provenance (the HLO name and "Unknown" without one);
    occurrences = the max over the op's device ops; times, flops and bytes add up."""
    ops = device_db.ops
    names, cats = [], []
    for name, prov in zip(ops["name"].to_list(), ops["provenance"].to_list()):
        if not prov:
            names.append(name)
            cats.append("Unknown")
        else:
            _, tf_name, tf_type = parse_tf_op(prov)
            names.append(tf_name)
            cats.append(tf_type if tf_type else "Unknown")
    rolled = ops.with_columns(pl.Series("tf_name", names), pl.Series("tf_cat", cats)).group_by(
        "tf_name", maintain_order=True).agg(
        pl.col("tf_cat").first(), pl.col("occurrences").max(), pl.col("time_ps").sum(),
        pl.col("self_time_ps").sum(), pl.col("min_time_ps").min(), pl.col("flops").sum(),
        pl.col("model_flops").sum(), pl.col("bytes_accessed").sum(), pl.col("is_eager").any(),
    )
    n = len(rolled)
    out = pl.DataFrame({
        "program_id": np.zeros(n, np.uint64), "name": rolled["tf_name"], "long_name": [""] * n,
        "category": rolled["tf_cat"], "provenance": [""] * n, "deduplicated_name": [""] * n,
        "occurrences": rolled["occurrences"], "time_ps": rolled["time_ps"],
        "self_time_ps": rolled["self_time_ps"], "min_time_ps": rolled["min_time_ps"],
        "flops": rolled["flops"], "model_flops": rolled["model_flops"],
        "bytes_accessed": rolled["bytes_accessed"], "is_eager": rolled["is_eager"],
        "num_cores": np.ones(n, np.int64),
    }, schema=OPS_SCHEMA)
    total_op = device_db.total_op_time_ps
    return OpMetricsDb(ops=out, total_time_ps=device_db.total_time_ps if with_idle else total_op,
                       total_op_time_ps=total_op)


def host_op_metrics(frame: XSpaceFrame) -> OpMetricsDb:
    """Framework ops on the `/host:CPU` threads (see host_thread_ops)."""
    return host_op_metrics_of([host_thread_ops(frame)])


def host_thread_ops(frame: XSpaceFrame) -> HostThreadOps | None:
    """Framework ops on the `/host:CPU` threads (XProf's ConvertHostThreadsXPlaneToOpMetricsDb):
    events whose name parses as a TF / tf.data / JAX op (or that carry a `tf_op` stat), nested
    among themselves per thread; each thread's total time spans its first to last such op."""
    plane = frame.plane_index(schema.HOST_PLANE)
    if plane is None:
        return None
    raw = frame.raw
    # Classify event metadata once (names are few); events then look their metadata up.
    md_names = raw.em_name
    md_cat = np.array([parse_tf_op(n)[0] != CAT_UNKNOWN if n else False for n in md_names] + [False])
    tfop = frame.stat_values("event", "tf_op").filter(pl.col("text_id") >= 0)
    if not md_cat.any() and not len(tfop):
        return None  # no framework op on this host (e.g. JAX): skip the events entirely
    tfop_rows = tfop["owner"].to_numpy().astype(np.int64)
    tfop_ids = tfop["text_id"].to_numpy().astype(np.int64)
    has_tfop_stat = np.zeros(frame.num_events, bool)
    tfop_text = np.full(frame.num_events, -1, np.int64)
    has_tfop_stat[tfop_rows] = True
    tfop_text[tfop_rows] = tfop_ids
    dbs = []
    md_all = frame.events["metadata"].to_numpy()
    for ln in frame.lines_of(plane):
        sl = frame.line_events(ln)
        if sl.stop == sl.start:
            continue
        md = md_all[sl]
        is_op = md_cat[np.where(md >= 0, md, len(md_names))] | has_tfop_stat[sl]
        rows = np.flatnonzero(is_op) + sl.start
        if len(rows) == 0:
            continue
        s = frame.start_ps[rows]
        e = s + raw.event_duration_ps[rows]
        order = np.lexsort((-e, s))
        rows, s, e = rows[order], s[order], e[order]
        selft = self_times(s, e)
        full = [frame.text(int(tfop_text[r])) if has_tfop_stat[r] and tfop_text[r] >= 0
                else md_names[md_all[r]] for r in rows]
        enq = _infeed_enqueue_sums(full, s, e) if any(INFEED_ENQUEUE in f for f in full) else (0, 0)
        dbs.append((full, e - s, selft, int(e.max() - s.min()), enq))
    if not dbs:
        return None
    full = [f for d in dbs for f in d[0]]
    parsed = [parse_tf_op(f) for f in full]
    ev = pl.DataFrame({
        "name": [p[1] for p in parsed], "category": [p[2] for p in parsed],
        "time_ps": np.concatenate([d[1] for d in dbs]), "self_time_ps": np.concatenate([d[2] for d in dbs]),
    })
    g = ev.group_by("name", maintain_order=True).agg(
        pl.col("category").first(), occurrences=pl.len().cast(pl.Int64), time_ps=pl.col("time_ps").sum(),
        self_time_ps=pl.col("self_time_ps").sum(), min_time_ps=pl.col("time_ps").min())
    return HostThreadOps(g, sum(d[3] for d in dbs), int(ev["self_time_ps"].sum()),
                         sum(d[4][0] for d in dbs), sum(d[4][1] for d in dbs))


@dataclass
class HostThreadOps:
    """Framework ops of some `/host:CPU` threads, summed per name in first-seen order: the whole
    plane's, or a piece of its threads' (several combine in thread order: host_op_metrics_of)."""
    per_name: pl.DataFrame  # name, category, occurrences, time_ps, self_time_ps, min_time_ps
    total_time_ps: int  # each thread's first to last op, summed
    op_time_ps: int
    infeed_enq_ps: int
    infeed_enq_start_diff_ps: int


def host_op_metrics_of(parts: list[HostThreadOps | None]) -> OpMetricsDb:
    """The host op database from its threads' parts, in thread order."""
    done = [p for p in parts if p is not None]
    if not done:
        return OpMetricsDb()
    g = pl.concat([p.per_name for p in done]).group_by("name", maintain_order=True).agg(
        pl.col("category").first(), pl.col("occurrences").sum(), pl.col("time_ps").sum(),
        pl.col("self_time_ps").sum(), pl.col("min_time_ps").min()) if len(done) > 1 else done[0].per_name
    n = len(g)
    ops = pl.DataFrame({
        "program_id": np.zeros(n, np.uint64), "name": g["name"], "long_name": [""] * n,
        "category": g["category"], "provenance": [""] * n, "deduplicated_name": [""] * n,
        "occurrences": g["occurrences"], "time_ps": g["time_ps"], "self_time_ps": g["self_time_ps"],
        "min_time_ps": g["min_time_ps"], "flops": np.zeros(n, np.int64),
        "model_flops": np.zeros(n, np.int64), "bytes_accessed": np.zeros(n, np.int64),
        "is_eager": np.zeros(n, bool), "num_cores": np.ones(n, np.int64),
    }, schema=OPS_SCHEMA)
    return OpMetricsDb(ops=ops, total_time_ps=sum(p.total_time_ps for p in done),
                       total_op_time_ps=sum(p.op_time_ps for p in done),
                       host_infeed_enq_ps=sum(p.infeed_enq_ps for p in done),
                       host_infeed_enq_start_diff_ps=sum(p.infeed_enq_start_diff_ps for p in done))


INFEED_ENQUEUE = "InfeedEnqueue"


def _infeed_enqueue_sums(full: list[str], s: np.ndarray, e: np.ndarray) -> tuple[int, int]:
    """One thread's infeed enqueue ops (TF op type InfeedEnqueue*), taken as XProf meets them (by end
    time): (duration of each but the last, sum of the start gaps between consecutive ones)."""
    sel = np.fromiter((parse_tf_op(f)[2].startswith(INFEED_ENQUEUE) for f in full), bool, len(full))
    if sel.sum() < 2:
        return 0, 0
    es, ee = s[sel], e[sel]
    order = np.argsort(ee, kind="stable")
    es, ee = es[order].astype(np.int64), ee[order].astype(np.int64)
    return int((ee[:-1] - es[:-1]).sum()), int((es[1:] - es[:-1]).sum())


# --- combining -------------------------------------------------------------------------------
def combine(dbs: list[OpMetricsDb], update_num_cores: bool = True) -> OpMetricsDb:
    """Add databases: ops merge by (program_id, name); totals add (XProf's OpMetricsDbCombiner)."""
    dbs = [d for d in dbs if d is not None]
    if not dbs:
        return OpMetricsDb()
    if len(dbs) == 1:
        return dbs[0]
    allops = pl.concat([d.ops for d in dbs])
    nonempty = pl.col("long_name").filter(pl.col("long_name") != "").first()
    ops = allops.group_by("program_id", "name", maintain_order=True).agg(
        nonempty.fill_null(""),
        pl.col("category").filter(pl.col("category") != "").first().fill_null(""),
        pl.col("provenance").filter(pl.col("provenance") != "").first().fill_null(""),
        pl.col("deduplicated_name").filter(pl.col("deduplicated_name") != "").first().fill_null(""),
        pl.col("occurrences").sum(), pl.col("time_ps").sum(), pl.col("self_time_ps").sum(),
        pl.col("min_time_ps").min(), pl.col("flops").sum(), pl.col("model_flops").sum(),
        pl.col("bytes_accessed").sum(), pl.col("is_eager").any(),
        (pl.col("num_cores").sum() if update_num_cores else pl.col("num_cores").first()),
    ).select(list(OPS_SCHEMA)).cast(OPS_SCHEMA)  # type: ignore[arg-type]  # polars stubs: invariant Mapping key
    busy = [d.busy_time_ps for d in dbs if d.busy_time_ps is not None]
    idle = [d.idle_duty_ps for d in dbs if d.idle_duty_ps is not None]
    return OpMetricsDb(
        ops=ops, total_time_ps=sum(d.total_time_ps for d in dbs),
        total_op_time_ps=sum(d.total_op_time_ps for d in dbs),
        busy_time_ps=sum(busy) if busy else None, idle_duty_ps=sum(idle) if idle else None,
        host_infeed_enq_ps=sum(d.host_infeed_enq_ps for d in dbs),
        host_infeed_enq_start_diff_ps=sum(d.host_infeed_enq_start_diff_ps for d in dbs),
    )


def line_parents(frame: XSpaceFrame, plane: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Nesting parent (an event row, -1 for none) of every event row of a plane's lines
    (`rows` = those rows, default all of the plane, grouped by line), per line as XProf nests."""
    raw = frame.raw
    if rows is None:
        parts = [np.arange(frame.line_events(ln).start, frame.line_events(ln).stop, dtype=np.int64)
                 for ln in frame.lines_of(plane)]
        rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    start = frame.start_ps[rows].astype(np.int64)
    end = start + raw.event_duration_ps[rows].astype(np.int64)
    line = raw.event_line[rows]
    out = np.full(len(rows), -1, np.int64)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(line)) + 1, [len(rows)]])
    for a, b in pairwise(bounds.tolist()):
        seg = np.arange(a, b)
        s_, e_ = start[a:b], end[a:b]
        ds = np.diff(s_)
        if (ds < 0).any() or ((ds == 0) & (np.diff(e_) > 0)).any():
            seg = seg[np.lexsort((-e_, s_))]
        p = nest_parents(start[seg], end[seg])
        out[seg] = np.where(p >= 0, rows[seg[np.clip(p, 0, None)]], -1)
    return out
