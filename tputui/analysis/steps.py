"""Step detection and per-step time breakdown, as XProf computes them.

Used by the overview, input pipeline, pod viewer and the live monitor. API (stable; add, don't rename):

    StepDb                  `steps` (Polars, one row per step and core; see STEP_COLUMNS),
                            `diagnostics` (list of warning lines), `kind` ("host" | "device" | "none"),
                            `has_steps`, `step_times_ms()` and `summary_ms()` (count/avg/min/max/stddev)
    host_steps(frame)       steps of a CPU-only host: root events (`_r`, e.g. StepTraceAnnotation /
                            tf.profiler Trace with step_num) grouped like XProf's event forest
    device_steps(frame)     TPU steps per TensorCore as XProf groups them (via pod_viewer), per-core breakdown
    steps(frame)            what XProf uses for one host: device steps when the host has TPU planes,
                            else host steps (GPU: host steps)
    run_steps(run, host)    the same for one host or all hosts of a run (steps intersected by number)
    group_events(frame)     GroupedEvents: XProf's group_id per event (-1 ungrouped) and group names
    NO_STEP_MARKER          XProf's diagnostic when no step is found
    BREAKDOWN_TYPES         event-type columns of the breakdown (ps), highest priority last

How XProf gets there (xla/tsl/profiler/utils/group_events.cc, xprof/convert/xplane_to_step_events.cc,
step_events_to_steps_db.cc, utils/event_span.cc), reproduced here:
- Events nest per thread; producer/consumer stats (`_p`/`_pt` -> `_c`/`_ct`) link threads unless both
  sides of one id have 64+ events; ExecutorState::Process links to IteratorGetNextOp by (id, iter_num).
- Root events (`_r`, level = its value; legacy `TraceContext`) are taken by level (high first), then
  time; each root not already reached starts a group that spreads to everything it reaches.
- A group's step time is its longest marker (`train*` / `test*` / `TraceContext*` events, or a root
  that named the group); its events are typed (host compute, wait for input = IteratorGetNext*, host to
  device = infeed enqueue / memcpy HtoD, ...), overlaps resolved by type priority, clipped to the step;
  the rest is unknown ("All others"). Steps without a marker or without host compute are dropped, and
  with more than 5 steps the first and last (possibly partial) steps are dropped as well.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.analysis.op_metrics import (
    nest_parents,
    parse_tf_op,
    tensor_core_planes,
)
from tputui.data.xspace import XSpaceFrame

NO_STEP_MARKER = (
    "No step marker observed and hence the step time is unknown. This may happen if (1) training steps "
    "are not instrumented (e.g., if you are not using Keras) or (2) the profiling duration is shorter "
    "than the step time. For (1), you need to add step instrumentation; for (2), you may try to profile "
    "longer."
)

# XProf's EventType, in priority order (a later type wins where events overlap).
BREAKDOWN_TYPES = (
    "unknown", "host_compute", "host_preprocess", "host_postprocess", "host_batch_formation",
    "host_runtime", "host_compile", "host_to_host", "host_to_device", "host_prepare",
    "device_collectives", "host_wait_input", "device_to_device", "device_to_host",
    "device_compute_32", "device_compute_16", "device_wait_device", "device_wait_host",
)
_T = {name: i for i, name in enumerate(BREAKDOWN_TYPES)}

STEP_COLUMNS = {
    "step": pl.Int64,  # XProf's step number (the group id; per-core TPU step index)
    "name": pl.String,  # "train 3": root event name + step_num, as XProf names the group
    "core": pl.Int64,  # 0 for host (generic) steps; the device plane id for TPU cores
    "host": pl.String,
    "begin_ps": pl.Int64, "end_ps": pl.Int64, "duration_ps": pl.Int64,
    **{f"{t}_ps": pl.Int64 for t in BREAKDOWN_TYPES},
}

DROP_INCOMPLETE_ABOVE = 5  # XProf drops the first and last step when it has more than this


def empty_steps() -> pl.DataFrame:
    return pl.DataFrame(schema=STEP_COLUMNS)


@dataclass
class StepDb:
    steps: pl.DataFrame = field(default_factory=empty_steps)
    diagnostics: list[str] = field(default_factory=list)
    kind: str = "none"

    @property
    def has_steps(self) -> bool:
        return len(self.steps) > 0

    def per_step(self) -> pl.DataFrame:
        """One row per step (cores merged: the slowest core's duration, summed breakdowns / cores)."""
        if self.kind != "device" or not len(self.steps):
            return self.steps
        cols = [f"{t}_ps" for t in BREAKDOWN_TYPES]
        return self.steps.group_by("step", maintain_order=True).agg(
            pl.col("name").first(), pl.col("core").n_unique().alias("cores"), pl.col("host").first(),
            pl.col("begin_ps").min(), pl.col("end_ps").max(), pl.col("duration_ps").max(),
            *[pl.col(c).mean().round().cast(pl.Int64) for c in cols],
        )

    def step_times_ms(self) -> np.ndarray:
        return self.per_step()["duration_ps"].to_numpy() / 1e9

    def summary_ms(self) -> dict[str, float] | None:
        """count / avg / min / max / stddev (sample) of step time in ms; None without steps."""
        t = self.step_times_ms()
        if len(t) == 0:
            return None
        return {"count": len(t), "avg": float(t.mean()), "min": float(t.min()), "max": float(t.max()),
                "stddev": float(t.std(ddof=1)) if len(t) > 1 else 0.0}


# --- event grouping ---------------------------------------------------------------------------
_EXPLICIT_MARKER = re.compile(r"^(train|test|TraceContext)[^/]*$")
_IMPLICIT_ROOTS = {"FunctionRun", "SessionRun", "RunGraph", "ExecutorState::Process"}
_NOT_REAL_COMPUTE = ("EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun")
_TF_DATA_FUNCTION_RUNS = {
    "InstantiatedCapturedFunction::Run", "InstantiatedCapturedFunction::RunAsync",
    "InstantiatedCapturedFunction::RunInstantiated", "InstantiatedCapturedFunction::RunWithBorrowedArgs",
}
_LOOP_OPS = {"WhileOp-EvalCond", "WhileOp-StartBody", "ForOp", "ParallelForOp", "ForeverOp"}
_ITERATOR_GET_NEXT = {"IteratorGetNextOp::DoCompute", "IteratorGetNextAsOptionalOp::DoCompute"}
_MAX_FANOUT = 64  # XProf skips a producer/consumer id with 64+ events on both sides

_GROUP_STATS = ["_r", "step_num", "iter_num", "_p", "_pt", "_c", "_ct", "id", "correlation_id",
                "is_async", "graph_type"]


@dataclass
class GroupedEvents:
    """XProf's grouping of one frame's host events into steps (groups); arrays are parallel."""
    rows: np.ndarray  # event row in the frame
    start: np.ndarray  # ps
    end: np.ndarray
    name_idx: np.ndarray  # index into `event_names`
    event_names: list[str]
    group: np.ndarray  # group id, -1 ungrouped
    names: dict[int, str]  # group id -> name ("train 3")
    starter: dict[int, int]  # group id -> index (into the arrays) of the root that started it
    named_roots: np.ndarray  # bool: roots that named their group (non-implicit starters)
    parent: np.ndarray  # nesting parent (index into the arrays), -1 for none

    @classmethod
    def empty(cls, event_names=None) -> GroupedEvents:
        z = np.zeros(0, np.int64)
        return cls(z, z, z, z, event_names or [], z, {}, {}, np.zeros(0, bool), z)


_ROOT_LEVEL_BY_NAME = {"ProcessBatch": 2, "OrbaxProcessBatch": 2, "BatchingSessionRun": 1}


class _Sparse:
    """One event stat over the grouped events, kept sparse: positions (sorted) and int values
    (text values as text ids). Most stats sit on few events."""

    def __init__(self, pos: np.ndarray, val: np.ndarray):
        order = np.argsort(pos, kind="stable")
        self.pos, self.val = pos[order], val[order]

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


def _sparse_stats(frame: XSpaceFrame, rows: np.ndarray, names: list[str]) -> dict[str, _Sparse]:
    """{name: _Sparse} for event stats of the events `rows` (positions index `rows`)."""
    sv = frame.stat_values("event", names)
    contiguous = len(rows) and rows[-1] - rows[0] + 1 == len(rows)
    out = {}
    for name in names:
        s = sv.filter(pl.col("stat_name") == name)
        own = s["owner"].to_numpy().astype(np.int64)
        val = np.where(s["text_id"].to_numpy() >= 0, s["text_id"].to_numpy(), s["int"].fill_null(0).to_numpy())
        if contiguous:
            p = own - rows[0]
            ok = (p >= 0) & (p < len(rows))
        else:
            i = np.clip(np.searchsorted(rows, own), 0, max(len(rows) - 1, 0))
            ok = rows[i] == own if len(rows) else np.zeros(len(own), bool)
            p = i
        out[name] = _Sparse(p[ok].astype(np.int64), val[ok].astype(np.int64))
    return out


def _sorted_longest_first(s: np.ndarray, e: np.ndarray) -> bool:
    if len(s) < 2:
        return True
    ok = s[1:] >= s[:-1]
    if not ok.all():
        return False
    tie = np.flatnonzero(s[1:] == s[:-1])
    return not (e[tie + 1] > e[tie]).any()


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), np.int64)
    anc = parent.copy()
    while True:
        live = anc >= 0
        if not live.any():
            return depth
        depth[live] += 1
        anc[live] = parent[anc[live]]


