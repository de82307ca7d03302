"""XProf's event grouping: which step (group) each host event belongs to.

XProf (xla/tsl/profiler/utils/group_events.cc) builds an event forest from the host threads:
events nest per thread; producer/consumer stats (`_p`/`_pt` -> `_c`/`_ct`) link threads unless
both sides of one id have 64+ events; ExecutorState::Process links to IteratorGetNextOp by
(id, iter_num). Root events (`_r`, level = its value; legacy `TraceContext`) are taken by level
(high first), then time; each root not already reached starts a group that spreads to everything it
reaches. `group_events` is the one whole-host pass over a frame's host events, memoized per frame;
`event_grouping.host_grouping` distills it into the small per-group summary the op-stats map, the
step engines and the trace viewer share (a giant host read in pieces gets the same summary from
its threads' extracts, group_extract.py). Host steps (steps.py) and the memory profile read the
per-event groups.

XProf's grouping facts, each read in its source and checked against XProf 2.24.2's converter on
tests/fixtures/grouping/orbax_serving (scripts/make_grouping_fixture.py), op-stats and trace side:

fact               value                                            where XProf / XLA has it
-----------------  -----------------------------------------------  --------------------------------------
roots by name      `ProcessBatch` (level 2), `OrbaxServing::         preprocess_xplane.cc (root mutators),
                   ProcessBatch` (2; enum kOrbaxProcessBatch),       xplane_schema.cc (enum -> name),
                   `BatchingSessionRun` (1); legacy `TraceContext`   group_events.cc (GroupingEventStats)
                   (1); else an `_r` stat > 0
launch tied to a   `DoEnqueueProgram` only; `DoEnqueueContinuation-  preprocess_xplane.cc (kTpuLaunch
device module      Program` gets its run id masked, no link           producer: DoEnqueueProgram only)
run-id mask        host launches: run_id & (2**27 - 1); the device   preprocess_xplane.h kRunIdMask,
                   `XLA Modules` run id as recorded                  HostRunIdMutator, TpuModuleLineMutator

Not reproduced: the links XProf's preprocessing adds as producer/consumer stats before grouping
(DoEnqueueProgram -> CompleteCallbacks, ExecutorState::Process -> TpuExecuteOp, EnqueueRequestLocked
-> *Request queues): those consumers stay in the group their own thread gives them.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from tputui.analysis.nesting import nest_parents, spread_min
from tputui.data import schema
from tputui.data.xspace import XSpaceFrame

IMPLICIT_ROOTS = {"FunctionRun", "SessionRun", "RunGraph", "ExecutorState::Process"}
TF_DATA_FUNCTION_RUNS = {
    "InstantiatedCapturedFunction::Run", "InstantiatedCapturedFunction::RunAsync",
    "InstantiatedCapturedFunction::RunInstantiated", "InstantiatedCapturedFunction::RunWithBorrowedArgs",
}
LOOP_OPS = {"WhileOp-EvalCond", "WhileOp-StartBody", "ForOp", "ParallelForOp", "ForeverOp"}
ITERATOR_GET_NEXT = {"IteratorGetNextOp::DoCompute", "IteratorGetNextAsOptionalOp::DoCompute"}
_MAX_FANOUT = 64  # XProf skips a producer/consumer id with 64+ events on both sides

GROUP_STATS = ["_r", "step_num", "iter_num", "_p", "_pt", "_c", "_ct", "id", "correlation_id",
                "is_async", "graph_type"]


@dataclass
class GroupedEvents:
    """XProf's grouping of one frame's host events into steps (groups); arrays are parallel.
    `rows` and `end` are built when first read: the step engine reads neither for every event."""
    row_source: np.ndarray | slice  # event row in the frame of each position (a slice: one block)
    start: np.ndarray  # ps
    duration: np.ndarray  # ps
    name_idx: np.ndarray  # index into `event_names`
    event_names: list[str]
    group: np.ndarray  # group id, -1 ungrouped
    names: dict[int, str]  # group id -> name ("train 3")
    starter: dict[int, int]  # group id -> index (into the arrays) of the root that started it
    named_roots: np.ndarray  # bool: roots that named their group (non-implicit starters)
    parent: np.ndarray  # nesting parent (index into the arrays), -1 for none (all -1 without groups)
    step_nums: dict[int, int | None] = field(default_factory=dict)  # group id -> its root's context step number
    enabled: bool = True  # False: XProf does not group this space at all (TF loop ops)
    roots: Roots | None = None  # each group's root as a candidate rank (None: no candidates read)

    @cached_property
    def rows(self) -> np.ndarray:
        src = self.row_source
        return np.arange(src.start, src.stop, dtype=np.int64) if isinstance(src, slice) else src

    @cached_property
    def end(self) -> np.ndarray:
        return self.start + self.duration

    def rows_at(self, where: np.ndarray) -> np.ndarray:
        """The event rows of positions `where` (a bool mask or indices)."""
        pos = np.flatnonzero(where) if where.dtype == bool else where
        src = self.row_source
        return pos.astype(np.int64) + src.start if isinstance(src, slice) else src[pos]

    @classmethod
    def empty(cls, event_names=None, enabled: bool = True) -> GroupedEvents:
        z = np.zeros(0, np.int64)
        return cls(z, z, z, z, event_names or [], z, {}, {}, np.zeros(0, bool), z, {}, enabled)


# The facts of the table above, for every module that groups or ties device events to groups.
ROOT_LEVEL_BY_NAME = {"ProcessBatch": 2, "OrbaxServing::ProcessBatch": 2, "BatchingSessionRun": 1}
LEGACY_ROOT = "TraceContext"  # a root of level 1 without an `_r` stat
LAUNCH_EVENT = "DoEnqueueProgram"
RUN_ID_MASK = (1 << 27) - 1


class Sparse:
    """One event stat over the grouped events, kept sparse: positions (sorted) and int values
    (text values as text ids). Most stats sit on few events."""

    def __init__(self, pos: np.ndarray, val: np.ndarray):
        if len(pos) > 1 and not bool((pos[1:] >= pos[:-1]).all()):  # stats come in event order
            order = np.argsort(pos, kind="stable")
            pos, val = pos[order], val[order]
        self.pos, self.val = pos, val

    def lookup(self, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(present, value) at positions `where`."""
        where = np.asarray(where, np.int64)
        if len(self.pos) == 0:
            return np.zeros(len(where), bool), np.zeros(len(where), np.int64)
        i = np.clip(np.searchsorted(self.pos, where), 0, len(self.pos) - 1)
        has = self.pos[i] == where
        return has, np.where(has, self.val[i], 0)

    def get(self, where: int) -> int | None:
        i = int(np.searchsorted(self.pos, where))
        return int(self.val[i]) if i < len(self.pos) and self.pos[i] == where else None


