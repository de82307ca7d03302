"""Memory profile: an allocator's memory over time, from `MemoryAllocation` / `MemoryDeallocation`.

TensorFlow's allocators (and the TPU runtime) record one host event per allocation and
deallocation, with the allocator's state after it as stats (bytes reserved for the stack,
allocated on the heap, free, fragmentation, peak) and what it was for (TF op, region, data type,
shape, address). We follow XProf's converter (xprof/convert/xplane_to_memory_profile.cc):

- events of the `/host:CPU` plane, grouped per memory id (allocator name, else device ordinal /
  index on host); each event's step is its XProf group id (`steps.group_events`), and events
  without one take the previous step + 1 (0 at the start);
- the summary's peak is the last event, in file order, whose stack + heap is the largest;
  its time is the event's offset on its line (XProf's time axis for this tool);
- deallocations borrow the op, region, type and shape of the allocation at the same address;
- the timeline is the snapshots sorted by time, reduced to at most 1000 points by taking the
  fullest snapshot of each box (XProf's max box filter);
- the breakdown at the peak replays the peak's step up to the peak time: allocations still
  live, plus "unused preallocated device memory" for heap bytes no event accounts for and
  "stack" for the stack reservation, identical rows merged with a count.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import giant_host, host_pieces
from tputui.analysis.event_groups import group_events
from tputui.analysis.group_extract import extract_with, groups, may_group
from tputui.analysis.host_pieces import Piece
from tputui.analysis.result import NoDataError
from tputui.data import schema
from tputui.data.event_subset import events_named, plane_metadata
from tputui.data.progress import current_progress
from tputui.data.raw import KIND_DOUBLE, KIND_INT64, KIND_UINT64
from tputui.data.run_data import RunData
from tputui.data.runs import HostFile
from tputui.data.xspace import XSpaceFrame
from tputui.errors import UserError

ALLOCATION, DEALLOCATION = "ALLOCATION", "DEALLOCATION"
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
MAX_TIMELINE_SNAPSHOTS = 1000  # XProf's default max_num_snapshots

_INT_STATS = ["bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use",
              "requested_bytes", "allocation_bytes", "addr", "data_type", "index_on_host",
              "device_ordinal", "group_id"]
_TEXT_STATS = ["allocator_name", "tf_op", "region_type", "shape"]
_FLOAT_STATS = ["fragmentation"]

# tensorflow.DataType -> XProf's DataTypeString (tensorflow/core/framework/types.proto values).
_DTYPE_NAMES = {
    0: "INVALID", 1: "float", 2: "double", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
    7: "string", 8: "complex64", 9: "int64", 10: "bool", 11: "qint8", 12: "quint8", 13: "qint32",
    14: "bfloat16", 15: "qint16", 16: "quint16", 17: "uint16", 18: "complex128", 19: "half",
    20: "resource", 21: "variant", 22: "uint32", 23: "uint64", 24: "float8_e5m2",
    25: "float8_e4m3fn", 26: "float8_e4m3fnuz", 27: "float8_e4m3b11fnuz", 28: "float8_e5m2fnuz",
    29: "int4", 30: "uint4",
}


def data_type_name(code: int) -> str:
    if code > 100:  # reference types
        return data_type_name(code - 100) + "_ref"
    return _DTYPE_NAMES.get(code, f"unknown dtype enum ({code})")


def _data_type_names(codes: np.ndarray) -> pl.Series:
    """data_type_name of each code, called once per distinct code."""
    uniq, inverse = np.unique(codes, return_inverse=True)
    names = pl.Series([data_type_name(int(c)) for c in uniq], dtype=pl.String)
    return names.gather(pl.Series(inverse.reshape(-1).astype(np.int64))).alias("data_type")


# --- reading the events -----------------------------------------------------------------------
def memory_events(frame: XSpaceFrame) -> pl.DataFrame:
    """One row per memory event of the host plane, in file order, with its stats as columns."""
    plane = frame.plane_index(schema.HOST_PLANE)
    if plane is None:
        return pl.DataFrame()
    raw = frame.raw
    is_mem = np.array([n in MEMORY_EVENTS for n in raw.em_name], bool)
    if not is_mem.any():
        return pl.DataFrame()
    md = frame.events["metadata"].to_numpy()
    ev_plane = frame.events["plane"].to_numpy()
    rows = np.flatnonzero((md >= 0) & (ev_plane == plane) & is_mem[np.clip(md, 0, None)])
    if len(rows) == 0:
        return pl.DataFrame()
    line = raw.event_line[rows]
    offset = frame.start_ps[rows] - raw.line_timestamp_ns[line] * 1000
    is_alloc = np.array([n == "MemoryAllocation" for n in raw.em_name], bool)[md[rows]]
    df = pl.DataFrame({"row": rows, "time_ps": offset.astype(np.int64),
                       "activity": np.where(is_alloc, ALLOCATION, DEALLOCATION)})
    return pl.concat([df, _stat_columns(frame, rows).drop("row")], how="horizontal")


def _stat_columns(frame: XSpaceFrame, rows: np.ndarray) -> pl.DataFrame:
    """Event stats of `rows` as one column each (XProf reads event stats, then metadata stats:
    an event's own stat wins over its metadata's, and of several, the last). In numpy, one stat
    at a time: each owner's last stat, spread over the rows; null where the row has none, or
    where its stat holds another kind of value than the column's (a text column: "")."""
    n = len(rows)
    pos = np.full(frame.num_events, -1, np.int64)  # event row -> position in rows
    pos[rows] = np.arange(n)
    md = frame.events["metadata"].to_numpy()[rows]
    md_pos = np.full(len(frame.raw.em_name) + 1, -1, np.int64)  # metadata row -> its last stat
    texts = pl.Series("text", frame.texts + [""], dtype=pl.String)
    cols: dict[str, pl.Series] = {"row": pl.Series("row", rows)}
    for name in _INT_STATS + _TEXT_STATS + _FLOAT_STATS:
        kind = np.zeros(n, np.uint8)
        value = np.zeros(n, np.int64)
        text = np.full(n, -1, np.int64)
        has = np.zeros(n, bool)
        for owner in ("metadata", "event"):  # the event's own stat last: it wins
            own, k, v, t = frame.last_stats(owner, name)
            if not len(own):
                continue
            if owner == "metadata":
                md_pos[:] = -1
                md_pos[own] = np.arange(len(own))
                src = md_pos[md]
                at = np.flatnonzero(src >= 0)
                src = src[at]
            else:
                p = pos[own]
                keep = p >= 0
                at, src = p[keep], np.flatnonzero(keep)
            kind[at], value[at], text[at], has[at] = k[src], v[src], t[src], True
        if name in _TEXT_STATS:
            col = texts.gather(pl.Series(np.where(text >= 0, text, len(frame.texts))))
            valid = has
        elif name in _FLOAT_STATS:
            col = pl.Series(np.where(kind == KIND_DOUBLE, value, 0).view(np.float64))
            valid = has
        else:
            col = pl.Series(value)
            valid = has & ((kind == KIND_INT64) | (kind == KIND_UINT64))
        cols[name] = col.alias(name) if valid.all() else col.alias(name).scatter(np.flatnonzero(~valid), None)
    return pl.DataFrame(list(cols.values()))


