"""XProf's derived lines of a TPU TensorCore plane in the trace viewer (derived_timeline.cc).

DeriveLinesFromStats groups a core's ops by step (the merged `Steps` events), else by XLA module,
and from their op-metadata stats derives "Framework Name Scope" (nested `tf_op` scopes, XProf's
1 ns shortening of stacked equal spans included), "Framework Ops", "Source code" and
"Host Offload Ops row N" (copy start/done pairs packed onto rows). The ops are taken in XProf's
sort order, ties included (libstdc++'s std::sort is replayed, see stdsort.py). The events go into
the trace build's chunks with kind KIND_DERIVED (trace_events.py builds everything else).
"""
from __future__ import annotations

import re
from types import ModuleType
from typing import Protocol

import numpy as np
import polars as pl

from tputui.analysis.stdsort import sort_order
from tputui.analysis.trace_kinds import KIND_DERIVED
from tputui.data import schema
from tputui.data.interned import Interned
from tputui.data.raw import RawXSpace
from tputui.data.xspace import XSpaceFrame

_derive: ModuleType | None  # None: the C extension is not built
try:
    from tputui.analysis import _derive
except ImportError:  # built without a C compiler: the one-at-a-time Python path
    _derive = None


# Derived thread ids (trace_utils.h: kThreadIdDerivedMin = 0xdeadbeef).
TID_NAME_SCOPE = 0xDEADBEEF + 2
TID_TF_OP = 0xDEADBEEF + 3
TID_SOURCE = 0xDEADBEEF + 7
TID_OFFLOAD_FIRST = 0xDEADBEEF + 8
MAX_OFFLOAD_ROWS = 41

OFFLOAD_KEYWORDS = ("copy-start", "copy-done", "dynamic-slice-start", "dynamic-slice-done",
                    "dynamic-update-slice-start", "dynamic-update-slice-done")
HOST_MEMORY_LABEL = "S(5)"

# Derive TPU lines with array operations when every op has a group (tests switch it off to
# compare with the op-by-op reference).
DERIVE_COLUMNS = True
STD_SORT_MAX = 400_000  # events of one TPU core up to which std::sort's tie order is replayed
OFFLOAD_IN_C = True  # tests switch it off to compare with _OffloadRows


class EventBuild(Protocol):
    """What the derived lines read of the trace build (trace_events._Build)."""

    f: XSpaceFrame
    r: RawXSpace
    start: np.ndarray  # ps, per frame row
    dur: np.ndarray
    ev_md: np.ndarray  # metadata row per frame row (-1 -> the trailing "" row)
    names: Interned  # the trace's event names
    chunks: list[tuple]  # (pid, tid, start, dur, name, source, kind) arrays


