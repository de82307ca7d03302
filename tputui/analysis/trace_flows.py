"""Flow arrows of the trace viewer: which shown events are linked, as one columnar table.

XProf links events before it converts a host (tsl's `AddFlowsToXplane`, run by
`PreprocessSingleHostXSpace`), then draws an arrow per link:

* producer -> consumer: an event with `_p` (producer id) and `_pt` (its context type) feeds the
  events whose `_c` / `_ct` are the same id and type (each consumer from the latest such producer
  before it, should a profile reuse an id) (a host launch `DoEnqueueProgram` -> the
  device's `XLA Modules` event, `TfrtTpuLoadedExecutable::Execute` -> `DoEnqueueProgram`, ...);
* GPU launch: a host-plane event with a `correlation_id` -> the device-plane events with that id
  (`cuLaunchKernel` -> the kernel);
* an XFlow `flow` stat already in the file: one uint64 packing direction (bits 0-1: 1 in, 2 out,
  3 in-out), id (bits 2-57) and category (bits 58-63); out / in-out events feed in / in-out
  events of the same id.

Only events the trace viewer shows straight from the file (TraceEvents.kind == KIND_RAW) take
part: derived events point at a covered op through `source` and would borrow its links.
The table is built with array joins (no Python object per event): `src`, `dst` (event
positions in the caller's numbering), `kind` (FLOW_*) and `flow_id` (the id Chrome-trace flow
events bind on), sorted by (src, dst).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from tputui.analysis.trace_events import KIND_RAW

FLOW_PRODUCER, FLOW_GPU_LAUNCH, FLOW_XFLOW = 0, 1, 2
FLOW_KINDS = {FLOW_PRODUCER: "producer -> consumer", FLOW_GPU_LAUNCH: "GPU launch (correlation id)",
              FLOW_XFLOW: "flow"}
FLOW_NAMES = {FLOW_PRODUCER: "producer_consumer", FLOW_GPU_LAUNCH: "gpu_launch", FLOW_XFLOW: "flow"}  # exported `name`
# XProf's ContextType names (xplane_schema.cc GetContextTypeString), the `cat` of exported flows.
CONTEXT_TYPES = ("", "", "tf_exec", "tfrt_exec", "batch_sched", "PjRt", "as_batch_sched", "tfrt_rt", "tpu_embed",
                 "gpu_launch", "batcher", "tpu_stream", "tpu_launch", "pathways_exec", "pjrt_library_call",
                 "threadpool_event")
FLOW_ID_MASK = (1 << 56) - 1
MAX_PARTNERS = 256  # partners listed / highlighted for one event (a producer may feed thousands)


@dataclass(frozen=True)
class FlowTable:
    """Links between events: row k is src[k] -> dst[k], sorted by (src, dst)."""

    src: np.ndarray  # int64 event positions
    dst: np.ndarray
    kind: np.ndarray  # uint8 FLOW_*
    category: np.ndarray  # uint8 context type (an index into CONTEXT_TYPES, 0 when unknown)
    flow_id: np.ndarray  # uint64: one id per link group (the producer's key)

    def __len__(self) -> int:
        return len(self.src)

    @staticmethod
    def empty() -> FlowTable:
        z = np.zeros(0, np.int64)
        return FlowTable(z, z, np.zeros(0, np.uint8), np.zeros(0, np.uint8), np.zeros(0, np.uint64))

    def remap(self, positions: np.ndarray) -> FlowTable:
        """The same links with event numbers mapped through `positions` (old -> new), re-sorted."""
        if not len(self):
            return self
        pos = np.asarray(positions, np.int64)
        return _sorted(pos[self.src], pos[self.dst], self.kind, self.category, self.flow_id)

    def outgoing(self, event: int) -> np.ndarray:
        """Rows of the links leaving `event`."""
        a, b = np.searchsorted(self.src, [event, event + 1])
        return np.arange(a, b)

    def incoming(self, event: int) -> np.ndarray:
        """Rows of the links arriving at `event`."""
        rows = np.flatnonzero(self.dst == event)  # one vectorized pass (no second sorted copy kept)
        return rows

    def partners(self, event: int, limit: int = MAX_PARTNERS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(partner events, link rows, outgoing?) of `event`: where it comes from first, then
        where it goes, each in event order; at most `limit`."""
        inc = self.incoming(event)[:limit]
        out = self.outgoing(event)[: max(limit - len(inc), 0)]
        rows = np.concatenate((inc, out))
        ev = np.concatenate((self.src[inc], self.dst[out]))
        return ev, rows, np.concatenate((np.zeros(len(inc), bool), np.ones(len(out), bool)))


