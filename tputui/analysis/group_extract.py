"""XProf's event grouping of a host plane read in pieces of its threads (a giant host's first pass).

Grouping needs every thread at once: roots are ranked over the whole plane and labels cross
threads along flows and links. But only a few events take part in it: roots, flow and link ends,
events with a step or iteration number, the launches the TPU steps look for. Every other event
only hands its parent's label down to its children. So each piece of threads nests its events
exactly (event_groups.nesting, on every event of its lines) and keeps just those events, each
with its nearest kept ancestor as parent: the same label reaches it as through the full chain.
The pieces' extracts, a few percent of the events, are then grouped together
(event_groups.label_groups), giving the groups one reading of the whole plane gives
(tests/test_host_pieces.py checks it on every fixture).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tputui.analysis import event_groups as eg
from tputui.analysis.event_grouping import LAUNCH_STATS, HostGrouping, LaunchKey, launch_columns
from tputui.analysis.event_groups import may_group
from tputui.analysis.nesting import depths_numpy
from tputui.analysis.op_metrics import event_stat
from tputui.analysis.tpu_steps import LAUNCH_EVENTS
from tputui.data.xspace import XSpaceFrame

__all__ = ["GroupExtract", "extract", "extract_with", "grouping_of", "groups", "launch_groups", "may_group"]

# Names that take part in grouping whatever their stats (roots, links, tf.data runs).
_GROUPING_NAMES = frozenset(eg.IMPLICIT_ROOTS | eg.ROOT_NAMES | eg.ITERATOR_GET_NEXT | eg.TF_DATA_FUNCTION_RUNS
                            | set(LAUNCH_EVENTS))


@dataclass
class GroupExtract:
    """The grouping's events of some threads of a host plane, in (thread, event) order."""

    start: np.ndarray  # int64 ps
    dur: np.ndarray  # int64 ps
    line: np.ndarray  # int32
    name: np.ndarray  # int32 index into names
    names: list[str]
    parent: np.ndarray  # int32: nearest kept ancestor (a position here), -1 for none
    stats: dict[str, tuple[np.ndarray, np.ndarray, dict[int, str]]]  # name -> (positions, values, {i: text value})
    launches: np.ndarray  # positions of the launch events here
    launch_stats: dict[str, tuple[np.ndarray, np.ndarray]]  # their LAUNCH_STATS
    loop_ops: bool  # the frame names a TF loop op: XProf does not group at all
    positions: np.ndarray  # of these events among the threads' events (event_groups.events_of order)

    @classmethod
    def empty(cls) -> GroupExtract:
        z = np.zeros(0, np.int64)
        return cls(z, z, z.astype(np.int32), z.astype(np.int32), [], z.astype(np.int32), {n: (z, z, {}) for n in eg.GROUP_STATS},
                   z, {n: (np.zeros(0, bool), z) for n in LAUNCH_STATS}, False, z)


def extract(frame: XSpaceFrame, plane: int | None = None) -> GroupExtract:
    """The grouping's events of the host plane's threads in `frame` (see module doc)."""
    return extract_with(frame, None, plane)[0]


def extract_with(frame: XSpaceFrame, also: np.ndarray | None,
                 plane: int | None = None) -> tuple[GroupExtract, np.ndarray]:
    """extract, keeping too the events at frame rows `also` (ascending), and their positions in
    it: such an event takes no part in the grouping, it only gets the label its nearest kept
    ancestor hands down (its group, as the whole plane's grouping gives it; -1 where a row is not
    one of the plane's events)."""
    loop = any(nm in eg.LOOP_OPS for nm in frame.raw.em_name)
    ev = eg.events_of(frame, plane)
    wanted_rows = np.zeros(0, np.int64) if also is None else np.asarray(also, np.int64)
    if ev is None:
        out = GroupExtract.empty()
        out.loop_ops = loop
        return out, np.full(len(wanted_rows), -1, np.int64)
    parent, _ = eg.nesting(ev)
    n = len(ev.start)
    keep = np.zeros(n, bool)
    for sp in ev.st.values():
        keep[sp.pos] = True
    wanted = np.fromiter((nm in _GROUPING_NAMES for nm in ev.names), bool, len(ev.names))
    keep |= wanted[ev.md_i]
    at = _positions_of(ev, wanted_rows)
    keep[at[at >= 0]] = True
    # Each kept event's nearest kept ancestor: climb while the ancestor is not kept (nesting is a
    # few levels deep, so a few whole-array steps).
    anc = parent.astype(np.int64)
    climb = np.flatnonzero(anc >= 0)
    climb = climb[~keep[anc[climb]]]
    while len(climb):
        anc[climb] = parent[anc[climb]]
        climb = climb[anc[climb] >= 0]
        climb = climb[~keep[anc[climb]]]
    kept = np.flatnonzero(keep)
    new = np.full(n, -1, np.int64)
    new[kept] = np.arange(len(kept))
    up = anc[kept]
    stats = {}
    for name, sp in ev.st.items():
        texts: dict[int, str] = {}
        own_t, _ = frame.stat_arrays("event", name, "text")
        if len(own_t):
            is_text = np.isin(_rows_of(ev, sp.pos), own_t)
            texts = {i: frame.text(int(sp.val[i])) for i in np.flatnonzero(is_text).tolist()}
        stats[name] = (new[sp.pos], sp.val.copy(), texts)
    launch_names = np.fromiter((nm in LAUNCH_EVENTS for nm in ev.names), bool, len(ev.names))
    launches = np.flatnonzero(launch_names[ev.md_i[kept]])
    rows = _rows_of(ev, kept[launches])
    return GroupExtract(
        start=np.asarray(ev.start[kept], np.int64), dur=np.asarray(ev.dur[kept], np.int64),
        line=np.asarray(ev.line[kept], np.int32), name=np.asarray(ev.md_i[kept], np.int32), names=list(ev.names),
        parent=np.where(up >= 0, new[np.clip(up, 0, None)], -1).astype(np.int32),
        stats=stats, launches=launches, launch_stats={s: event_stat(frame, s, rows) for s in LAUNCH_STATS},
        loop_ops=loop, positions=kept.astype(np.int64),
    ), np.where(at >= 0, new[np.clip(at, 0, None)], -1)


