"""Several XSpace records of one host -> one RawXSpace, with XProf's MergeXSpace rules.

XProf (`xprof/convert/repository.cc`) takes the first record as it is and merges each later
one into it:
- hostnames, errors and warnings not seen yet are appended;
- a plane whose name is not in the merged space yet is appended as it is;
- a plane with a known name is merged: its event / stat metadata are matched by name (a new
  name gets the next free id, an empty name keeps its id), its lines are matched by id (a known
  line gets the events appended, its timestamp becomes the earlier of the two with offsets moved
  to match, its duration the longer; an unknown line is appended), event metadata ids and
  event-stat metadata ids are remapped, plane stats are added unless the plane has that stat
  already. Ref values and metadata stats are copied as they are.
Planes and lines are taken first to last. Checked against XProf 2.24.2 itself: on a profile whose
lines were spread over records, its memory_profile (which depends on the order it visits lines)
equals the one of the same profile rewritten with new lines appended first to last, not last to
first (tests/test_riegeli.py, the tpu_lines_zstd fixture).

Columns are merged, not messages: each record is decoded to columns on its own (so memory
follows the largest record plus the columns), ids are remapped with vectorized lookups, and the
events are put in final line order by one gather at the end.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tputui.data.raw import KIND_BYTES, KIND_STR, RawXSpace, StatColumns


@dataclass
class _Line:
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    segments: list = field(default_factory=list)  # (global first event, count, timestamp_ns)


@dataclass
class _Plane:
    index: int
    id: int
    name: str
    em_by_name: dict = field(default_factory=dict)
    em_next: int = 0
    sm_by_name: dict = field(default_factory=dict)
    sm_next: int = 0
    stat_ids: set = field(default_factory=set)
    lines: list = field(default_factory=list)


def _remap(ids: np.ndarray, mapping: dict[int, int]) -> np.ndarray:
    """ids through `mapping`; ids it does not name stay as they are."""
    if not mapping or not len(ids):
        return ids
    keys = np.fromiter(mapping.keys(), np.int64, len(mapping))
    vals = np.fromiter(mapping.values(), np.int64, len(mapping))
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    pos = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    return np.where(keys[pos] == ids, vals[pos], ids)


class _Stats:
    """Growing stat columns (owner rows already global)."""

    def __init__(self):
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, owner, stat, kind, value):
        self.parts.append((np.asarray(owner, np.int64), np.asarray(stat, np.int64),
                           np.asarray(kind, np.uint8), np.asarray(value, np.int64)))

    def columns(self) -> StatColumns:
        if not self.parts:
            return StatColumns.empty()
        return StatColumns(*(np.concatenate([p[i] for p in self.parts]) for i in range(4)))


def _shift_values(kind: np.ndarray, value: np.ndarray, str_base: int, blob_base: int) -> np.ndarray:
    """Str / bytes values index the record's own tables: move them to the merged tables."""
    value = value.copy()
    value[kind == KIND_STR] += str_base
    value[kind == KIND_BYTES] += blob_base
    return value