def group_events(frame: XSpaceFrame, plane: int | None = None) -> GroupedEvents:
    """Assign XProf's group ids to the events of the host plane (`/host:CPU` by default)."""
    if plane is None:
        plane = frame.plane_index("/host:CPU")
    raw = frame.raw
    names = raw.em_name + [""]
    if plane is None:
        return GroupedEvents.empty(names)
    lines = frame.lines_of(plane)
    rows = np.concatenate([np.arange(frame.line_events(ln).start, frame.line_events(ln).stop, dtype=np.int64)
                           for ln in lines] or [np.zeros(0, np.int64)])
    if len(rows) == 0 or any(nm in _LOOP_OPS for nm in raw.em_name):
        # XProf does not group TF graphs with loop ops (While/For) at all.
        g = GroupedEvents.empty(names)
        return g
    md = frame.events["metadata"].to_numpy()[rows]
    md_i = np.where(md >= 0, md, len(names) - 1)
    st = _sparse_stats(frame, rows, _GROUP_STATS)
    if rows[-1] - rows[0] + 1 == len(rows):  # the plane's lines are one block: slice, don't copy
        block = slice(int(rows[0]), int(rows[-1]) + 1)
        start = frame.start_ps[block]
        end = start + raw.event_duration_ps[block]
        line = raw.event_line[block]
    else:
        start = frame.start_ps[rows]
        end = start + raw.event_duration_ps[rows]
        line = raw.event_line[rows]
    n = len(rows)
    group = np.full(n, -1, np.int64)
    name_index: dict[str, list[int]] = {}
    for i, nm in enumerate(names):
        name_index.setdefault(nm, []).append(i)

    def named_at(where: np.ndarray, *wanted: str) -> np.ndarray:
        idx = [i for w in wanted for i in name_index.get(w, [])]
        table = np.zeros(len(names), bool)
        table[idx] = True
        return table[md_i[where]]

    # Per-thread nesting (async events stay out of it), in (start, -end) order per line.
    parent = np.full(n, -1, np.int64)
    async_pos = st["is_async"].pos[st["is_async"].val != 0]
    is_async = np.zeros(n, bool)
    is_async[async_pos] = True
    line_bounds = np.concatenate([[0], np.flatnonzero(line[1:] != line[:-1]) + 1, [n]])
    for a, b in zip(line_bounds[:-1].tolist(), line_bounds[1:].tolist()):
        s_, e_ = start[a:b], end[a:b]
        seg = None
        if not _sorted_longest_first(s_, e_):  # files are usually sorted already
            seg = a + np.lexsort((-e_, s_))
        if len(async_pos) and is_async[a:b].any():
            seg = (np.arange(a, b) if seg is None else seg)
            seg = seg[~is_async[seg]]
        if seg is None:
            p = nest_parents(s_, e_)
            parent[a:b] = np.where(p >= 0, p + a, -1)
        elif len(seg):
            p = nest_parents(start[seg], end[seg])
            parent[seg] = np.where(p >= 0, seg[np.clip(p, 0, None)], -1)
    depth = _depths(parent)

    # Flow edges: producer (type, id) -> consumers (type, id).
    flow = None
    p_rows = np.intersect1d(st["_p"].pos, st["_pt"].pos)
    c_rows = np.intersect1d(st["_c"].pos, st["_ct"].pos)
    if len(p_rows) and len(c_rows):
        pk = np.stack([st["_pt"].lookup(p_rows)[1], st["_p"].lookup(p_rows)[1]], 1)
        ck = np.stack([st["_ct"].lookup(c_rows)[1], st["_c"].lookup(c_rows)[1]], 1)
        keys, inv = np.unique(np.concatenate([pk, ck]), axis=0, return_inverse=True)
        inv = inv.ravel()
        pcode, ccode = inv[:len(p_rows)], inv[len(p_rows):]
        npk = np.bincount(pcode, minlength=len(keys))
        nck = np.bincount(ccode, minlength=len(keys))
        ok_key = ~((npk >= _MAX_FANOUT) & (nck >= _MAX_FANOUT))
        pm, cm = ok_key[pcode], ok_key[ccode]
        flow = (p_rows[pm], pcode[pm], c_rows[cm], ccode[cm], len(keys))

    # Inter-thread: the last ExecutorState::Process with (id, iter_num) -> IteratorGetNext ops.
    keyed = np.intersect1d(st["id"].pos, st["iter_num"].pos)
    exec_rows = keyed[named_at(keyed, "ExecutorState::Process")]
    ign_rows = keyed[named_at(keyed, *_ITERATOR_GET_NEXT)]
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

    # tf.data function runs mark step ids whose roots are skipped.
    tfd = st["id"].pos[named_at(st["id"].pos, *_TF_DATA_FUNCTION_RUNS)]
    tfdata_ids = set(st["id"].lookup(tfd)[1].tolist())

    # Roots: TF loop iterations if any, else `_r` events (and legacy TraceContext, ...).
    big = np.iinfo(np.int64).max
    label = np.full(n, big, np.int64)
    root_rows: list[int] = []
    loop_first = _tf_loop_iterations(st, exec_rows, tfdata_ids, start)
    if loop_first:
        for rank, (first, members) in enumerate(loop_first):
            label[members] = rank
            root_rows.append(first)
    else:
        by_name = np.zeros(len(names), np.int64)
        for nm, lvl in list(_ROOT_LEVEL_BY_NAME.items()) + [("TraceContext", 1)]:
            by_name[name_index.get(nm, [])] = lvl
        named_roots = np.flatnonzero(by_name[md_i] > 0) if by_name.any() else np.zeros(0, np.int64)
        cand = np.union1d(st["_r"].pos, named_roots)
        level = np.where(by_name[md_i[cand]] > 0, by_name[md_i[cand]], st["_r"].lookup(cand)[1])
        if tfdata_ids and len(cand):
            has_id, ids = st["id"].lookup(cand)
            skip = has_id & np.isin(ids, list(tfdata_ids))
            cand, level = cand[~skip], level[~skip]
        order = np.lexsort((cand, start[cand], -level))
        cand = cand[order]
        label[cand] = np.arange(len(cand))
        root_rows = cand.tolist()

    # Spread labels (min wins = the earliest-processed root reaching an event) to a fixed point:
    # down the nesting (level by level), along flows and links.
    by_depth = np.argsort(depth, kind="stable")
    dcounts = np.bincount(depth)
    dstarts = np.concatenate([[0], np.cumsum(dcounts)])
    for _ in range(100):
        for d in range(1, len(dcounts)):
            idx = by_depth[dstarts[d]:dstarts[d + 1]]
            label[idx] = np.minimum(label[idx], label[parent[idx]])
        changed = False
        if flow is not None:
            prow, pcode, crow, ccode, nk = flow
            kmin = np.full(nk, big, np.int64)
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
    unreached = np.iinfo(np.int64).max
    starters = [(rank, r) for rank, r in enumerate(root_rows) if label[r] == rank]
    gid_of_rank = np.full(len(root_rows) + 1, -1, np.int64)
    for gid, (rank, _) in enumerate(starters):
        gid_of_rank[rank] = gid
    has = label != unreached
    group[has] = gid_of_rank[np.minimum(label[has], len(root_rows))]

    group_names, starter = {}, {}
    named = np.zeros(n, bool)
    for gid, (_rank, r) in enumerate(starters):
        nm = names[md_i[r]]
        implicit = nm in _IMPLICIT_ROOTS
        prefix = ""
        graph = st["graph_type"].get(r)
        if graph is not None:
            prefix = frame.text(graph) + " "
        elif not implicit:
            prefix = nm + " "
        num = _context_step_num(r, st, parent)
        group_names[gid] = f"{prefix}{gid if num is None else num}"
        starter[gid] = int(r)
        if not implicit and not loop_first:
            named[r] = True
    return GroupedEvents(rows, start, end, md_i, names, group, group_names, starter, named, parent)