def _sorted(src, dst, kind, cat, fid) -> FlowTable:
    keep = src != dst
    src, dst, kind, cat, fid = src[keep], dst[keep], kind[keep], cat[keep], fid[keep]
    order = np.lexsort((dst, src))
    src, dst, kind, cat, fid = src[order], dst[order], kind[order], cat[order], fid[order]
    if len(src) > 1:  # one link per (src, dst): the first rule that links them
        first = np.concatenate(([True], (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])))
        src, dst, kind, cat, fid = src[first], dst[first], kind[first], cat[first], fid[first]
    return FlowTable(src.astype(np.int64), dst.astype(np.int64), kind.astype(np.uint8), cat.astype(np.uint8),
                     fid.astype(np.uint64))


def flow_table(frame, source: np.ndarray, kind: np.ndarray) -> FlowTable:
    """The links between events whose frame rows are `source` (per event, as TraceEvents /
    TraceIndex hold them) and whose kind is `kind`; positions are indices into those arrays."""
    if frame is None or not len(source):
        return FlowTable.empty()
    names = set(frame.raw.sm_name)
    if not names & {"_p", "_c", "correlation_id", "flow"}:
        return FlowTable.empty()
    src_rows = np.asarray(source, np.int64)
    is_raw = np.asarray(kind) == KIND_RAW
    by_row: np.ndarray | None
    if is_raw.all() and (len(src_rows) < 2 or bool((src_rows[1:] > src_rows[:-1]).all())):
        by_row, rows_sorted = None, src_rows  # raw events in frame order: a row's position is its index
    else:
        raw = np.flatnonzero(is_raw)
        by_row = raw[np.argsort(src_rows[raw], kind="stable")]
        rows_sorted = src_rows[by_row]

    def position(rows: np.ndarray) -> np.ndarray:
        """Event position of each frame row, -1 when the trace viewer does not show it."""
        j = np.searchsorted(rows_sorted, rows)
        jc = np.minimum(j, max(len(rows_sorted) - 1, 0))
        hit = (j < len(rows_sorted)) & (rows_sorted[jc] == rows) if len(rows_sorted) else np.zeros(len(rows), bool)
        return np.where(hit, jc if by_row is None else by_row[jc], -1)

    found = (_producer_links(frame, position), _launch_links(frame, position), _xflow_links(frame, position))
    parts = [p for p in found if p is not None and p.height]
    if not parts:
        return FlowTable.empty()
    df = pl.concat(parts)
    return _sorted(df["src"].to_numpy(), df["dst"].to_numpy(), df["kind"].to_numpy(), df["cat"].to_numpy(),
                   df["fid"].to_numpy())


def _int_stat(frame, name: str) -> pl.DataFrame:
    """owner (frame event row), value (int64 bits) of an event stat, metadata stats included
    (an event's own stat wins)."""
    # The plain columns (stat_arrays), not stat_values' memoized table: at 10M events the flow
    # stats' tables are ~200 MB the frame would keep.
    ev = pl.DataFrame(dict(zip(("owner", "value"), frame.stat_arrays("event", name, "int"))),
                      schema={"owner": pl.Int64, "value": pl.Int64})
    md = pl.DataFrame(dict(zip(("md", "mval"), frame.stat_arrays("metadata", name, "int"))),
                      schema={"md": pl.Int64, "mval": pl.Int64})
    if md.height:
        # Events whose metadata has the stat, found through a per-metadata table (no frame-wide
        # join: at 10M events that cost ~200 MB), each taking its metadata's value.
        n_md = len(frame.raw.em_name) + 1
        md_rows, md_vals = md["md"].to_numpy().astype(np.int64), md["mval"].to_numpy()
        first = np.unique(md_rows, return_index=True)[1]  # a metadata row listed twice: its first value
        value_of = np.zeros(n_md, np.int64)
        has = np.zeros(n_md, bool)
        value_of[md_rows[first]], has[md_rows[first]] = md_vals[first], True
        ev_md = frame.events["metadata"].to_numpy()
        owners = np.flatnonzero(has[ev_md])
        from_md = pl.DataFrame({"owner": owners, "value": value_of[ev_md[owners]]})
        ev = pl.concat([ev.with_columns(pl.col("owner").cast(pl.Int64)), from_md]).unique("owner", keep="first")
    return ev.with_columns(pl.col("owner").cast(pl.Int64))