def _memory_id_expr() -> pl.Expr:
    """XProf's memory id: the allocator name, else the device ordinal / index on host."""
    ordinal = pl.coalesce(pl.col("device_ordinal"), pl.col("index_on_host")).cast(pl.String)
    return pl.coalesce(pl.col("allocator_name"), ordinal, pl.lit(""))


def _memory_id(ev: pl.DataFrame) -> pl.Series:
    return ev.select(_memory_id_expr().alias("memory_id"))["memory_id"]


def memory_event_row(frame: XSpaceFrame, time_ps: int, activity: str, memory_id: str) -> int | None:
    """The row in `frame.events` of one timeline snapshot's memory event (its time, activity
    and memory id), for the trace viewer to select; None when the frame has no such event."""
    ev = memory_events(frame)
    if not len(ev):
        return None
    at = ev.filter((pl.col("time_ps") == time_ps) & (pl.col("activity") == activity) & (_memory_id_expr() == memory_id))
    return int(at["row"][0]) if len(at) else None


def _grouped_when_written(ev: pl.DataFrame) -> bool:
    return ev["group_id"].null_count() < len(ev)


def _group_ids(frame: XSpaceFrame, rows: np.ndarray, ev: pl.DataFrame) -> np.ndarray:
    """XProf's group id (step) of each memory event, -1 where it has none."""
    if _grouped_when_written(ev):
        return ev["group_id"].fill_null(-1).to_numpy()
    if not may_group(frame):  # no event of the plane can start a group
        return np.full(len(ev), -1, np.int64)
    grouped = group_events(frame)
    pos = np.full(frame.num_events, -1, np.int64)
    pos[grouped.rows] = np.arange(len(grouped.rows))
    p = pos[rows]
    return np.where(p >= 0, grouped.group[np.clip(p, 0, None)], -1)