def _context_step_num(r: int, st: dict, parent: np.ndarray) -> int | None:
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


# --- host steps ---------------------------------------------------------------------------------
def _event_types(names: list[str], name_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(is_explicit_marker, breakdown type or -1 when not real compute) per event."""
    uniq = np.flatnonzero(np.bincount(name_idx, minlength=len(names)))
    marker = np.zeros(len(names), bool)
    typ = np.full(len(names), -1, np.int64)
    for i in uniq.tolist():
        nm = names[i]
        marker[i] = bool(_EXPLICIT_MARKER.match(nm))
        if marker[i] or nm.startswith(_NOT_REAL_COMPUTE):
            continue
        _, _, t = parse_tf_op(nm)
        if t.startswith("InfeedEnqueue") or t == "MemcpyHToD":
            typ[i] = _T["host_to_device"]
        elif t == "MemcpyHToH":
            typ[i] = _T["host_to_host"]
        elif nm.lower().startswith("iteratorgetnext"):
            typ[i] = _T["host_wait_input"]
        else:
            typ[i] = _T["host_compute"]
    return marker[name_idx], typ[name_idx]


def _sweep_breakdown(step_of: np.ndarray, ev_type: np.ndarray, ev_start: np.ndarray, ev_end: np.ndarray,
                     step_begin: np.ndarray, step_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """XProf's ToNonOverlappedEvents + ConvertStepDetailsToStepInfo, exactly, per step.

    XProf sweeps each step's event boundaries in time order (ends before starts at equal times,
    higher types first) with a priority tracker; the span up to the next boundary gets the
    tracker's current type; the step's time outside those spans is unknown. Quirk kept on
    purpose: a zero-length event ends before it starts, so in a gap it raises its type without
    holding it, and that type lasts until the next end that closes everything (i.e. up to the
    next positive event, then through it). Returns (ps per step and type, types seen per step).
    Steps with one event type (the usual case) take a vectorized path; others the exact loop."""
    nsteps = len(step_begin)
    ntypes = len(BREAKDOWN_TYPES)
    out = np.zeros((nsteps, ntypes), np.int64)
    seen = np.zeros((nsteps, ntypes), bool)
    if nsteps == 0:
        return out, seen
    present = np.bincount(step_of * ntypes + ev_type, minlength=nsteps * ntypes).reshape(nsteps, ntypes) > 0
    multi = present.sum(1) > 1
    one = ~multi[step_of]
    if one.any():
        _single_type_sweep(step_of[one], ev_type[one], ev_start[one], ev_end[one], step_begin, step_end,
                           out, seen)
    if multi.any():
        many = multi[step_of]
        _boundary_sweep(step_of[many], ev_type[many], ev_start[many], ev_end[many], step_begin, step_end,
                        out, seen)
    known = out.sum(1) - out[:, 0]
    out[:, 0] = (step_end - step_begin) - known
    return out, seen


def _single_type_sweep(g, ty, s, e, step_begin, step_end, out, seen) -> None:
    """Coverage of one-type steps: the union of the events, where a zero-length event that is not
    inside an open event stretches to the next positive event's start (XProf's quirk)."""
    order = np.argsort(s, kind="stable")
    order = order[np.argsort(g[order], kind="stable")]  # steps are nearly time-ordered: cheap
    g, ty, s, e = g[order], ty[order], s[order], e[order]
    n = len(s)
    first = np.ones(n, bool)
    first[1:] = g[1:] != g[:-1]
    # Running max of ends before each event, per step (steps are separated by an offset).
    base = np.minimum.reduceat(s, np.flatnonzero(first))[np.cumsum(first) - 1]
    span = int((np.maximum.reduceat(e, np.flatnonzero(first)) -
                np.minimum.reduceat(s, np.flatnonzero(first))).max()) + 1
    k = np.cumsum(first) - 1  # step block index
    if span * (int(k[-1]) + 2) > 2 ** 62:  # would overflow: fall back to the exact sweep
        _boundary_sweep(g, ty, s, e, step_begin, step_end, out, seen)
        return
    shifted_end = (e - base) + k * span
    reach = np.maximum.accumulate(shifted_end)
    before = np.empty(n, np.int64)
    before[0] = -1
    before[1:] = reach[:-1]
    before = np.where(first, -1, before - k * span + base)
    zero = e == s
    opener = zero & (s >= before)
    # Next positive event's start within the step (else the step's last event time).
    pos_start = np.where(zero, np.iinfo(np.int64).max, (s - base) + k * span)
    nxt = np.minimum.accumulate(pos_start[::-1])[::-1]
    nxt_after = np.empty(n, np.int64)
    nxt_after[:-1] = nxt[1:]
    nxt_after[-1] = np.iinfo(np.int64).max
    last_time = np.maximum.reduceat(np.maximum(s, e), np.flatnonzero(first))[k]
    has_next = nxt_after < (k + 1) * span
    eff_end = np.where(opener, np.where(has_next, nxt_after - k * span + base, last_time), e)
    # Union per step, clipped to the step.
    sb, se = step_begin[g], step_end[g]
    lo = np.clip(s, sb, se) - sb
    hi = np.clip(eff_end, sb, se) - sb
    cov = _union_per_group(g, lo, hi, int((step_end - step_begin).max()) + 1, len(step_begin))
    t = np.zeros(len(step_begin), np.int64)
    t[g] = ty
    steps_here = np.unique(g)
    out[steps_here, t[steps_here]] += cov[steps_here]
    count = np.bincount(g, minlength=len(step_begin))
    positive = np.bincount(g, weights=(e > s), minlength=len(step_begin)) > 0
    ok = positive | (count >= 2)
    seen[steps_here[ok[steps_here]], t[steps_here[ok[steps_here]]]] = True


def _boundary_sweep(step_of, ev_type, ev_start, ev_end, step_begin, step_end, out, seen) -> None:
    """XProf's boundary sweep with its priority tracker, step by step (exact, any types)."""
    nsteps = len(step_begin)
    ntypes = len(BREAKDOWN_TYPES)
    m = len(ev_start)
    t = np.concatenate([ev_start, ev_end])
    is_start = np.concatenate([np.ones(m, bool), np.zeros(m, bool)])
    ty = np.concatenate([ev_type, ev_type])
    st = np.concatenate([step_of, step_of])
    # One sort key: time, then ends before starts, then higher types first (6 low bits).
    t0 = t.min() if len(t) else 0
    key = ((t - t0) << 6) | (is_start.astype(np.int64) << 5) | (31 - ty)
    order = np.argsort(key, kind="stable")
    order = order[np.argsort(st[order], kind="stable")]
    t, is_start, ty, st = t[order], is_start[order], ty[order], st[order]
    n = len(t)
    state = np.zeros(n, np.int64)  # current type after each boundary (0 = unknown)
    step_first = np.searchsorted(st, np.arange(nsteps), "left")
    step_last = np.searchsorted(st, np.arange(nsteps), "right")
    for k in np.unique(st).tolist():
        a, b = step_first[k], step_last[k]
        state[a:b] = _priority_sweep(is_start[a:b], ty[a:b], ntypes)
    # Spans between consecutive boundaries of the same step, clipped to the step.
    ks = np.flatnonzero(st[:-1] == st[1:])
    sb, se = step_begin[st[ks]], step_end[st[ks]]
    lo = np.maximum(t[ks], sb)
    hi = np.minimum(t[ks + 1], se)
    dur = np.maximum(hi - lo, 0)
    cell = st[ks] * ntypes + state[ks]
    out += np.bincount(cell, weights=dur, minlength=nsteps * ntypes).round().astype(np.int64).reshape(
        nsteps, ntypes)
    seen.reshape(-1)[cell] = True