def _placed(df: pl.DataFrame, position, frame) -> pl.DataFrame:
    """The stat rows of shown events, with their position and start time (`t`)."""
    owner = df["owner"].to_numpy() if df.height else np.zeros(0, np.int64)
    pos = position(owner) if df.height else np.zeros(0, np.int64)
    return (df.with_columns(pos=pl.Series(pos, dtype=pl.Int64), t=pl.Series(frame.start_ps[owner], dtype=pl.Int64))
            .filter(pl.col("pos") >= 0))


def _link(prod: pl.DataFrame, cons: pl.DataFrame, on: list[str], kind: int, cat: pl.Expr) -> pl.DataFrame:
    """Each consumer linked to the latest producer of its key that starts no later than it (else
    the first one after it): an id a profile reuses links each use once, where a plain join
    would link every producer to every consumer."""
    if not (prod.height and cons.height):
        return pl.DataFrame()
    p = prod.rename({"pos": "src"}).sort("t")
    c = cons.rename({"pos": "dst"}).sort("t")
    found, todo = [], c
    # Latest producer at or before, then strictly before (an in-out event is its own producer at
    # its time), then the first after; each pass takes the consumers the previous left unlinked.
    passes: tuple[tuple[Literal["backward", "forward"], bool], ...] = (
        ("backward", True), ("backward", False), ("forward", False))
    for strategy, exact in passes:
        j = todo.join_asof(p, on="t", by=on, strategy=strategy, allow_exact_matches=exact, check_sortedness=False)
        ok = pl.col("src").is_not_null() & (pl.col("src") != pl.col("dst"))
        found.append(j.filter(ok))
        todo = j.filter(~ok.fill_null(False)).select(c.columns)
        if not todo.height:
            break
    j = pl.concat(found, how="diagonal_relaxed")
    fid = pl.col(on[-1]).reinterpret(signed=False) & FLOW_ID_MASK  # int64 bits of a uint64 id
    return j.select(pl.col("src"), pl.col("dst"), kind=pl.lit(kind, pl.UInt8), cat=cat.cast(pl.UInt8), fid=fid)


def _producer_links(frame, position) -> pl.DataFrame | None:
    if "_p" not in frame.raw.sm_name or "_c" not in frame.raw.sm_name:
        return None

    def side(id_stat: str, type_stat: str) -> pl.DataFrame:
        ids = _int_stat(frame, id_stat).rename({"value": "id"})
        types = _int_stat(frame, type_stat).rename({"value": "type"})
        return _placed(ids.join(types, on="owner", how="left").with_columns(pl.col("type").fill_null(0)), position,
                       frame)

    cat = pl.when(pl.col("type").is_between(0, len(CONTEXT_TYPES) - 1)).then(pl.col("type")).otherwise(0)
    return _link(side("_p", "_pt").drop("owner"), side("_c", "_ct").drop("owner"), ["type", "id"], FLOW_PRODUCER, cat)


def _launch_links(frame, position) -> pl.DataFrame | None:
    if "correlation_id" not in frame.raw.sm_name:
        return None
    st = _placed(_int_stat(frame, "correlation_id").rename({"value": "id"}), position, frame)
    if not st.height:
        return None
    plane_names = np.array(frame.raw.plane_name + [""], dtype=object)
    on_device = np.array([str(n).startswith("/device") for n in plane_names])
    ev_plane = frame.events["plane"].to_numpy()
    dev = on_device[ev_plane[st["owner"].to_numpy()]]
    st = st.with_columns(dev=pl.Series(dev))
    host, device = st.filter(~pl.col("dev")).select("id", "pos", "t"), st.filter(pl.col("dev")).select("id", "pos", "t")
    return _link(host, device, ["id"], FLOW_GPU_LAUNCH, pl.lit(CONTEXT_TYPES.index("gpu_launch")))


def _xflow_links(frame, position) -> pl.DataFrame | None:
    if "flow" not in frame.raw.sm_name:
        return None
    st = _placed(_int_stat(frame, "flow"), position, frame)
    if not st.height:
        return None
    v = st["value"].to_numpy().view(np.uint64)
    direction = (v & np.uint64(3)).astype(np.uint8)
    st = st.with_columns(id=pl.Series((v >> np.uint64(2)) & np.uint64(FLOW_ID_MASK)),
                         cat=pl.Series((v >> np.uint64(58)).astype(np.uint8)), dir=pl.Series(direction))
    out = st.filter((pl.col("dir") & 2) != 0).select("id", "pos", "t", "cat")
    inn = st.filter((pl.col("dir") & 1) != 0).select("id", "pos", "t")
    cat = pl.when(pl.col("cat") < len(CONTEXT_TYPES)).then(pl.col("cat")).otherwise(0)
    return _link(out, inn, ["id"], FLOW_XFLOW, cat)