# --- per allocator ----------------------------------------------------------------------------
@dataclass
class AllocatorProfile:
    """One memory id's snapshots (time-sorted), summary and breakdown at the peak."""

    memory_id: str
    snapshots: pl.DataFrame  # every event, time-sorted, steps fixed, deallocations filled in
    timeline: pl.DataFrame  # at most MAX_TIMELINE_SNAPSHOTS of them, for the chart
    peak_bytes_lifetime: int
    peak_stack_bytes: int
    peak_heap_bytes: int
    peak_free_bytes: int
    peak_fragmentation: float
    peak_in_use_bytes: int  # stack + heap at the peak
    peak_time_ps: int
    memory_capacity_bytes: int
    peak_step: int
    breakdown: pl.DataFrame  # active allocations at the peak (XProf's memory breakdown table)

    @property
    def num_allocations(self) -> int:
        """As XProf's summary card counts them: over the timeline it draws."""
        return int((self.timeline["activity"] == ALLOCATION).sum())

    @property
    def num_deallocations(self) -> int:
        return int((self.timeline["activity"] == DEALLOCATION).sum())

    @property
    def peak_index(self) -> int | None:
        """The timeline snapshot nearest the peak (where the chart marks it); None when empty."""
        times = self.timeline["time_ps"].to_numpy()
        return int(np.argmin(np.abs(times - self.peak_time_ps))) if len(times) else None

    def summary(self) -> dict[str, Any]:
        return {
            "num_allocations": self.num_allocations, "num_deallocations": self.num_deallocations,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "peak_heap_usage_bytes": self.peak_bytes_lifetime,
            "peak_bytes_in_use": self.peak_in_use_bytes, "peak_time_ps": self.peak_time_ps,
            "stack_reserved_bytes": self.peak_stack_bytes, "heap_allocated_bytes": self.peak_heap_bytes,
            "free_memory_bytes": self.peak_free_bytes, "fragmentation": self.peak_fragmentation,
            "peak_step": self.peak_step, "num_events": len(self.snapshots),
        }


_TIMELINE_COLUMNS = ["time_ps", "activity", "stack_bytes", "heap_bytes", "free_bytes", "fragmentation",
                     "peak_bytes_in_use", "requested_bytes", "allocation_bytes", "address", "tf_op",
                     "step_id", "region_type", "data_type", "shape"]


def _fix_steps(step: np.ndarray) -> np.ndarray:
    """Invalid (-1) steps become the previous valid step + 1 (0 before any)."""
    valid = step != -1
    idx = np.where(valid, np.arange(len(step)), -1)
    last = np.maximum.accumulate(idx) if len(idx) else idx
    prev = np.concatenate([[-1], last[:-1]]) if len(last) else last
    prev_step = np.where(prev >= 0, step[np.clip(prev, 0, None)], -1)
    return np.where(valid, step, prev_step + 1)