def _priority_sweep(is_start: np.ndarray, ty: np.ndarray, ntypes: int) -> np.ndarray:
    """XProf's PriorityTracker over one step's sorted boundaries (a short loop per step)."""
    count = [0] * ntypes
    cur = 0
    out = np.zeros(len(ty), np.int64)
    for i, (s, k) in enumerate(zip(is_start.tolist(), ty.tolist())):
        if s:
            count[k] += 1
            cur = max(cur, k)
        else:
            count[k] -= 1
            if k == cur and count[k] == 0:
                cur = 0
                for j in range(k - 1, -1, -1):
                    if count[j] > 0:
                        cur = j
                        break
        out[i] = cur
    return out


def _union_per_group(group: np.ndarray, s: np.ndarray, e: np.ndarray, span: int, ngroups: int) -> np.ndarray:
    if len(s) == 0:
        return np.zeros(ngroups, np.int64)
    gs, ge = s + group * span, e + group * span
    order = np.argsort(gs, kind="stable")
    gs, ge, g = gs[order], ge[order], group[order]
    reach = np.maximum.accumulate(ge)
    new = np.ones(len(gs), bool)
    new[1:] = gs[1:] > reach[:-1]
    seg = np.cumsum(new) - 1
    seg_end = np.zeros(int(seg[-1]) + 1, np.int64)
    np.maximum.at(seg_end, seg, ge)
    lengths = seg_end - gs[new]
    return np.bincount(g[new], weights=lengths, minlength=ngroups).round().astype(np.int64)