class DeviceLines:
    """DeriveLinesFromStats for one TPU tensor-core plane (derived_timeline.cc)."""

    def __init__(self, b: EventBuild, plane: int, pid: int, step_spans: tuple[np.ndarray, np.ndarray] | None) -> None:
        """step_spans: (starts, ends) of the core's merged Steps events, None without them."""
        self.b, self.plane, self.pid = b, plane, pid
        self.step_spans = step_spans
        r = b.r
        self.lines = [li for li in range(len(r.line_id)) if r.line_plane[li] == plane]
        self.new_events: dict[int, list] = {}  # tid -> list of [start, end, name_id, source]
        self.arrays: dict[int, list] = {}  # tid -> list of (starts, ends, name_ids, sources) arrays

    def groups(self, rows: np.ndarray) -> np.ndarray:
        """Group label per event row: the (merged) Steps event, or else the XLA Modules event, it
        overlaps; -1 if none (GroupLine)."""
        r, b = self.b.r, self.b
        if self.step_spans is not None:
            gs, ge = self.step_spans
        else:
            li = next((li for li in self.lines if r.line_name[li] == schema.LINE_XLA_MODULES and r.line_num_events[li]), None)
            if li is None:
                return np.full(len(rows), -1, np.int64)
            sl = b.f.line_events(li)
            gs = np.sort(b.start[sl])
            ge = gs + b.dur[sl][np.argsort(b.start[sl], kind="stable")]
        if not len(gs):
            return np.full(len(rows), -1, np.int64)
        s = b.start[rows]
        e = s + b.dur[rows]
        # Closed-interval overlap with the last group event starting at or before the event's end.
        j = np.searchsorted(gs, e, "right") - 1
        jc = np.clip(j, 0, len(gs) - 1)
        hit = (j >= 0) & (ge[jc] >= s)
        return np.where(hit, jc, -1)

    def derive(self, threads: list[tuple[int, int, str]], derived: bool = True) -> list[tuple[int, int, str]]:
        b, r, f = self.b, self.b.r, self.b.f
        rows = np.concatenate([np.arange(f.line_events(li).start, f.line_events(li).stop) for li in self.lines]
                              + [np.zeros(0, np.int64)]).astype(np.int64)
        if len(rows) and derived:
            self.derive_from(rows)
        # RemoveEmptyLines: this plane keeps only lines with events.
        counts: dict[int, int] = {}
        for li in self.lines:
            tid = int((r.line_display_id[li] or r.line_id[li]) & 0xFFFFFFFF)
            counts[tid] = counts.get(tid, 0) + int(r.line_num_events[li])
        out = [t for t in threads if t[0] != self.pid or counts.get(t[1], 0) > 0]
        names = {TID_NAME_SCOPE: "Framework Name Scope", TID_TF_OP: "Framework Ops", TID_SOURCE: "Source code"}
        for tid, evs in self.new_events.items():  # events built one by one (sequential path, offload rows)
            if evs:
                a = np.array([e[:2] + [e[3]] for e in evs], np.int64).reshape(-1, 3)
                self.arrays.setdefault(tid, []).append((a[:, 0], a[:, 1], np.array([e[2] for e in evs], np.int32),
                                                        a[:, 2]))
        for tid in sorted(self.arrays):
            s, e, nm, src = (np.concatenate(c) for c in zip(*self.arrays[tid]))
            if not len(s):
                continue
            out.append((self.pid, tid, names.get(tid) or f"Host Offload Ops row {tid - TID_OFFLOAD_FIRST}"))
            b.chunks.append((np.full(len(s), self.pid, np.int64), np.full(len(s), tid, np.int64), s, e - s,
                             nm.astype(np.int32), src.astype(np.int64), np.full(len(s), KIND_DERIVED, np.uint8)))
        return out

    def op_stats(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: text id of its tf_op and source (event stat over op-metadata stat; -1 when
        absent or empty) and whether it is async (`_a`)."""
        b, f = self.b, self.b.f
        n_md = len(b.r.em_name) + 1
        out = []
        for owner, pick in (("metadata", None), ("event", rows)):
            vals = f.stat_values(owner, ["tf_op", "source", "_a"])
            if pick is not None and vals.height:  # a mask, not is_in: Polars converts a big list slowly
                mine = np.zeros(b.r.num_events, bool)
                mine[pick] = True
                vals = vals.filter(pl.Series(mine[vals["owner"].to_numpy()]))
            out.append(vals)
        md_vals, ev_vals = out
        tf_md, src_md, asy_md = (np.full(n_md, -1, np.int64), np.full(n_md, -1, np.int64), np.zeros(n_md, bool))
        _scatter_stats(md_vals, tf_md, src_md, asy_md, md_vals["owner"].to_numpy())
        md = b.ev_md[rows]
        tf, src, asy = tf_md[md], src_md[md], asy_md[md]
        if ev_vals.height:
            order = np.argsort(rows, kind="stable")
            pos = order[np.searchsorted(rows[order], ev_vals["owner"].to_numpy())]
            _scatter_stats(ev_vals, tf, src, asy, pos)
        empty = np.array([t == "" for t in f.texts] + [True])  # text id -1 picks the trailing True
        tf[empty[tf]] = -1
        src[empty[src]] = -1
        return tf, src, asy

    def derive_from(self, rows: np.ndarray) -> None:
        """rows: every event of the plane, in line order (GetSortedEvents' input)."""
        b = self.b
        tf, src, asy = self.op_stats(rows)
        offload = self.offload_candidates(rows)
        wanted = ~asy & ((tf >= 0) | (src >= 0) | offload)
        if not wanted.any():
            return
        # GetSortedEvents: by start, then shorter first. Only the ops with op stats matter, and
        # their order is fixed unless two of them tie; then std::sort's order for ties, which
        # depends on every event of the plane, is replayed (up to STD_SORT_MAX events).
        w = np.flatnonzero(wanted)
        rw = rows[w]
        s_, d_ = b.start[rw], b.dur[rw]
        order = np.lexsort((d_, s_))
        s_, d_ = s_[order], d_[order]
        if len(w) > 1 and ((s_[1:] == s_[:-1]) & (d_[1:] == d_[:-1])).any() and len(rows) <= STD_SORT_MAX:
            full = sort_order(b.start[rows], b.dur[rows])
            interesting = full[wanted[full]]
        else:
            interesting = w[order]
        rows_i = rows[interesting]
        groups = self.groups(rows_i)
        tf_i, src_i = tf[interesting], src[interesting]
        if DERIVE_COLUMNS and (groups[(tf_i >= 0) | (src_i >= 0)] >= 0).all():
            self.derive_columns(rows_i, tf_i, src_i, groups)  # every op is in a step / module
        else:
            self.derive_sequential(rows_i, tf_i, src_i, groups)
        self.add_offload_rows(rows_i[offload[interesting]])

    def add_offload_rows(self, rows: np.ndarray) -> None:
        """Host Offload Ops rows from copy start/done ops (rows: in sorted order). In C when
        built (`_derive.pair_offload`); `_OffloadRows` is the reference, one op at a time."""
        if _derive is None or not OFFLOAD_IN_C:
            offload_rows = _OffloadRows(self)
            for row in rows.tolist():  # copy start/done pairs only
                offload_rows.add(row)
            return
        if not len(rows):
            return
        b, r = self.b, self.b.r
        md_u, md_inv = np.unique(b.ev_md[rows], return_inverse=True)
        labels: dict[str, int] = {}
        label_of_md = np.zeros(len(md_u), np.int64)
        kind_of_md = np.zeros(len(md_u), np.int64)
        for k, md in enumerate(md_u.tolist()):  # per distinct op, not per event
            shown = r.em_display_name[md] or r.em_name[md]
            label_of_md[k] = labels.setdefault(offload_name(shown), len(labels))
            kind_of_md[k] = 1 if "-start" in shown else 2 if "-done" in shown else 0
        label = label_of_md[md_inv]
        s = b.start[rows].astype(np.int64)
        e = s + b.dur[rows]
        pairs = np.frombuffer(_derive.pair_offload(label, kind_of_md[md_inv], s, e, MAX_OFFLOAD_ROWS),
                              np.int64).reshape(-1, 3)
        if not len(pairs):
            return
        first, done, pick = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        # Intern the labels in the order the pairs meet them (as the one-at-a-time path does).
        text = list(labels)
        pair_label = label[first]
        u, at = np.unique(pair_label, return_index=True)
        name_of_label = np.zeros(len(text), np.int32)
        for lab in u[np.argsort(at)].tolist():
            name_of_label[lab] = b.names.id(text[lab])
        for k in np.unique(pick).tolist():  # per row (<= MAX_OFFLOAD_ROWS)
            m = pick == k
            self.arrays.setdefault(TID_OFFLOAD_FIRST + k, []).append(
                (s[first[m]], e[done[m]], name_of_label[pair_label[m]], rows[first[m]]))

    def derive_sequential(self, rows: np.ndarray, tf: np.ndarray, src: np.ndarray, groups: np.ndarray) -> None:
        """DeriveLinesFromStats event by event (the reference; used when some op has no group)."""
        b, texts = self.b, self.b.f.texts
        scope_line = _DerivedLine(self, TID_NAME_SCOPE)
        op_line = _DerivedLine(self, TID_TF_OP)
        scope_line.dependents = [op_line]
        src_line = _DerivedLine(self, TID_SOURCE)
        parsed: dict[str, tuple[list[str], str, bool]] = {}
        for k, row in enumerate(rows.tolist()):
            s = int(b.start[row])
            e = s + int(b.dur[row])
            group = int(groups[k])
            g = None if group < 0 else group
            if tf[k] >= 0:
                tf_op = texts[tf[k]]
                p = parsed.get(tf_op)
                if p is None:
                    p = parsed[tf_op] = parse_tf_op(tf_op)
                scopes, op_name, framework = p
                if framework and scopes:
                    scope_line.expand_or_add_levels([b.names.id(x) for x in scopes], s, e, g, row)
                op_line.expand_or_add(b.names.id(self.metadata_display(tf_op, op_name)), 0, s, e, g, row, key=tf_op)
            if src[k] >= 0:
                src_line.expand_or_add(b.names.id(texts[src[k]]), 0, s, e, g, row)
        scope_line.reset(0)

    def derive_columns(self, rows: np.ndarray, tf: np.ndarray, src: np.ndarray, groups: np.ndarray) -> None:
        """DeriveLinesFromStats as array operations, for when every op has a group (then an
        op continues the line's last event iff it has the same name and group: no gap rule).

        Same events as derive_sequential (tests compare them), but one pass per nesting level
        instead of one per op.
        """
        b, texts = self.b, self.b.f.texts
        starts = b.start[rows]
        ends = starts + b.dur[rows]
        # Source code: a new event when the source or the group changes.
        o = np.flatnonzero(src >= 0)
        if len(o):
            key = _string_keys(src[o], texts)
            self.emit_runs(TID_SOURCE, o, key, groups[o], starts, ends, rows,
                           lambda first: np.array([b.names.id(texts[t]) for t in src[o][first].tolist()], np.int32))
        o = np.flatnonzero(tf >= 0)
        if not len(o):
            return
        uniq, inv = np.unique(_string_keys(tf[o], texts), return_inverse=True)
        first_tid = np.zeros(len(uniq), np.int64)
        first_tid[inv] = tf[o]  # any text id of each distinct tf_op string
        parsed = [parse_tf_op(texts[t]) for t in first_tid.tolist()]
        op_name = np.array([b.names.id(self.metadata_display(texts[t], p[1])) for t, p in zip(first_tid.tolist(), parsed)],
                           np.int32)
        scoped_u = np.array([p[2] and len(p[0]) > 0 for p in parsed], bool)
        depth = max((len(p[0]) for p in parsed), default=0)
        table = np.full((len(uniq), max(depth, 1)), -1, np.int64)
        for u, p in enumerate(parsed):  # per distinct tf_op, not per op
            if p[2]:
                table[u, :len(p[0])] = [b.names.id(x) for x in p[0]]
        in_q = scoped_u[inv]
        q = o[in_q]  # ops with name scopes, in time order
        reset0 = np.zeros(len(o), bool)
        if len(q):
            common = self.emit_scopes(q, table[inv[in_q]], groups[q], starts, ends, rows)
            reset0[in_q] = common == 0  # the scope line restarted: so does Framework Ops
        self.emit_runs(TID_TF_OP, o, inv, groups[o], starts, ends, rows, lambda first: op_name[inv[first]],
                       extra_breaks=reset0)

    def emit_runs(self, tid: int, o: np.ndarray, key: np.ndarray, g: np.ndarray, starts, ends, rows, name_of,
                  extra_breaks: np.ndarray | None = None) -> None:
        """One derived event per run of consecutive ops with the same key and group."""
        new = np.ones(len(o), bool)
        new[1:] = (key[1:] != key[:-1]) | (g[1:] != g[:-1])
        if extra_breaks is not None:
            new |= extra_breaks
        first = np.flatnonzero(new)
        end = np.maximum.reduceat(ends[o], first)
        self.arrays.setdefault(tid, []).append((starts[o[first]], end, name_of(first), rows[o[first]]))

    def emit_scopes(self, q: np.ndarray, m: np.ndarray, g: np.ndarray, starts, ends, rows) -> np.ndarray:
        """Framework Name Scope: nested scope events, level by level; returns each op's common
        prefix with the previous scoped op (0 where the line restarted)."""
        n, depth = m.shape
        length = (m >= 0).sum(1)
        common = np.zeros(n, np.int64)
        if n > 1:
            same = (m[1:] == m[:-1]) & (m[1:] >= 0)
            common[1:] = np.cumprod(same, axis=1).sum(1)
            common[1:][g[1:] != g[:-1]] = 0
        block_of = np.full((n, depth), -1, np.int64)
        b_start, b_end, b_name, b_src = [], [], [], []
        count = 0
        for level in range(depth):  # per nesting level
            member = np.flatnonzero(length > level)
            if not len(member):
                break
            new = level >= common[member]
            first = member[new]
            bid = np.cumsum(new) - 1 + count
            block_of[member, level] = bid
            cut = np.flatnonzero(new)
            b_start.append(starts[q[first]])
            b_end.append(np.maximum.reduceat(ends[q[member]], cut))
            b_name.append(m[first, level])
            b_src.append(rows[q[first]])
            count += len(first)
        bs, be = np.concatenate(b_start), np.concatenate(b_end)
        # AdjustDurationForTraceViewer: when a stack of levels ends together, each level with
        # the same span as the one above it is shortened by one more ns (at most to 1 ns on top).
        lo = np.zeros(n, np.int64)
        lo[:-1] = common[1:]  # the restart level after each op; 0 after the last
        top = length - 1
        lv = np.arange(depth)
        valid = (lv[None, :] >= lo[:, None]) & (lv[None, :] <= top[:, None])
        blk = np.where(valid, block_of, 0)
        s_, e_ = bs[blk], be[blk]
        eq = np.zeros((n, depth), bool)
        eq[:, 1:] = valid[:, 1:] & valid[:, :-1] & (s_[:, 1:] == s_[:, :-1]) & (e_[:, 1:] == e_[:, :-1])
        shrink = np.cumsum(eq, axis=1)
        top_blk = block_of[np.arange(n), np.maximum(top, 0)]
        cap = np.maximum((be[top_blk] - bs[top_blk]) // 1000 - 1, 0)
        shrink = np.minimum(shrink, cap[:, None])
        hit = valid & (shrink > 0)
        be[block_of[hit]] -= 1000 * shrink[hit]
        self.arrays.setdefault(TID_NAME_SCOPE, []).append(
            (bs, be, np.concatenate(b_name).astype(np.int32), np.concatenate(b_src)))
        return common

    def metadata_display(self, name: str, default: str) -> str:
        """GetOrCreateEventMetadata(name): an existing metadata keeps its display name."""
        cache = getattr(self, "_md_display", None)
        if cache is None:
            r = self.b.r
            cache = self._md_display = {n: d for p, n, d in zip(r.em_plane.tolist(), r.em_name, r.em_display_name)
                                        if p == self.plane}
        d = cache.get(name)
        return d if d else default

    def offload_candidates(self, rows: np.ndarray) -> np.ndarray:
        r = self.b.r
        md = self.b.ev_md[rows]
        flag = np.zeros(len(r.em_name) + 1, bool)
        for m, (n, d) in enumerate(zip(r.em_name, r.em_display_name)):
            shown = d or n
            if HOST_MEMORY_LABEL in n and any(k in shown for k in OFFLOAD_KEYWORDS):
                flag[m] = True
        return flag[md]


U64 = (1 << 64) - 1


class _DerivedLine:
    """DerivedXLineBuilder: per nesting level, the last event, expanded while ops continue it."""

    def __init__(self, dev: DeviceLines, tid: int) -> None:
        self.dev, self.tid = dev, tid
        self.events: list[list] = dev.new_events.setdefault(tid, [])  # [start, end, name, source]
        self.last: list[tuple[list, int | None, object] | None] = []  # per level: (event, group, key)
        self.dependents: list[_DerivedLine] = []

    def expand_or_add(self, name: int, level: int, s: int, e: int, g: int | None, source: int,
                      key: object = None) -> None:
        """key: the event's metadata identity (its full tf_op for Framework Ops), else its name."""
        key = name if key is None else key
        while len(self.last) <= level:
            self.last.append(None)
        cur = self.last[level]
        if cur is not None:
            ev, cg, ck = cur
            if ck == key and cg == g and (g is not None or ev[1] + 2 * (ev[1] - ev[0]) >= s):
                ev[0], ev[1] = min(ev[0], s), max(ev[1], e)
                return
        self.reset(level)
        ev = [s, e, name, source]
        self.events.append(ev)
        self.last[level] = (ev, g, key)

    def expand_or_add_levels(self, names: list[int], s: int, e: int, g: int | None, source: int) -> None:
        for level, name in enumerate(names):
            self.expand_or_add(name, level, s, e, g, source)
        self.reset(len(names))

    def reset(self, level: int) -> None:
        self.adjust_durations(level)
        for i in range(level, len(self.last)):
            self.last[i] = None
        if level == 0:
            for d in self.dependents:
                d.reset(0)

    def adjust_durations(self, level: int) -> None:
        """Stacked events with equal spans: shrink each deeper one by 1 ns more (XProf does)."""
        if level >= len(self.last) or self.last[level] is None:
            return
        top = level
        while top + 1 < len(self.last) and self.last[top + 1] is not None:
            top += 1
        if top <= level:
            return
        stack = [cur[0] for cur in self.last[level:top + 1] if cur is not None]  # all set (the loop above)
        t_ev = stack[-1]
        max_shrink_ns = (t_ev[1] - t_ev[0]) // 1000 - 1
        shrink = 0
        prev = None
        for ev in stack:
            span = (ev[0], ev[1])
            if shrink < max_shrink_ns and prev == span:
                shrink += 1
            prev = span
            if shrink:
                ev[1] = span[1] - 1000 * shrink

    def flush(self) -> None:
        pass


class _OffloadRows:
    """HostOffloadEventProcessor: pair copy-start/-done ops and pack them onto rows."""

    def __init__(self, dev: DeviceLines) -> None:
        self.dev = dev
        self.pending: dict[str, list[int]] = {}
        self.frontier: list[int] = []

    def add(self, row: int) -> None:
        b = self.dev.b
        r = b.r
        md = int(b.ev_md[row])
        shown = r.em_display_name[md] or r.em_name[md]
        label = offload_name(shown)
        queue = self.pending.setdefault(label, [])
        if "-start" in shown:
            queue.append(row)
            return
        if "-done" not in shown or not queue:
            return
        first = queue.pop(0)
        s = int(b.start[first])
        e = int(b.start[row] + b.dur[row])
        pick, best = -1, s
        for i, fr in enumerate(self.frontier):
            if fr <= best:
                pick, best = i, fr
        if pick == -1:
            if len(self.frontier) < MAX_OFFLOAD_ROWS:
                self.frontier.append(e)
            pick = len(self.frontier) - 1
        self.frontier[pick] = max(self.frontier[pick], e)
        tid = TID_OFFLOAD_FIRST + pick
        self.dev.new_events.setdefault(tid, []).append([s, e, b.names.id(label), first])


def _scatter_stats(vals: pl.DataFrame, tf: np.ndarray, src: np.ndarray, asy: np.ndarray, pos: np.ndarray) -> None:
    """Write tf_op / source text ids and the async flag of long-form stats `vals` at `pos`."""
    name = vals["stat_name"].to_numpy()
    tid = vals["text_id"].to_numpy()
    flag = vals["int"].fill_null(vals["uint"].cast(pl.Int64, strict=False)).fill_null(0).to_numpy() != 0
    for stat, target, value in (("tf_op", tf, tid), ("source", src, tid), ("_a", asy, flag)):
        sel = name == stat
        target[pos[sel]] = value[sel]


def _string_keys(text_ids: np.ndarray, texts: list[str]) -> np.ndarray:
    """Text ids -> ids that are equal exactly when the strings are (a text may repeat)."""
    uniq, inv = np.unique(text_ids, return_inverse=True)
    index: dict[str, int] = {}
    canon = np.array([index.setdefault(texts[t], len(index)) for t in uniq.tolist()], np.int64)
    return canon[inv]


def offload_name(op: str) -> str:
    """`copy-start.3` -> `offload-copy.3` (GetOffloadInstructionName)."""
    parts = op.split(".")
    ident = parts[-1] if len(parts) >= 2 else "0"
    for marker in ("-start", "-done"):
        pos = op.find(marker)
        if pos != -1:
            return f"offload-{op[:pos]}.{ident}"
    return f"offload-{op}.{ident}"


_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")


def parse_tf_op(full: str) -> tuple[list[str], str, bool]:
    """(name scopes, Framework Ops event name, is TF/JAX) of a `tf_op` (ParseTfOpFullname)."""
    parts = full.split(":", 1)
    if len(parts) != 2:
        return [], full.rstrip(), False
    name, typ = parts
    if name == "Iterator":
        return [], "Iterator::" + full.split("::")[-1], False
    if _TF_NAME.fullmatch(name) and _TF_TYPE.fullmatch(typ):
        return name.split("/")[:-1], typ, True
    op_type = typ if typ else _derive_op_type(name)
    if _JAX_TYPE.fullmatch(op_type):
        return name.split("/")[:-1], op_type.split("[", 1)[0], True
    if not typ:
        return name.split("/")[:-1], op_type, True
    return [], full.rstrip(), False


def _derive_op_type(full_op_name: str) -> str:
    op_name = full_op_name.split("/")[-1]
    suffix = op_name.split("_")[-1]
    try:
        int(suffix)
    except ValueError:
        return op_name
    return op_name[: len(op_name) - len(suffix) - 1]