def _fill_deallocations(snap: pl.DataFrame) -> pl.DataFrame:
    """Deallocations take the op / region / type / shape of the allocation at their address."""
    act = snap["activity"].to_list()
    addr = snap["address"].to_list()
    cols = {c: snap[c].to_list() for c in ("tf_op", "region_type", "data_type", "shape")}
    open_at: dict[int, int] = {}
    for i, (a, ad) in enumerate(zip(act, addr)):
        if a == DEALLOCATION:
            j = open_at.pop(ad, None)
            if j is not None:
                for c in cols.values():
                    c[i] = c[j]
        elif ad not in open_at:
            open_at[ad] = i
    return snap.with_columns(*(pl.Series(k, v, dtype=pl.String) for k, v in cols.items()))


def _sample(snap: pl.DataFrame, limit: int) -> pl.DataFrame:
    """XProf's max box filter: the snapshot with the most stack + heap in each box."""
    n = len(snap)
    if n <= limit:
        return snap
    width = n // limit
    count1 = limit * (width + 1) - n
    in_use = (snap["stack_bytes"] + snap["heap_bytes"]).to_numpy()
    picks = []
    for w, cnt, start in ((width, count1, 0), (width + 1, limit - count1, width * count1)):
        if cnt <= 0:
            continue
        boxes = in_use[start:start + w * cnt].reshape(cnt, w)
        picks.append(start + np.arange(cnt) * w + boxes.argmax(axis=1))  # first maximum, as XProf
    return snap[np.concatenate(picks)]


def _breakdown(snap: pl.DataFrame, peak_step: int, peak_time: int, peak_heap: int,
               peak_stack: int) -> pl.DataFrame:
    """Allocations live at the peak in its step, plus the special rows, merged like XProf."""
    upto = snap.filter(pl.col("time_ps") <= peak_time)
    # XProf stops at the first snapshot after the peak time (snapshots are time-sorted).
    upto = upto.filter(pl.col("step_id") == peak_step)
    # Column lists, not a dict per row: a big host's peak step has ~100k events.
    live: dict[int, int] = {}  # address -> position in upto of its live allocation
    unmapped, unmapped_free = peak_heap, 0
    for i, (activity, address, nbytes) in enumerate(zip(upto["activity"].to_list(), upto["address"].to_list(),
                                                        upto["allocation_bytes"].to_list())):
        if activity == ALLOCATION:
            live[address] = i
            unmapped -= nbytes
        else:
            if live.pop(address, None) is None:
                unmapped_free += nbytes
            unmapped += nbytes
    unmapped -= unmapped_free
    kept = ["tf_op", "allocation_bytes", "requested_bytes", "region_type", "data_type", "shape", "step_id"]
    rows = (upto[list(live.values())] if live else upto.clear()).select(kept).to_dicts()
    if unmapped > 0:
        rows.append({"tf_op": "unused preallocated device memory", "allocation_bytes": unmapped,
                     "requested_bytes": unmapped, "region_type": "persist/dynamic",
                     "data_type": data_type_name(0), "shape": "unknown", "step_id": peak_step})
    if peak_stack > 0:
        rows.append({"tf_op": "stack", "allocation_bytes": peak_stack, "requested_bytes": peak_stack,
                     "region_type": "stack", "data_type": data_type_name(0), "shape": "unknown",
                     "step_id": peak_step})
    schema = {"tf_op": pl.String, "allocation_bytes": pl.Int64, "requested_bytes": pl.Int64,
              "region_type": pl.String, "data_type": pl.String, "shape": pl.String, "step_id": pl.Int64}
    df = pl.DataFrame(rows, schema=schema)
    keys = ["allocation_bytes", "requested_bytes", "tf_op", "region_type", "data_type", "shape"]
    return (df.group_by(keys).agg(pl.len().cast(pl.Int64).alias("occurrences"), pl.col("step_id").first())
            .sort(keys, descending=[True, True, False, False, False, False])
            .select("tf_op", "allocation_bytes", "requested_bytes", "occurrences", "region_type",
                    "data_type", "shape", "step_id"))