def host_steps(frame: XSpaceFrame, host: str = "", drop_incomplete: bool = True) -> StepDb:
    """Steps of a host without devices, from grouped host events (see module doc)."""
    grouped = group_events(frame)
    if not grouped.names:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    marker_all, typ_all = _event_types(grouped.event_names, grouped.name_idx)
    # A root that named its group is a step marker, not an event of the step.
    marker_all = marker_all | grouped.named_roots
    typ_all = np.where(grouped.named_roots, -1, typ_all)
    sel = grouped.group >= 0
    group = grouped.group[sel]
    marker = marker_all[sel]
    typ = typ_all[sel]
    start, end = grouped.start[sel], grouped.end[sel]
    # Step time per group = its longest marker.
    mk = pl.DataFrame({"g": group[marker], "s": start[marker], "d": end[marker] - start[marker]})
    if not len(mk):
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    longest = mk.sort("g", "d", "s", descending=[False, True, False]).group_by("g", maintain_order=True).first()
    longest = longest.filter(pl.col("d") > 0)
    gids = longest["g"].to_numpy()
    begin = longest["s"].to_numpy()
    dur = longest["d"].to_numpy()
    index_of = np.full(len(grouped.names) + 1, -1, np.int64)
    index_of[gids] = np.arange(len(gids))
    # An event nested in a parent of the same group and type cannot change the sweep's result
    # (except a zero-length one at the parent's very end): leave those out, most events are.
    par = grouped.parent[sel]
    has_par = par >= 0
    pp = np.where(has_par, par, 0)
    redundant = has_par & (grouped.group[pp] == group) & (typ_all[pp] == typ) & ~(
        (start == end) & (start == grouped.end[pp]))
    evsel = (typ >= 0) & (index_of[group] >= 0) & ~redundant
    bd, seen = _sweep_breakdown(index_of[group[evsel]], typ[evsel], start[evsel], end[evsel], begin,
                                begin + dur)
    # Well-formed steps have host compute.
    keep = seen[:, _T["host_compute"]]
    gids, begin, dur, bd = gids[keep], begin[keep], dur[keep], bd[keep]
    if len(gids) == 0:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    if drop_incomplete and len(gids) > DROP_INCOMPLETE_ABOVE:
        sl = slice(1, len(gids) - 1)
        gids, begin, dur, bd = gids[sl], begin[sl], dur[sl], bd[sl]
    df = pl.DataFrame({
        "step": gids, "name": [grouped.names[int(g)] for g in gids], "core": np.zeros(len(gids), np.int64),
        "host": [host] * len(gids), "begin_ps": begin, "end_ps": begin + dur, "duration_ps": dur,
        **{f"{t}_ps": bd[:, i] for i, t in enumerate(BREAKDOWN_TYPES)},
    }, schema=STEP_COLUMNS)
    return StepDb(steps=df, kind="host")