def _positions_of(ev: eg.Events, rows: np.ndarray) -> np.ndarray:
    """The positions in `ev` of frame rows (-1 for a row not among its events)."""
    src = ev.rows
    if isinstance(src, slice):
        pos = rows - src.start
        return np.where((pos >= 0) & (rows < src.stop), pos, -1)
    order = np.argsort(src, kind="stable")
    i = np.clip(np.searchsorted(src[order], rows), 0, max(len(src) - 1, 0))
    return np.where((len(src) > 0) & (src[order][i] == rows), order[i], -1) if len(src) else np.full(len(rows), -1)


def _rows_of(ev: eg.Events, pos: np.ndarray) -> np.ndarray:
    src = ev.rows
    return pos.astype(np.int64) + src.start if isinstance(src, slice) else src[pos]


def launch_groups(parts: list[GroupExtract]) -> dict[LaunchKey, int]:
    """tpu_steps.launch_groups of the host plane whose threads the parts hold (in thread order)."""
    return grouping_of(parts).launch_map()


def grouping_of(parts: list[GroupExtract]) -> HostGrouping:
    """The host's HostGrouping from its threads' extracts (in thread order): the same as
    host_grouping gives on a frame of the whole host (its roots are candidate ranks, not rows)."""
    if any(p.loop_ops for p in parts):
        return HostGrouping.empty(enabled=False)
    out = _labelled(parts)
    if out is None:
        return HostGrouping.empty()
    group, names, starter, named, roots, ev, parent = out
    n = len(names)
    offsets = np.cumsum([0] + [len(p.start) for p in parts[:-1]])
    at = np.concatenate([p.launches + o for p, o in zip(parts, offsets.tolist())])
    stats = {s: (np.concatenate([p.launch_stats[s][0] for p in parts]),
                 np.concatenate([p.launch_stats[s][1] for p in parts])) for s in LAUNCH_STATS}
    sel = group[at] >= 0
    keys, key_groups = launch_columns(group[at][sel], {s: (h[sel], v[sel]) for s, (h, v) in stats.items()})
    step_num = [eg.context_step_num(starter[g], ev.st, parent) for g in range(n)]
    return HostGrouping(
        True, np.array([roots.rank[g] for g in range(n)], np.int64), tuple(names[g] for g in range(n)),
        np.array([bool(named[starter[g]]) for g in range(n)], bool),
        np.array([-1 if v is None else v for v in step_num], np.int64), keys, key_groups, roots.candidates)


def groups(parts: list[GroupExtract]) -> tuple[np.ndarray, eg.Events | None]:
    """(group id of every extracted event, the events grouped) over the parts."""
    out = _labelled(parts)
    if out is None:
        return np.zeros(0, np.int64), None
    return out[0], out[5]


def _labelled(parts: list[GroupExtract]):
    """(group per event, group names, starters, named roots, Roots, the events, their parents) over the
    parts' extracts grouped together; None without events."""
    sizes = [len(p.start) for p in parts]
    total = sum(sizes)
    if total == 0:
        return None
    offsets = np.cumsum([0] + sizes[:-1])
    name_offsets = np.cumsum([0] + [len(p.names) for p in parts[:-1]])
    names = [nm for p in parts for nm in p.names]
    texts: dict[str, int] = {}
    text_list: list[str] = []
    st = {}
    for stat in eg.GROUP_STATS:
        pos, val = [], []
        for p, off in zip(parts, offsets.tolist()):
            sp, sv, stx = p.stats[stat]
            v = sv.copy() if stx else sv
            for i, t in stx.items():  # text values: one id per text over all pieces
                v[i] = texts.setdefault(t, len(texts))
                if v[i] == len(text_list):
                    text_list.append(t)
            pos.append(sp + off)
            val.append(v)
        st[stat] = eg.Sparse(np.concatenate(pos), np.concatenate(val))
    start = np.concatenate([p.start for p in parts])
    dur = np.concatenate([p.dur for p in parts])
    line = np.concatenate([p.line for p in parts])
    md_i = np.concatenate([p.name.astype(np.int64) + o for p, o in zip(parts, name_offsets.tolist())])
    parent = np.concatenate([np.where(p.parent >= 0, p.parent + o, -1).astype(np.int32)
                             for p, o in zip(parts, offsets.tolist())])
    ev = eg.Events(np.arange(total, dtype=np.int64), start, dur, line, md_i, names, st, text_list.__getitem__)
    down_order = np.argsort(depths_numpy(parent), kind="stable")  # parents before children
    group, names, starter, named, roots = eg.label_groups(ev, parent, down_order)
    return group, names, starter, named, roots, ev, parent