def _sparse_stats(frame: XSpaceFrame, rows: np.ndarray | slice, n: int, names: list[str]) -> dict[str, Sparse]:
    """{name: Sparse} for event stats of the `n` events `rows` (positions index `rows`)."""
    out = {}
    for name in names:
        own, val = frame.stat_arrays("event", name, "any")
        if isinstance(rows, slice):
            p = own - rows.start
            ok = (p >= 0) & (p < n)
        else:
            i = np.clip(np.searchsorted(rows, own), 0, max(len(rows) - 1, 0))
            ok = rows[i] == own if len(rows) else np.zeros(len(own), bool)
            p = i
        out[name] = Sparse(p[ok].astype(np.int64, copy=False), val[ok].astype(np.int64, copy=False))
    return out


def _sorted_longest_first(s: np.ndarray, e: np.ndarray) -> bool:
    if len(s) < 2:
        return True
    ok = s[1:] >= s[:-1]
    if not ok.all():
        return False
    tie = np.flatnonzero(s[1:] == s[:-1])
    return not (e[tie + 1] > e[tie]).any()


def _intersect_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Values of sorted, duplicate-free `a` also in sorted `b` (a binary search, no re-sort)."""
    if not len(a) or not len(b):
        return a[:0]
    i = np.minimum(np.searchsorted(b, a), len(b) - 1)
    return a[b[i] == a]


def _pair_codes(a: np.ndarray, b: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct (a, b) pairs, code of each pair): np.unique(axis=0) without its row sort."""
    if not len(a):
        return 0, np.zeros(0, np.int64)
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    new = np.ones(len(a), bool)
    new[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    codes = np.empty(len(a), np.int64)
    codes[order] = np.cumsum(new) - 1
    return int(new.sum()), codes


_MEMO: weakref.WeakKeyDictionary[XSpaceFrame, GroupedEvents] = weakref.WeakKeyDictionary()
_MEMO_LOCK = threading.Lock()


def group_events(frame: XSpaceFrame, plane: int | None = None) -> GroupedEvents:
    """Assign XProf's group ids to the events of the host plane (`/host:CPU` by default). The host
    plane's grouping is computed once per frame and shared by every caller (it lives as long as
    the frame)."""
    if plane is not None:
        return _group_events(frame, plane)
    with _MEMO_LOCK:
        hit = _MEMO.get(frame)
    if hit is None:
        hit = _group_events(frame, None)
        with _MEMO_LOCK:
            hit = _MEMO.setdefault(frame, hit)
    return hit


def _group_events(frame: XSpaceFrame, plane: int | None) -> GroupedEvents:
    names = frame.raw.em_name + [""]
    if any(nm in LOOP_OPS for nm in frame.raw.em_name):
        # XProf does not group TF graphs with loop ops (While/For) at all.
        return GroupedEvents.empty(names, enabled=False)
    ev = events_of(frame, plane, stats=may_group(frame, plane))
    if ev is None:
        return GroupedEvents.empty(names)
    if not ev.st:  # no root can exist: every event ungrouped, no stats, nesting or flows built
        none = np.full(len(ev.start), -1, np.int32)
        return GroupedEvents(ev.rows, ev.start, ev.dur, ev.md_i, ev.names, none, {}, {}, np.zeros(len(none), bool), none)
    parent, down_order = nesting(ev)
    group, group_names, starter, named, roots = label_groups(ev, parent, down_order)
    step_nums = {gid: context_step_num(r, ev.st, parent) for gid, r in starter.items()}
    return GroupedEvents(ev.rows, ev.start, ev.dur, ev.md_i, ev.names, group, group_names, starter, named, parent,
                         step_nums, roots=roots)


# What can start a group: `_r` stats and these event names (label_groups).
ROOT_NAMES = frozenset(set(ROOT_LEVEL_BY_NAME) | {LEGACY_ROOT, "ExecutorState::Process"})


def may_group(frame: XSpaceFrame, plane: int | None = None) -> bool:
    """Whether the host plane's metadata allows any group at all: without a root there is none
    (the plane's own fields tell, without its lines: a giant host's threads then need no extract)."""
    raw = frame.raw
    hp = frame.plane_index(schema.HOST_PLANE) if plane is None else plane
    if hp is None:
        return False
    stats = {raw.sm_name[i] for i in np.flatnonzero(raw.sm_plane == hp).tolist()}
    names = {raw.em_name[i] for i in np.flatnonzero(raw.em_plane == hp).tolist()}
    return "_r" in stats or bool(names & ROOT_NAMES)


def events_of(frame: XSpaceFrame, plane: int | None = None, stats: bool = True,
              stat_names: list[str] | None = None) -> Events | None:
    """The host plane's events as grouping reads them (None: no plane, or no events); stats=False
    leaves their stats out (`st` empty), `stat_names` reads only those."""
    if plane is None:
        plane = frame.plane_index(schema.HOST_PLANE)
    raw = frame.raw
    names = raw.em_name + [""]
    if plane is None:
        return None
    spans = [frame.line_events(ln) for ln in frame.lines_of(plane)]
    spans = [sl for sl in spans if sl.stop > sl.start]
    if not spans:
        return None
    md_all = frame.events["metadata"].to_numpy()
    rows: np.ndarray | slice
    if all(b.start == a.stop for a, b in zip(spans, spans[1:])):  # the plane's lines are one block: slice, don't copy
        rows = slice(spans[0].start, spans[-1].stop)
        n = rows.stop - rows.start
    else:
        rows = np.concatenate([np.arange(sl.start, sl.stop, dtype=np.int64) for sl in spans])
        n = len(rows)
    start = frame.start_ps[rows]
    dur = raw.event_duration_ps[rows]
    line = raw.event_line[rows]
    md_i = md_all[rows]
    if len(md_i) and int(md_i.min()) < 0:  # an unknown metadata id names "" (usually none: keep the view)
        md_i = np.where(md_i >= 0, md_i, len(names) - 1)
    st = _sparse_stats(frame, rows, n, stat_names or GROUP_STATS) if stats else {}
    return Events(rows, start, dur, line, md_i, names, st, frame.text)


@dataclass
class Events:
    """The events grouping reads, in (line, event) order; `st` positions index these arrays."""
    rows: np.ndarray | slice  # their rows in the frame
    start: np.ndarray
    dur: np.ndarray
    line: np.ndarray
    md_i: np.ndarray  # index into names
    names: list[str]
    st: dict[str, Sparse]
    text: Callable[[int], str]  # the text of a text-valued stat


def nesting(ev: Events) -> tuple[np.ndarray, np.ndarray | None]:
    """(nesting parent of each event, -1 for none; an order with parents before children, None
    when the events' own order is one): per thread, async events left out, as XProf nests."""
    start, dur, line, st = ev.start, ev.dur, ev.line, ev.st
    n = len(start)
    # Per-thread nesting (async events stay out of it), in (start, -end) order per line.
    parent = np.full(n, -1, np.int32)
    async_pos = st["is_async"].pos[st["is_async"].val != 0]
    is_async = np.zeros(n, bool)
    is_async[async_pos] = True
    line_bounds = np.concatenate([[0], np.flatnonzero(line[1:] != line[:-1]) + 1, [n]])
    # The order labels spread down in: parents before children. A sorted line's own order is one;
    # an unsorted line contributes its sorted order (only needed when some line is unsorted).
    walk: list[np.ndarray | None] = []  # None: the line's own order
    for a, b in zip(line_bounds[:-1].tolist(), line_bounds[1:].tolist()):
        s_ = start[a:b]
        e_ = s_ + dur[a:b]
        seg = None
        if not _sorted_longest_first(s_, e_):  # files are usually sorted already
            seg = a + np.lexsort((-e_, s_))
        walk.append(seg)
        if len(async_pos) and is_async[a:b].any():
            seg = (np.arange(a, b) if seg is None else seg)
            seg = seg[~is_async[seg]]
        if seg is None:
            p = nest_parents(s_, e_)
            parent[a:b] = np.where(p >= 0, p + a, -1)
        elif len(seg):
            p = nest_parents(start[seg], start[seg] + dur[seg])
            parent[seg] = np.where(p >= 0, seg[np.clip(p, 0, None)], -1)
    down_order = None
    if any(w is not None for w in walk):
        down_order = np.concatenate([np.arange(a, b) if w is None else w for a, b, w in
                                     zip(line_bounds[:-1].tolist(), line_bounds[1:].tolist(), walk)])
    del walk
    return parent, down_order


def label_groups(ev: Events, parent: np.ndarray, down_order: np.ndarray | None):
    """(group id per event, -1 none; group names; group -> starter position; named roots; Roots),
    from the roots, the nesting parents and the flows / links between the events (see module doc)."""
    start, md_i, names, st = ev.start, ev.md_i, ev.names, ev.st
    n = len(start)
    name_index: dict[str, list[int]] = {}
    for i, nm in enumerate(names):
        name_index.setdefault(nm, []).append(i)

    def named_at(where: np.ndarray, *wanted: str) -> np.ndarray:
        idx = [i for w in wanted for i in name_index.get(w, [])]
        table = np.zeros(len(names), bool)
        table[idx] = True
        return table[md_i[where]]

    # Flow edges: producer (type, id) -> consumers (type, id).
    flow = _flow_edges(st)

    # Inter-thread: the last ExecutorState::Process with (id, iter_num) -> IteratorGetNext ops.
    keyed = _intersect_sorted(st["id"].pos, st["iter_num"].pos)
    exec_rows = keyed[named_at(keyed, "ExecutorState::Process")]
    ign_rows = keyed[named_at(keyed, *ITERATOR_GET_NEXT)]
    links = []
    if len(exec_rows) and len(ign_rows):
        pkeys = {}
        for r in exec_rows.tolist():  # file order: the last one with a key wins, as in XProf
            pkeys[(st["id"].get(r), st["iter_num"].get(r))] = r
        for r in ign_rows.tolist():
            src = pkeys.get((st["id"].get(r), st["iter_num"].get(r)))
            if src is not None:
                links.append((src, r))
    links_arr = np.array(links, np.int64).reshape(-1, 2)

    tfdata_ids = _tf_data_step_ids(st, named_at)
    cand = _candidate_roots(st, md_i, names, start, name_index, tfdata_ids)

    # Roots: TF loop iterations if any, else the candidates (`_r` events, legacy TraceContext, ...).
    big = np.iinfo(np.int32).max  # ranks count roots, far below 2**31
    label = np.full(n, big, np.int32)
    root_rows: list[int] = []
    loop_first = _tf_loop_iterations(st, exec_rows, tfdata_ids, start)
    if loop_first:
        for rank, (first, members) in enumerate(loop_first):
            label[members] = rank
            root_rows.append(first)
    else:
        label[cand] = np.arange(len(cand))
        root_rows = cand.tolist()

    # Spread labels (min wins = the earliest-processed root reaching an event) to a fixed point:
    # down the nesting (one pass, parents first: spread_min), along flows and links.
    for _ in range(100):
        spread_min(parent, label, down_order)
        changed = False
        if flow is not None:
            prow, pcode, crow, ccode, nk = flow
            kmin = np.full(nk, big, np.int32)
            np.minimum.at(kmin, pcode, label[prow])
            new = np.minimum(label[crow], kmin[ccode])
            changed |= bool((new != label[crow]).any())
            label[crow] = new
        if len(links_arr):
            new = np.minimum(label[links_arr[:, 1]], label[links_arr[:, 0]])
            changed |= bool((new != label[links_arr[:, 1]]).any())
            np.minimum.at(label, links_arr[:, 1], label[links_arr[:, 0]])
        if not changed:
            break

    # Group ids: roots that kept their own label start groups, numbered in processing order.
    starters = [(rank, r) for rank, r in enumerate(root_rows) if label[r] == rank]
    gid_of_rank = np.full(len(root_rows) + 1, -1, np.int32)  # the last slot: unreached
    for gid, (rank, _) in enumerate(starters):
        gid_of_rank[rank] = gid
    group = gid_of_rank[np.minimum(label, len(root_rows), out=label)]  # in place: label is done with
    del label

    group_names, starter, ranks = {}, {}, {}
    named = np.zeros(n, bool)
    for gid, (rank, r) in enumerate(starters):
        nm = names[md_i[r]]
        implicit = nm in IMPLICIT_ROOTS
        prefix = ""
        graph = st["graph_type"].get(r)
        if graph is not None:
            prefix = ev.text(graph) + " "
        elif not implicit:
            prefix = nm + " "
        num = context_step_num(r, st, parent)
        group_names[gid] = f"{prefix}{gid if num is None else num}"
        starter[gid] = int(r)
        ranks[gid] = -1 if loop_first else rank
        if not implicit and not loop_first:
            named[r] = True
    return group, group_names, starter, named, Roots(ranks, len(cand))


@dataclass
class Roots:
    """Where the groups' roots are, independent of how the events were read: each group's root as
    its rank among the candidate roots (-1: a TF loop iteration's first event), and how many
    candidates there were. root_candidates(frame) lists the same candidates in any frame of the host."""
    rank: dict[int, int]
    candidates: int


def _tf_data_step_ids(st: dict[str, Sparse], named_at: Callable) -> set[int]:
    """tf.data function runs mark step ids whose roots are skipped."""
    tfd = st["id"].pos[named_at(st["id"].pos, *TF_DATA_FUNCTION_RUNS)]
    return set(st["id"].lookup(tfd)[1].tolist())


def _candidate_roots(st: dict[str, Sparse], md_i: np.ndarray, names: list[str], start: np.ndarray,
                     name_index: dict[str, list[int]], tfdata_ids: set[int]) -> np.ndarray:
    """Positions of the events that may start a group, in XProf's processing order: level high
    first, then time (then position: the order the events were read in)."""
    by_name = np.zeros(len(names), np.int64)
    for nm, lvl in list(ROOT_LEVEL_BY_NAME.items()) + [(LEGACY_ROOT, 1)]:
        by_name[name_index.get(nm, [])] = lvl
    named_roots = np.flatnonzero(by_name[md_i] > 0) if by_name.any() else np.zeros(0, np.int64)
    cand = np.union1d(st["_r"].pos, named_roots).astype(np.int64)
    level = np.where(by_name[md_i[cand]] > 0, by_name[md_i[cand]], st["_r"].lookup(cand)[1])
    cand, level = cand[level > 0], level[level > 0]  # `_r` = 0 is no root (EventNode::IsRoot)
    if tfdata_ids and len(cand):
        has_id, ids = st["id"].lookup(cand)
        skip = has_id & np.isin(ids, list(tfdata_ids))
        cand, level = cand[~skip], level[~skip]
    return cand[np.lexsort((cand, start[cand], -level))]


def root_candidates(frame: XSpaceFrame) -> np.ndarray:
    """Frame rows of the host plane's candidate roots, in the order label_groups ranks them (what a
    Roots rank indexes): a few stats and names, no nesting, no flows."""
    if any(nm in LOOP_OPS for nm in frame.raw.em_name) or not may_group(frame):
        return np.zeros(0, np.int64)
    ev = events_of(frame, stat_names=["_r", "id"])
    if ev is None:
        return np.zeros(0, np.int64)
    name_index: dict[str, list[int]] = {}
    for i, nm in enumerate(ev.names):
        name_index.setdefault(nm, []).append(i)

    def named_at(where: np.ndarray, *wanted: str) -> np.ndarray:
        idx = [i for w in wanted for i in name_index.get(w, [])]
        table = np.zeros(len(ev.names), bool)
        table[idx] = True
        return table[ev.md_i[where]]

    cand = _candidate_roots(ev.st, ev.md_i, ev.names, ev.start, name_index, _tf_data_step_ids(ev.st, named_at))
    src = ev.rows
    return cand + src.start if isinstance(src, slice) else src[cand]


def _flow_edges(st: dict[str, Sparse]):
    """(producer positions, their key codes, consumer positions, their key codes, number of keys)
    of the flow stats (_p/_pt producers, _c/_ct consumers), keys with too many producers and
    consumers both left out as XProf does; None without flows. Its own function so the key
    columns built on the way are gone before the labels are spread."""
    p_rows = _intersect_sorted(st["_p"].pos, st["_pt"].pos)
    c_rows = _intersect_sorted(st["_c"].pos, st["_ct"].pos)
    if not (len(p_rows) and len(c_rows)):
        return None
    ptype = np.concatenate([st["_pt"].lookup(p_rows)[1], st["_ct"].lookup(c_rows)[1]])
    pid = np.concatenate([st["_p"].lookup(p_rows)[1], st["_c"].lookup(c_rows)[1]])
    nkeys, inv = _pair_codes(ptype, pid)
    del ptype, pid
    pcode, ccode = inv[:len(p_rows)], inv[len(p_rows):]
    npk = np.bincount(pcode, minlength=nkeys)
    nck = np.bincount(ccode, minlength=nkeys)
    ok_key = ~((npk >= _MAX_FANOUT) & (nck >= _MAX_FANOUT))
    pm, cm = ok_key[pcode], ok_key[ccode]
    return p_rows[pm], pcode[pm], c_rows[cm], ccode[cm], nkeys


def context_step_num(r: int, st: dict, parent: np.ndarray) -> int | None:
    """iter_num, else step_num, of the event or its nearest ancestor (XProf's GetContextStat)."""
    for key in ("iter_num", "step_num"):
        a = r
        while a >= 0:
            v = st[key].get(a)
            if v is not None:
                return v
            a = int(parent[a])
    return None


def _tf_loop_iterations(st: dict, exec_rows: np.ndarray, tfdata_ids: set, start: np.ndarray):
    """XProf's TF while-loop steps: ExecutorState::Process by (id, iter_num); loops only."""
    if not len(exec_rows):
        return []
    rows = exec_rows
    df = pl.DataFrame({"row": rows, "sid": st["id"].lookup(rows)[1], "it": st["iter_num"].lookup(rows)[1],
                       "t": start[rows]})
    if tfdata_ids:
        df = df.filter(~pl.col("sid").is_in(list(tfdata_ids)))
    loops = df.group_by("sid").agg(pl.col("it").n_unique().alias("n"), pl.col("it").max().alias("mx"))
    loops = loops.filter(~((pl.col("n") == 1) & (pl.col("mx") == 0)))
    if not len(loops):
        return []
    df = df.filter(pl.col("sid").is_in(loops["sid"].implode()))
    it = df.sort("t", "row").group_by("sid", "it", maintain_order=True).agg(
        pl.col("row").first().alias("first"), pl.col("t").first().alias("t0"), pl.col("row").alias("members"))
    it = it.sort("t0", "first")
    return [(int(f), np.asarray(m, np.int64)) for f, m in zip(it["first"], it["members"])]