# --- device (TPU) steps -------------------------------------------------------------------------
def _tpu_rows(per_step, host: str) -> pl.DataFrame:
    """[(step, begin, dur, {core: category ps})] -> STEP_COLUMNS rows, one per (step, core)."""
    from tputui.analysis.pod_viewer import tpu_breakdown

    rows = []
    for step, begin, dur, per_core in per_step:
        for core, cats in sorted(per_core.items()):
            bd = tpu_breakdown(cats, dur)
            t = dict.fromkeys(BREAKDOWN_TYPES, 0)
            t.update(device_compute_32=bd["device_compute"], device_to_device=bd["device_to_device"],
                     device_collectives=bd["device_collectives"], device_wait_host=bd["input"],
                     device_to_host=bd["output"], unknown=bd["all_others"])
            rows.append({"step": int(step), "name": str(step), "core": int(core), "host": host,
                         "begin_ps": int(begin), "end_ps": int(begin + dur), "duration_ps": int(dur),
                         **{f"{k}_ps": int(v) for k, v in t.items()}})
    return pl.DataFrame(rows, schema=STEP_COLUMNS) if rows else empty_steps()


def device_steps(frame: XSpaceFrame, host: str = "") -> StepDb:
    """TPU steps as XProf builds them (see tputui.analysis.pod_viewer): each TensorCore's `Steps`
    events take the group of the XLA module they overlap; a step is a group seen on every core,
    lasting as long as its longest marker; per core its op self time by HLO category gives the
    breakdown (input = infeed / host recv, output = outfeed / host send, collectives, device to
    device, all others = idle, compute = the rest). Steps are not dropped (the device already did)."""
    from tputui.analysis.pod_viewer import host_step_db

    db = host_step_db(frame, host)
    steps_ = [(n, b, d, pc) for n, b, d, pc in db.steps if pc and d > 0]
    if not steps_:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    return StepDb(steps=_tpu_rows(steps_, host), kind="device")


