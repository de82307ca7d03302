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
The table is built with numpy sorts and searches (no Python object per event): `src`, `dst` (event
positions in the caller's numbering), `kind` (FLOW_*) and `flow_id` (the id Chrome-trace flow
events bind on), sorted by (src, dst).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tputui.analysis.trace_kinds import KIND_RAW

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
        return _sorted_columns([pos[self.src], pos[self.dst], self.kind, self.category, self.flow_id])

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


def _sorted_columns(cols: list[np.ndarray]) -> FlowTable:
    """A FlowTable of the links in cols (src, dst, kind, cat, fid; emptied as they are used, so
    each column's old copy goes as its new one is made): sorted by (src, dst), one per pair."""
    keep = cols[0] != cols[1]
    if not keep.all():
        for k in range(5):
            cols[k] = cols[k][keep]
    src, dst = cols[0].astype(np.int64, copy=False), cols[1].astype(np.int64, copy=False)
    order = np.argsort(src * (int(dst.max(initial=0)) + 1) + dst, kind="stable")  # by (src, dst): positions >= 0
    del src, dst
    for k in range(5):
        cols[k] = cols[k][order]
    del order
    src, dst = cols[0], cols[1]
    if len(src) > 1:  # one link per (src, dst): the first rule that links them
        first = np.ones(len(src), bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        del src, dst
        if not first.all():
            for k in range(5):
                cols[k] = cols[k][first]
    out = [c.astype(t, copy=False) for c, t in zip(cols, (np.int64, np.int64, np.uint8, np.uint8, np.uint64))]
    cols.clear()
    return FlowTable(*out)


def flow_table(frame, source: np.ndarray, kind: np.ndarray) -> FlowTable:
    """The links between events whose frame rows are `source` (per event, as TraceEvents /
    TraceIndex hold them) and whose kind is `kind`; positions are indices into those arrays."""
    if frame is None or not len(source):
        return FlowTable.empty()
    names = set(frame.raw.sm_name)
    if not names & {"_p", "_c", "correlation_id", "flow"}:
        return FlowTable.empty()
    return link_ends(flow_ends(frame, event_positions(source, kind)))


def event_positions(source: np.ndarray, kind: np.ndarray):
    """frame rows -> the position of the raw event showing each (-1 when none), for events whose
    frame rows are `source` and kinds `kind`."""
    src_rows = np.asarray(source)
    if src_rows.dtype != np.int32:
        src_rows = src_rows.astype(np.int64, copy=False)
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
        j = np.searchsorted(rows_sorted, rows.astype(rows_sorted.dtype, copy=False))  # no copy of the events' rows
        jc = np.minimum(j, max(len(rows_sorted) - 1, 0))
        hit = (j < len(rows_sorted)) & (rows_sorted[jc] == rows) if len(rows_sorted) else np.zeros(len(rows), bool)
        return np.where(hit, jc if by_row is None else by_row[jc], -1)

    return position


@dataclass
class FlowEnds:
    """The ends links are made of, before linking: per rule, the (event position, start time,
    key...) of each event that can take part. Ends of several pieces of one host, their positions
    made the host's, concatenated (`joined`) and linked give the host's table (trace_pieces)."""

    producer: tuple[np.ndarray, ...] = ()  # pos, t, type, id of `_p` ends
    consumer: tuple[np.ndarray, ...] = ()  # pos, t, type, id of `_c` ends
    launch: tuple[np.ndarray, ...] = ()  # pos, t, correlation id, on a device plane
    xflow: tuple[np.ndarray, ...] = ()  # pos, t, the `flow` stat's raw value

    FIELDS = ("producer", "consumer", "launch", "xflow")

    def remapped(self, new_position) -> FlowEnds:
        """The same ends with positions mapped by `new_position` (old positions -> new)."""
        return FlowEnds(**{f: (new_position(c[0]), *c[1:]) if c else () for f in self.FIELDS
                           for c in (getattr(self, f),)})

    @staticmethod
    def joined(parts: list[FlowEnds]) -> FlowEnds:
        out = {}
        for f in FlowEnds.FIELDS:
            cols = [getattr(p, f) for p in parts if getattr(p, f)]
            out[f] = tuple(np.concatenate(c) for c in zip(*cols)) if cols else ()
        return FlowEnds(**out)


def flow_ends(frame, position) -> FlowEnds:
    """The ends of every rule's links among the events `position` places (frame row -> event
    position, -1 when not shown)."""
    names = frame.raw.sm_name
    out = FlowEnds()
    if "_p" in names:  # a piece of a host may hold one side only
        out.producer = _side(frame, position, "_p", "_pt")
    if "_c" in names:
        out.consumer = _side(frame, position, "_c", "_ct")
    if "correlation_id" in names:
        owner, ids = _int_stat(frame, "correlation_id")
        keep, pos, t = _placed(owner, position, frame)
        on_device = np.array([n.startswith("/device") for n in frame.raw.plane_name] + [False])
        out.launch = (pos, t, ids[keep], on_device[frame.events["plane"].to_numpy()[owner[keep]]])
    if "flow" in names:
        owner, value = _int_stat(frame, "flow")
        keep, pos, t = _placed(owner, position, frame)
        out.xflow = (pos, t, value[keep])
    return out


def link_ends(ends: FlowEnds) -> FlowTable:
    """The links the ends make, as one table."""
    found = (_producer_links(ends), _launch_links(ends), _xflow_links(ends))
    parts = [p for p in found if p is not None and len(p[0])]
    if not parts:
        return FlowTable.empty()
    cols = [np.concatenate(c) for c in zip(*parts)]
    del parts, found
    return _sorted_columns(cols)


# The links are numpy sorts and searches over the flow stats' rows: Polars' joins kept ~250 MB of
# a 10M-event profile's working memory in its allocator after they were done.
Links = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # src, dst, kind, cat, fid


def _int_stat(frame, name: str) -> tuple[np.ndarray, np.ndarray]:
    """owner (frame event row), value (int64 bits) of an event stat, metadata stats included
    (an event's own stat wins; then one row per owner, by owner)."""
    owner, value = frame.stat_arrays("event", name, "int")
    md_rows, md_vals = frame.stat_arrays("metadata", name, "int")
    if not len(md_rows):
        return owner, value
    # Events whose metadata has the stat, found through a per-metadata table (no frame-wide
    # join), each taking its metadata's value.
    n_md = len(frame.raw.em_name) + 1
    first = np.unique(md_rows, return_index=True)[1]  # a metadata row listed twice: its first value
    value_of = np.zeros(n_md, np.int64)
    has = np.zeros(n_md, bool)
    value_of[md_rows[first]], has[md_rows[first]] = md_vals[first], True
    ev_md = frame.events["metadata"].to_numpy()
    from_md = np.flatnonzero(has[ev_md])
    owner = np.concatenate((owner, from_md))
    value = np.concatenate((value, value_of[ev_md[from_md]]))
    keep = np.unique(owner, return_index=True)[1]  # the first row of each owner: its own stat
    return owner[keep], value[keep]


def _placed(owner: np.ndarray, position, frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kept stat rows, their event positions, their start times): the stats of shown events."""
    pos = position(owner)
    keep = np.flatnonzero(pos >= 0)
    return keep, pos[keep], frame.start_ps[owner[keep]]


def _groups(*columns: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A group id per producer and per consumer row, equal exactly where every key column is;
    columns: (producers' values, consumers' values) of each key. The ids number the producers'
    distinct keys (the consumers' are looked up: less to sort); a consumer whose key no producer
    has gets -1. Ids stay below GROUPS_MAX / (2 * producers + 1), so _link's keys fit an int64."""
    n = len(columns[0][0])
    p_group = np.zeros(n, np.int64)
    c_group = np.zeros(len(columns[0][1]), np.int64)
    for prod, cons in columns:
        values, code = np.unique(prod, return_inverse=True)
        p_group *= len(values)
        p_group += code.reshape(-1)
        del code
        at = np.minimum(np.searchsorted(values, cons), max(len(values) - 1, 0))
        found = (values[at] == cons) & (c_group >= 0) if len(values) else np.zeros(len(cons), bool)
        c_group = np.where(found, c_group * len(values) + at, -1)
        if (int(p_group.max(initial=0)) + 1) * (2 * n + 1) >= GROUPS_MAX:  # numbered again before it can overflow
            values, code = np.unique(p_group, return_inverse=True)
            p_group = code.reshape(-1)
            at = np.minimum(np.searchsorted(values, c_group), max(len(values) - 1, 0))
            c_group = np.where((c_group >= 0) & (values[at] == c_group), at, -1)
    return p_group, c_group


GROUPS_MAX = 1 << 62
LINK_BLOCK = 1 << 18  # consumers searched at a time (bounds the searches' working arrays)
_PASSES = 3  # at or before, strictly before, strictly after


def _sorted_search(keys: np.ndarray, values: np.ndarray, order: np.ndarray, side: str) -> np.ndarray:
    """np.searchsorted(keys, values, side), searched in `order` (values' ascending order: each
    search starts where the last ended) and given back in the values' own order."""
    out = np.empty(len(values), np.int32 if len(keys) < 2**31 else np.int64)
    out[order] = np.searchsorted(keys, values[order], side)  # type: ignore[call-overload]
    return out


def _link(prod: tuple, cons: tuple, kind: int) -> Links | None:
    """Each consumer linked to the latest producer of its group that starts no later than it
    (else the first one after it): an id a profile reuses links each use once, where a plain
    join would link every producer to every consumer.

    prod: (pos, t, group, cat, id) and cons: (pos, t, group) arrays; `group` (_groups) stands for
    the key a link must agree on, `id` is the flow id's bits, `cat` the producer's category.
    Ties follow each side's order by time (stable): at equal times the last producer before,
    the first after. The links: the consumers linked at or before their time, then strictly
    before (an in-out event is its own producer at its time), then after; each in time order."""
    p_pos, p_t, p_group, p_cat, p_id = prod
    c_pos, c_t, c_group = cons
    n = len(p_pos)
    if not (n and len(c_pos)):
        return None
    by_time = np.argsort(c_t, kind="stable")
    # One int64 per (group, time): the group times the number of time ranks, plus the time's
    # rank among the producers' distinct times (1, 3, 5, ...; a consumer's between or equal).
    times, rank = np.unique(p_t, return_inverse=True)
    span = 2 * len(times) + 1
    p_key = p_group * span
    rank = rank.reshape(-1)
    rank *= 2
    p_key += rank
    p_key += 1
    del rank
    c_key = _sorted_search(times, c_t, by_time, "left").astype(np.int64)
    same = times[np.minimum(c_key, len(times) - 1)] == c_t
    del times
    c_key *= 2
    c_key += same
    del same
    c_key += c_group * span
    order = np.argsort(p_key, kind="stable")
    p_key = p_key[order]
    # Each consumer's place among the producers' keys, searched in key order (fast), once: the
    # last producer at or before it ends at `right`, strictly before at `left`.
    by_key = np.argsort(c_key, kind="stable")
    right = _sorted_search(p_key, c_key, by_key, "right")
    left = _sorted_search(p_key, c_key, by_key, "left")
    del by_key
    by_time = by_time[c_group[by_time] >= 0]  # the others' keys have no producer
    if not len(by_time):  # no consumer has a producer: nothing to link (an ordinary profile)
        return None
    found: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(_PASSES)]
    for a in range(0, len(by_time), LINK_BLOCK):
        todo = by_time[a:a + LINK_BLOCK]
        for k, (place, shift) in enumerate(((right, -1), (left, -1), (right, 0))):
            j = place[todo] + shift
            jc = np.clip(j, 0, n - 1)
            src = order[jc]
            ok = (j >= 0) & (j < n) & (p_key[jc] // span == c_key[todo] // span) & (p_pos[src] != c_pos[todo])
            found[k].append((todo[ok], src[ok]))
            todo = todo[~ok]
            if not len(todo):
                break
    del p_key, c_key, order, by_time, todo, right, left
    pairs = [pair for per_pass in found for pair in per_pass]
    del found
    ci = np.concatenate([c for c, _ in pairs])
    pi = np.concatenate([p for _, p in pairs])
    del pairs
    return (p_pos[pi], c_pos[ci], np.full(len(ci), kind, np.uint8), p_cat[pi].astype(np.uint8),
            p_id[pi].view(np.uint64) & np.uint64(FLOW_ID_MASK))


def _context(values: np.ndarray) -> np.ndarray:
    """A context type value -> its index in CONTEXT_TYPES (0 when unknown)."""
    return np.where((values >= 0) & (values < len(CONTEXT_TYPES)), values, 0)


def _side(frame, position, id_stat: str, type_stat: str) -> tuple[np.ndarray, ...]:
    """(pos, t, type, id) per (id stat, type stat) pair of a shown event (type 0 when absent)."""
    owner, ids = _int_stat(frame, id_stat)
    t_owner, types = _int_stat(frame, type_stat)
    if np.array_equal(owner, t_owner):  # every id with its type, one each: the usual case
        typ = types
    else:
        left, right = _left_join(owner, t_owner)
        owner, ids = owner[left], ids[left]
        if len(types):
            typ = np.where(right >= 0, types[np.maximum(right, 0)], 0)
        else:  # ids without any type stat: type 0 (unmatched ends are ordinary)
            typ = np.zeros(len(ids), types.dtype)
    keep, pos, t = _placed(owner, position, frame)
    return pos, t, typ[keep], ids[keep]


def _producer_links(ends: FlowEnds) -> Links | None:
    if not ends.producer or not ends.consumer:
        return None
    p_pos, p_t, p_type, p_id = ends.producer
    c_pos, c_t, c_type, c_id = ends.consumer
    p_group, c_group = _groups((p_type, c_type), (p_id, c_id))
    del c_type, c_id
    p_cat = _context(p_type).astype(np.uint8)
    del p_type
    return _link((p_pos, p_t, p_group, p_cat, p_id), (c_pos, c_t, c_group), FLOW_PRODUCER)


def _left_join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs of a left join on equal owners: each left row with every right row of its owner
    (in right order), or with -1 when there is none; in left order."""
    order = np.argsort(right, kind="stable")
    rs = right[order]
    lo = np.searchsorted(rs, left, "left")
    count = np.searchsorted(rs, left, "right") - lo
    reps = np.maximum(count, 1)
    li = np.repeat(np.arange(len(left)), reps)
    within = np.arange(len(li)) - np.repeat(np.cumsum(reps) - reps, reps)
    at = np.minimum(np.repeat(lo, reps) + within, max(len(rs) - 1, 0))
    ri = np.where(np.repeat(count, reps) > 0, order[at] if len(rs) else -1, -1)
    return li, ri


def _launch_links(ends: FlowEnds) -> Links | None:
    if not ends.launch or not len(ends.launch[0]):
        return None
    pos, t, ids, dev = ends.launch
    h, d = np.flatnonzero(~dev), np.flatnonzero(dev)
    h_group, d_group = _groups((ids[h], ids[d]))
    cat = np.full(len(h), CONTEXT_TYPES.index("gpu_launch"), np.int64)
    return _link((pos[h], t[h], h_group, cat, ids[h]), (pos[d], t[d], d_group), FLOW_GPU_LAUNCH)


def _xflow_links(ends: FlowEnds) -> Links | None:
    if not ends.xflow or not len(ends.xflow[0]):
        return None
    pos, t, value = ends.xflow
    v = value.view(np.uint64)
    direction = v & np.uint64(3)
    ids = ((v >> np.uint64(2)) & np.uint64(FLOW_ID_MASK)).view(np.int64)
    cat = (v >> np.uint64(58)).view(np.int64)
    out, inn = np.flatnonzero(direction & np.uint64(2)), np.flatnonzero(direction & np.uint64(1))
    o_group, i_group = _groups((ids[out], ids[inn]))
    return _link((pos[out], t[out], o_group, _context(cat[out]), ids[out]), (pos[inn], t[inn], i_group), FLOW_XFLOW)