class XSpaceMerger:
    """Feed records with `add` in file order; `finish` gives the merged RawXSpace."""

    def __init__(self):
        self.records = 0
        self.single: RawXSpace | None = None  # one record: returned exactly as decoded
        self.hostnames: list[str] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.planes: list[_Plane] = []
        self.by_name: dict[str, int] = {}
        self.strings: list[str] = []
        self.blobs: list[bytes] = []
        self.em: dict[str, list] = {k: [] for k in ("plane", "id", "name", "display_name", "metadata")}
        self.em_children: list[tuple[np.ndarray, np.ndarray]] = []
        self.sm: dict[str, list] = {k: [] for k in ("plane", "id", "name", "description")}
        self.event_stats, self.metadata_stats, self.plane_stats = _Stats(), _Stats(), _Stats()
        self.events: dict[str, list[np.ndarray]] = {k: [] for k in ("metadata_id", "offset_ps", "num_occurrences",
                                                                       "duration_ps")}
        self.num_events = 0
        self.part_base: list[int] = []  # first merged event row of each record's columns

    # --- one record ------------------------------------------------------------------------
    def add(self, r: RawXSpace) -> None:
        self.records += 1
        if self.records == 1:
            self.single = r
            return
        if self.single is not None:
            first, self.single = self.single, None
            self._add(first, first=True)
        self._add(r, first=False)

    def _add(self, r: RawXSpace, first: bool) -> None:
        if first:
            self.hostnames, self.errors, self.warnings = list(r.hostnames), list(r.errors), list(r.warnings)
        else:
            for mine, theirs in ((self.hostnames, r.hostnames), (self.errors, r.errors), (self.warnings, r.warnings)):
                seen = set(mine)
                for s in theirs:
                    if s not in seen:
                        seen.add(s)
                        mine.append(s)
        str_base, blob_base, ev_base = len(self.strings), len(self.blobs), self.num_events
        self.strings.extend(r.strings)
        self.blobs.extend(r.blobs)
        self._em_global = np.full(len(r.em_id), -1, np.int64)  # record em row -> merged row, if copied
        ev_mid = r.event_metadata_id.astype(np.int64, copy=True)
        es = r.event_stats
        es_stat = es.stat.astype(np.int64, copy=True)
        es_sorted = len(es.owner) < 2 or bool(np.all(es.owner[1:] >= es.owner[:-1]))
        known = dict(self.by_name)  # XProf looks planes up in the space as it was before this record
        for p in range(len(r.plane_id)):
            name = r.plane_name[p]
            target = None if first else known.get(name)
            lines = np.flatnonzero(r.line_plane == p).tolist()
            if target is None:
                plane = self._new_plane(r, p, blob_base, str_base)
                for li in lines:
                    plane.lines.append(self._line(r, li, ev_base))
                continue
            plane = self.planes[target]
            em_map = self._merge_metadata(plane, r, p, blob_base, str_base, event=True)
            sm_map = self._merge_metadata(plane, r, p, blob_base, str_base, event=False)
            to_lines = {line.id: line for line in plane.lines}
            for li in lines:
                a = int(r.line_first_event[li])
                b = a + int(r.line_num_events[li])
                if em_map:  # usually empty: records of one profile share their metadata ids
                    ev_mid[a:b] = _remap(ev_mid[a:b], em_map)
                if sm_map and es_sorted:
                    sa, sb = np.searchsorted(es.owner, [a, b])
                    es_stat[sa:sb] = _remap(es_stat[sa:sb], sm_map)
                elif sm_map:
                    sel = (es.owner >= a) & (es.owner < b)
                    es_stat[sel] = _remap(es_stat[sel], sm_map)
                line = to_lines.get(int(r.line_id[li]))
                if line is None:
                    plane.lines.append(self._line(r, li, ev_base))
                    continue
                ts = int(r.line_timestamp_ns[li])
                line.segments.append((ev_base + a, b - a, ts))
                line.timestamp_ns = min(line.timestamp_ns, ts)
                line.duration_ps = max(line.duration_ps, int(r.line_duration_ps[li]))
            ps = r.plane_stats
            for j in np.flatnonzero(ps.owner == p).tolist():
                sid = sm_map.get(int(ps.stat[j]), int(ps.stat[j]))
                if sid in plane.stat_ids:
                    continue
                plane.stat_ids.add(sid)
                self.plane_stats.add([plane.index], [sid], ps.kind[j:j + 1],
                                     _shift_values(ps.kind[j:j + 1], ps.value[j:j + 1], str_base, blob_base))
        self.part_base.append(ev_base)
        for k, col in (("metadata_id", ev_mid), ("offset_ps", r.event_offset_ps),
                       ("num_occurrences", r.event_num_occurrences), ("duration_ps", r.event_duration_ps)):
            self.events[k].append(np.asarray(col, np.int64))
        self._copy_em_children_and_stats(r, str_base, blob_base)
        self.event_stats.add(es.owner + ev_base, es_stat, es.kind, _shift_values(es.kind, es.value, str_base, blob_base))
        self.num_events += len(r.event_line)

    def _line(self, r: RawXSpace, li: int, ev_base: int) -> _Line:
        ts = int(r.line_timestamp_ns[li])
        line = _Line(int(r.line_id[li]), int(r.line_display_id[li]), r.line_name[li], r.line_display_name[li],
                     ts, int(r.line_duration_ps[li]))
        line.segments.append((ev_base + int(r.line_first_event[li]), int(r.line_num_events[li]), ts))
        return line

    def _new_plane(self, r: RawXSpace, p: int, blob_base: int, str_base: int) -> _Plane:
        plane = _Plane(len(self.planes), int(r.plane_id[p]), r.plane_name[p])
        self.planes.append(plane)
        self.by_name[plane.name] = plane.index
        for i in np.flatnonzero(r.em_plane == p).tolist():
            self._copy_em(plane, r, i, int(r.em_id[i]), blob_base)
        for i in np.flatnonzero(r.sm_plane == p).tolist():
            self._copy_sm(plane, r, i, int(r.sm_id[i]))
        ps = r.plane_stats
        sel = np.flatnonzero(ps.owner == p)
        plane.stat_ids.update(ps.stat[sel].tolist())
        self.plane_stats.add(np.full(len(sel), plane.index), ps.stat[sel], ps.kind[sel],
                             _shift_values(ps.kind[sel], ps.value[sel], str_base, blob_base))
        return plane

    def _copy_em(self, plane: _Plane, r: RawXSpace, i: int, new_id: int, blob_base: int) -> None:
        self._em_global[i] = len(self.em["id"])
        md = int(r.em_metadata[i])
        for k, v in (("plane", plane.index), ("id", new_id), ("name", r.em_name[i]),
                     ("display_name", r.em_display_name[i]), ("metadata", md + blob_base if md >= 0 else -1)):
            self.em[k].append(v)
        if r.em_name[i]:
            plane.em_by_name[r.em_name[i]] = new_id
        plane.em_next = max(plane.em_next, new_id + 1)

    def _copy_em_children_and_stats(self, r: RawXSpace, str_base: int, blob_base: int) -> None:
        """Children and stats of the event metadata this record added (copied as they are)."""
        g = self._em_global
        if len(r.em_child_owner):
            owner = g[r.em_child_owner]
            keep = owner >= 0
            if keep.any():
                self.em_children.append((owner[keep], r.em_child_id[keep]))
        ms = r.metadata_stats
        if len(ms.owner):
            owner = g[ms.owner]
            sel = np.flatnonzero(owner >= 0)
            if len(sel):
                self.metadata_stats.add(owner[sel], ms.stat[sel], ms.kind[sel],
                                        _shift_values(ms.kind[sel], ms.value[sel], str_base, blob_base))

    def _copy_sm(self, plane: _Plane, r: RawXSpace, i: int, new_id: int) -> None:
        for k, v in (("plane", plane.index), ("id", new_id), ("name", r.sm_name[i]),
                     ("description", r.sm_description[i])):
            self.sm[k].append(v)
        if r.sm_name[i]:
            plane.sm_by_name[r.sm_name[i]] = new_id
        plane.sm_next = max(plane.sm_next, new_id + 1)

    def _merge_metadata(self, plane: _Plane, r: RawXSpace, p: int, blob_base: int, str_base: int,
                        event: bool) -> dict[int, int]:
        """{record id: merged id} for one plane's event (or stat) metadata, adding new names."""
        rows = np.flatnonzero((r.em_plane if event else r.sm_plane) == p).tolist()
        ids = r.em_id if event else r.sm_id
        names = r.em_name if event else r.sm_name
        by_name = plane.em_by_name if event else plane.sm_by_name
        mapping: dict[int, int] = {}
        for i in rows:
            rid, name = int(ids[i]), names[i]
            if not name:
                mapping[rid] = rid
                continue
            to = by_name.get(name)
            if to is None:
                to = plane.em_next if event else plane.sm_next
                if event:
                    self._copy_em(plane, r, i, to, blob_base)
                else:
                    self._copy_sm(plane, r, i, to)
            mapping[rid] = to
        return {k: v for k, v in mapping.items() if k != v}

    # --- the merged space ------------------------------------------------------------------
    def _time_order(self, lines, line_num, event_line, take, offset) -> np.ndarray | None:
        """Permutation that time-sorts the merged lines' events (None when they already are)."""
        merged_line = np.array([len(ln.segments) > 1 for _, ln in lines], bool)
        if not merged_line.any():
            return None
        occurrences = take(self.events["num_occurrences"])
        duration = take(self.events["duration_ps"])
        begin = np.where(occurrences > 0, 0, offset)  # aggregated events have no offset
        same_line = event_line[1:] == event_line[:-1]
        out_of_order = same_line & ((begin[1:] < begin[:-1]) | ((begin[1:] == begin[:-1]) & (duration[1:] > duration[:-1])))
        bad_lines = np.unique(event_line[1:][out_of_order])
        bad_lines = bad_lines[merged_line[bad_lines]]
        if not len(bad_lines):
            return None  # records that follow each other in time: nothing to move
        order = np.arange(len(offset), dtype=np.int64)
        first = np.concatenate(([0], np.cumsum(line_num)[:-1]))
        for li in bad_lines.tolist():
            a, b = int(first[li]), int(first[li] + line_num[li])
            order[a:b] = a + np.lexsort((-duration[a:b], begin[a:b]))
        return order

    def _regroup_event_stats(self, n: int, gather: np.ndarray | None, segments: tuple | None) -> StatColumns:
        """Event stats in the events' new order: each event's run of stats moved as a block
        (records give stats grouped by event, so no sort is needed). `segments` (runs, take):
        the events moved as whole runs of records' rows, so their stats are copied run by run."""
        parts = self.event_stats.parts
        if segments is not None and all(len(p[0]) < 2 or bool(np.all(p[0][1:] >= p[0][:-1])) for p in parts):
            runs, take = segments
            # Per record: each event's stat count and where its run of stats starts.
            ends = self.part_base[1:] + [n]
            per_event = [np.bincount(p[0] - base, minlength=end - base) for p, base, end
                         in zip(parts, self.part_base, ends)]
            bounds = [np.concatenate(([0], np.cumsum(c))) for c in per_event]
            stat_runs = [(k, int(bounds[k][a]), int(bounds[k][b])) for k, a, b in runs]
            owner = np.repeat(np.arange(n, dtype=np.int64), take(per_event))
            cols = [np.concatenate([parts[k][i][a:b] for k, a, b in stat_runs]) if stat_runs else parts[0][i][:0]
                    for i in (1, 2, 3)] if parts else [np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.int64)]
            parts.clear()
            return StatColumns(owner, *cols)
        if gather is None:  # runs whose stats were not grouped by event: index them one by one
            gather = np.concatenate([np.arange(self.part_base[k] + a, self.part_base[k] + b) for k, a, b in segments[0]]) \
                if segments and segments[0] else np.zeros(0, np.int64)
        es = self.event_stats.columns()
        parts.clear()
        if not len(es.owner):
            return es
        if len(es.owner) > 1 and not bool(np.all(es.owner[1:] >= es.owner[:-1])):
            o = np.argsort(es.owner, kind="stable")
            es = StatColumns(es.owner[o], es.stat[o], es.kind[o], es.value[o])
        per_event_all = np.bincount(es.owner, minlength=n)
        counts = per_event_all[gather]
        owner = np.repeat(np.arange(n, dtype=np.int64), counts)
        first = np.concatenate(([0], np.cumsum(per_event_all)[:-1]))
        total = int(counts.sum())
        starts = first[gather] - np.concatenate(([0], np.cumsum(counts)[:-1]))
        idx = np.repeat(starts, counts) + np.arange(total, dtype=np.int64)
        return StatColumns(owner, es.stat[idx], es.kind[idx], es.value[idx])

    def finish(self) -> RawXSpace:
        if self.single is not None:
            return self.single
        lines = [(plane.index, line) for plane in self.planes for line in plane.lines]
        seg_start, seg_count, seg_delta, line_counts = [], [], [], []
        for _, line in lines:
            n = 0
            for start, count, ts in line.segments:
                seg_start.append(start)
                seg_count.append(count)
                seg_delta.append((ts - line.timestamp_ns) * 1000)
                n += count
            line_counts.append(n)
        counts = np.array(seg_count, np.int64)
        total = int(counts.sum())
        seg_first = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else np.zeros(0, np.int64)
        line_num = np.array(line_counts, np.int64)
        event_line = np.repeat(np.arange(len(lines), dtype=np.int32), line_num)
        # A line that got events from several records comes out time-sorted (begin, then longer
        # first) in XProf; other lines keep their order. Checked against XProf's memory_profile
        # (which depends on event order) on the fixtures with lines and planes spread over records.
        seg_part = (np.searchsorted(np.array(self.part_base, np.int64), np.array(seg_start, np.int64), side="right") - 1
                    if seg_start else np.zeros(0, np.int64))
        # (record, first, end) of every run, in the record's own rows
        runs = [(k, a - self.part_base[k], a - self.part_base[k] + c)
                for k, a, c in zip(seg_part.tolist(), seg_start, seg_count)]

        def take(parts: list[np.ndarray]) -> np.ndarray:
            """One event column in line order: whole runs copied from the records' columns."""
            return np.concatenate([parts[k][a:b] for k, a, b in runs]) if runs else np.zeros(0, np.int64)

        offset = take(self.events["offset_ps"]) + np.repeat(np.array(seg_delta, np.int64), counts)
        order = self._time_order(lines, line_num, event_line, take, offset)
        segments: tuple | None = (runs, take)
        gather = None  # row of each event in the records' concatenated columns (only to re-sort)
        if order is not None:
            gather = np.repeat(np.array(seg_start, np.int64) - seg_first, counts) + np.arange(total, dtype=np.int64)
            gather, offset, segments = gather[order], offset[order], None
        cols = {"offset_ps": offset}
        for k, parts in self.events.items():
            if k != "offset_ps":
                cols[k] = take(parts) if segments is not None else np.concatenate(parts)[gather]
            parts.clear()
        line_first = np.concatenate(([0], np.cumsum(line_num)[:-1])) if len(line_num) else np.zeros(0, np.int64)
        event_stats = self._regroup_event_stats(total, gather, segments)
        # Metadata rows grouped by plane, as a decoder gives them.
        em_plane = np.array(self.em["plane"], np.int32)
        em_order = np.argsort(em_plane, kind="stable")
        em_new = np.empty(len(em_order), np.int64)
        em_new[em_order] = np.arange(len(em_order))
        ms = self.metadata_stats.columns()
        ms_owner = em_new[ms.owner] if len(ms.owner) else ms.owner
        mo = np.argsort(ms_owner, kind="stable")
        kids_owner = np.concatenate([k[0] for k in self.em_children]) if self.em_children else np.zeros(0, np.int64)
        kids_id = np.concatenate([k[1] for k in self.em_children]) if self.em_children else np.zeros(0, np.int64)
        kids_owner = em_new[kids_owner] if len(kids_owner) else kids_owner
        ko = np.argsort(kids_owner, kind="stable")
        sm_plane = np.array(self.sm["plane"], np.int32)
        sm_order = np.argsort(sm_plane, kind="stable")
        pst = self.plane_stats.columns()
        po = np.argsort(pst.owner, kind="stable")
        ems = lambda k: [self.em[k][i] for i in em_order.tolist()]
        sms = lambda k: [self.sm[k][i] for i in sm_order.tolist()]
        return RawXSpace(
            hostnames=self.hostnames, errors=self.errors, warnings=self.warnings,
            plane_id=np.array([p.id for p in self.planes], np.int64), plane_name=[p.name for p in self.planes],
            line_plane=np.array([p for p, _ in lines], np.int32),
            line_id=np.array([ln.id for _, ln in lines], np.int64),
            line_display_id=np.array([ln.display_id for _, ln in lines], np.int64),
            line_timestamp_ns=np.array([ln.timestamp_ns for _, ln in lines], np.int64),
            line_duration_ps=np.array([ln.duration_ps for _, ln in lines], np.int64),
            line_name=[ln.name for _, ln in lines], line_display_name=[ln.display_name for _, ln in lines],
            line_first_event=line_first, line_num_events=line_num,
            event_line=event_line,
            event_metadata_id=cols["metadata_id"], event_offset_ps=cols["offset_ps"],
            event_num_occurrences=cols["num_occurrences"], event_duration_ps=cols["duration_ps"],
            em_plane=em_plane[em_order], em_id=np.array(self.em["id"], np.int64)[em_order],
            em_name=ems("name"), em_display_name=ems("display_name"),
            em_metadata=np.array(self.em["metadata"], np.int64)[em_order],
            em_child_owner=kids_owner[ko], em_child_id=kids_id[ko],
            sm_plane=sm_plane[sm_order], sm_id=np.array(self.sm["id"], np.int64)[sm_order],
            sm_name=sms("name"), sm_description=sms("description"),
            event_stats=event_stats,
            metadata_stats=StatColumns(ms_owner[mo], ms.stat[mo], ms.kind[mo], ms.value[mo]),
            plane_stats=StatColumns(pst.owner[po], pst.stat[po], pst.kind[po], pst.value[po]),
            strings=self.strings, blobs=self.blobs,
        )


def merge(records: Iterable[RawXSpace]) -> RawXSpace:
    m = XSpaceMerger()
    for r in records:
        m.add(r)
    if m.records == 0:
        raise ValueError("no records")
    return m.finish()