# --- entry points -------------------------------------------------------------------------------
def steps(frame: XSpaceFrame, host: str = "") -> StepDb:
    """The steps XProf finds on one host."""
    if tensor_core_planes(frame):
        return device_steps(frame, host)
    return host_steps(frame, host)


def run_steps(run, host: str | None = None) -> StepDb:
    """Steps of one host (`host`) or of every host of a run. Several TPU hosts: XProf's step
    intersection (pod_viewer.combine_hosts: hosts aligned by step timespans, steps renumbered 0..n-1,
    cores keyed host index * 1000 + core). Several CPU hosts: steps aligned by position, the
    slowest host's step kept."""
    hosts = [host] if host else run.hosts
    if len(hosts) == 1:
        return steps(run.frame(hosts[0]), hosts[0])
    frames = {h: run.frame(h) for h in hosts}
    if any(tensor_core_planes(f) for f in frames.values()):
        from tputui.analysis.pod_viewer import combine_hosts, host_step_db

        dbs = [host_step_db(f, h) for h, f in frames.items()]
        combined, _, _ = combine_hosts(dbs)
        per_step = []
        for _k, (step, per_core) in enumerate(combined):
            cats = {c: v[1] for c, v in per_core.items() if not v[2]}
            dur = max((v[0] for v in per_core.values()), default=0)
            if cats and dur > 0:
                per_step.append((step, 0, dur, cats))
        if not per_step:
            return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
        out = _tpu_rows(per_step, "")
        # Per-host durations differ: each core keeps its own host's step time.
        dur_of = {(step, c): v[0] for step, pc in combined for c, v in pc.items()}
        out = out.with_columns(duration_ps=pl.Series([dur_of.get((s_, c), d) for s_, c, d in zip(
            out["step"].to_list(), out["core"].to_list(), out["duration_ps"].to_list())], dtype=pl.Int64))
        return StepDb(steps=out.with_columns(end_ps=pl.col("begin_ps") + pl.col("duration_ps")), kind="device")
    dbs = [steps(f, h) for h, f in frames.items()]
    found = [d for d in dbs if d.has_steps]
    if len(found) < len(dbs) or not found:
        return StepDb(diagnostics=[NO_STEP_MARKER], kind="none")
    n = min(len(d.steps) for d in found)
    allh = pl.concat([d.steps.head(n).with_columns(pos=pl.int_range(pl.len())) for d in found])
    best = allh.sort("duration_ps", descending=True).group_by("pos").first().sort("pos").drop("pos")
    return StepDb(steps=best.select(list(STEP_COLUMNS)), kind="host")


def stats_ms(values) -> dict[str, float]:
    """avg / stddev (sample) / min / max of a list in ms (XProf's zeros when empty)."""
    v = np.asarray(values, np.float64)
    if len(v) == 0:
        return {"avg": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    return {"avg": float(v.mean()), "stddev": 0.0 if math.isnan(sd) else sd, "min": float(v.min()),
            "max": float(v.max())}