def _allocator(memory_id: str, ev: pl.DataFrame, max_snapshots: int) -> AllocatorProfile:
    # Summary: the last event in file order holding the largest stack + heap (XProf updates
    # its peak on >= while visiting lines and events in file order).
    in_use = (ev["stack_bytes"] + ev["heap_bytes"]).to_numpy()
    peak_at = int(len(in_use) - 1 - np.argmax(in_use[::-1]))
    peak = ev.row(peak_at, named=True)
    lifetime = int(ev["peak_bytes_in_use"][-1])

    snap = ev.with_columns(pl.int_range(pl.len()).alias("_order")).sort("time_ps", "_order").drop("_order")
    snap = snap.with_columns(step_id=pl.Series(_fix_steps(snap["step_id"].to_numpy()), dtype=pl.Int64))
    snap = _fill_deallocations(snap)
    timeline = _sample(snap, max_snapshots)
    total = (snap["stack_bytes"] + snap["heap_bytes"]).to_numpy()
    at_peak = np.flatnonzero(total == peak["stack_bytes"] + peak["heap_bytes"])
    peak_step = int(snap["step_id"][int(at_peak[-1])]) if len(at_peak) else 0
    breakdown = _breakdown(snap, peak_step, peak["time_ps"], peak["heap_bytes"], peak["stack_bytes"])
    return AllocatorProfile(
        memory_id=memory_id, snapshots=snap, timeline=timeline, peak_bytes_lifetime=lifetime,
        peak_stack_bytes=peak["stack_bytes"], peak_heap_bytes=peak["heap_bytes"],
        peak_free_bytes=peak["free_bytes"], peak_fragmentation=peak["fragmentation"],
        peak_in_use_bytes=peak["stack_bytes"] + peak["heap_bytes"], peak_time_ps=peak["time_ps"],
        memory_capacity_bytes=peak["stack_bytes"] + peak["heap_bytes"] + peak["free_bytes"],
        peak_step=peak_step, breakdown=breakdown)


@dataclass
class MemoryProfileResult:
    host: str
    allocators: dict[str, AllocatorProfile]  # sorted by memory id, as XProf's picker

    @property
    def memory_ids(self) -> list[str]:
        return list(self.allocators)

    def to_json(self) -> dict[str, Any]:
        def rows(df: pl.DataFrame) -> list[dict[str, Any]]:
            return df.to_dicts()
        return {"host": self.host, "allocators": {
            mid: {"summary": a.summary(), "timeline": rows(a.timeline.select(_TIMELINE_COLUMNS)),
                  "breakdown_at_peak": rows(a.breakdown)}
            for mid, a in self.allocators.items()}}

    def tables(self) -> dict[str, pl.DataFrame]:
        def tagged(attr: str, cols: list[str] | None = None) -> pl.DataFrame:
            parts = [getattr(a, attr).select(cols or pl.all()).insert_column(0, pl.lit(mid).alias("memory_id"))
                     for mid, a in self.allocators.items()]
            return pl.concat(parts) if parts else pl.DataFrame()
        summary = pl.DataFrame([{"memory_id": mid, **a.summary()} for mid, a in self.allocators.items()])
        return {"breakdown_at_peak": tagged("breakdown"), "summary": summary,
                "timeline": tagged("timeline", _TIMELINE_COLUMNS)}


def _memory_frame(run: RunData, host: str | None) -> tuple[XSpaceFrame, pl.DataFrame, np.ndarray | None]:
    """(frame, memory_events(frame), their steps when not _group_ids'): the host plane's memory
    events alone where that gives the same events and steps as the whole plane (a .xplane.pb host
    whose memory events carry their group ids, or whose plane names no group root, or a giant
    host: its steps from pieces of its threads); else the whole host plane, as XProf's grouping
    needs every event of it."""
    hf = run.host_file(host)
    try:
        sub = events_named(hf, schema.HOST_PLANE, MEMORY_EVENTS, current_progress())
    except UserError as e:
        run.unreadable[hf.host] = str(e)
        raise
    if sub is not None:
        ev = memory_events(sub)
        if not len(ev) or _grouped_when_written(ev) or not may_group(sub):
            return sub, ev, None
        pieces = giant_host.pieces(run, host)
        if pieces is not None:  # a giant host: the groups from its threads, a piece at a time
            groups = pieced_group_ids(hf, [p for p in pieces if p.kind == "threads"])
            return sub, ev, groups[ev["row"].to_numpy()]
    frame = run.frame(host, planes=[schema.HOST_PLANE])
    return frame, memory_events(frame), None


def pieced_group_ids(hf: HostFile, threads: list[Piece]) -> np.ndarray:
    """XProf's group id (-1: none) of each of the host plane's memory events, in file order (the
    rows of events_named's frame of them), from pieces of its threads: each piece's grouping
    extract keeps its memory events too, which take the label their ancestors hand down
    (group_extract.extract_with); the extracts are then grouped together, as the op stats do."""
    parts, at = [], []
    for piece in threads:
        frame = host_pieces.piece_frame(hf, piece)
        names = np.array([n in MEMORY_EVENTS for n in frame.raw.em_name] + [False])
        md = frame.events["metadata"].to_numpy().astype(np.int64)
        rows = np.flatnonzero(names[np.where(md >= 0, md, len(names) - 1)])
        part, pos = extract_with(frame, rows)
        parts.append(part)
        at.append(pos)
        del frame  # before the next piece is decoded
    if any(p.loop_ops for p in parts):  # XProf does not group a TF graph with loop ops
        return np.full(sum(len(pos) for pos in at), -1, np.int64)
    group, _ = groups(parts)
    offsets = np.cumsum([0] + [len(p.start) for p in parts[:-1]])
    found = [np.where(pos >= 0, group[np.clip(pos + off, 0, None)] if len(group) else -1, -1)
             for pos, off in zip(at, offsets.tolist())]
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)


def analyze(run: RunData, host: str | None = None, max_snapshots: int | str = MAX_TIMELINE_SNAPSHOTS,
            **_options) -> MemoryProfileResult:
    host = host or (run.hosts[0] if run.hosts else None)
    frame, ev, steps = _memory_frame(run, host)
    if len(ev) == 0:
        raise NoDataError("no memory events in this profile (the memory profile needs "
                          "MemoryAllocation / MemoryDeallocation events, e.g. from TensorFlow)")
    rows = ev["row"].to_numpy()
    ev_types = ev["data_type"].fill_null(0).to_numpy()
    ev = ev.with_columns(
        memory_id=_memory_id(ev),
        step_id=pl.Series(_group_ids(frame, rows, ev) if steps is None else steps, dtype=pl.Int64),
    ).select(
        "memory_id", "time_ps", "activity",
        pl.col("bytes_reserved").fill_null(0).alias("stack_bytes"),
        pl.col("bytes_allocated").fill_null(0).alias("heap_bytes"),
        pl.col("bytes_available").fill_null(0).alias("free_bytes"),
        pl.col("fragmentation").fill_null(0.0),
        pl.col("peak_bytes_in_use").fill_null(0),
        pl.col("requested_bytes").fill_null(0), pl.col("allocation_bytes").fill_null(0),
        pl.col("addr").fill_null(0).alias("address"),
        pl.col("tf_op").fill_null(""), "step_id", pl.col("region_type").fill_null(""),
        pl.col("shape").fill_null(""),
    )
    ev = ev.insert_column(ev.columns.index("shape"), _data_type_names(ev_types))
    limit = int(max_snapshots)
    allocators = {mid: _allocator(mid, part.drop("memory_id"), limit)
                  for (mid,), part in sorted(ev.partition_by("memory_id", as_dict=True, maintain_order=True).items())}
    return MemoryProfileResult(host or "", allocators)


def has_data(run: RunData) -> bool:
    """Whether the first host's plane names memory events (its metadata alone, for a .xplane.pb)."""
    if not run.hosts:
        return False
    frame = plane_metadata(run.host_file(run.hosts[0]), schema.HOST_PLANE)
    if frame is None:
        frame = run.frame(run.hosts[0], planes=[schema.HOST_PLANE])
    return any(n in MEMORY_EVENTS for n in frame.raw.em_name)
