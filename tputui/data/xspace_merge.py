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
  already. Ref values and metadata stats are copied as they are; strings and blobs (HLO protos) that
  records repeat are kept once in the merged tables.
Planes and lines are taken first to last. Checked against XProf 2.24.2 itself: on a profile whose
lines were spread over records, its memory_profile (which depends on the order it visits lines)
equals the one of the same profile rewritten with new lines appended first to last, not last to
first (tests/test_riegeli.py, the tpu_lines_zstd fixture).

Columns are merged, not messages, in two passes. First every record's lines are counted
(riegeli_layout.py: ids, times, events and event stats per line, nothing decoded), which gives
each (record, line) slice its final rows in the merged columns. Then each record is decoded on
its own, its ids remapped with vectorized lookups and its offsets shifted in place, and its
slices written straight to their final rows (riegeli_columns.py: files, so memory follows the
largest record, not the file). Only a line whose runs may be out of time order is read back
whole afterwards, and sorted if it is. Per record, the order facts of each line's run (sorted
inside, first and last event) are kept, so checking the order reads nothing back.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tputui.data.raw import KIND_BYTES, KIND_STR, RawXSpace, StatColumns
from tputui.data.riegeli_columns import EVENT_COLUMNS, STAT_COLUMNS, FileColumns, MemoryColumns, Write
from tputui.data.riegeli_layout import INT64_MAX, PLANE, Layout, TimesOutOfRange, lines_of
from tputui.data.xspace import _columns


class LayoutMismatch(Exception):
    """A decoded record's lines are not the ones its count gave (args: the record's index in the
    layout): the merge drops it and starts its second pass again."""


@dataclass
class _Line:
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    segments: list = field(default_factory=list)  # _Run of each record that has this line


@dataclass
class _Run:
    """One line of one record: its rows in the merged columns and what its time order needs."""
    event: int  # first row in the merged event columns
    count: int
    stat: int  # first row in the merged event-stat columns (stats grouped by event)
    stats: int
    timestamp_ns: int
    sorted: bool  # no event out of (begin, longer first) order inside the run
    aggregated: bool  # holds events with num_occurrences (begin 0 whatever the offset)
    first: tuple[int, int]  # (offset, duration) of its first and last events
    last: tuple[int, int]


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


@dataclass
class _OpenPlane:
    """One plane of the record being added: the merged plane it goes to, whether the record
    made it (its lines are new), else the id remaps and the plane's lines by id as they were
    before this record (built when its first line comes)."""
    plane: _Plane
    new: bool
    em_remap: _Remap | None = None
    sm_remap: _Remap | None = None
    to_lines: dict | None = None


@dataclass
class _Open:
    """The record being added (part after part): its planes, and how many of its lines came."""
    planes: list = field(default_factory=list)
    rows: int = 0


class _Remap:
    """Ids through a {from: to} mapping (ids it does not name stay as they are), built once per
    plane of a record and applied to each of its lines: a table indexed by id (ids are small
    metadata ids) when the largest mapped id allows, else sorted keys searched."""

    TABLE_MAX = 1 << 22  # ids above this: search instead of a table

    def __init__(self, mapping: dict[int, int]):
        keys = np.fromiter(mapping.keys(), np.int64, len(mapping))
        vals = np.fromiter(mapping.values(), np.int64, len(mapping))
        order = np.argsort(keys)
        self.keys, self.vals = keys[order], vals[order]
        self.table: np.ndarray | None = None
        if len(keys) and 0 <= self.keys[0] and self.keys[-1] < self.TABLE_MAX:
            self.table = np.arange(int(self.keys[-1]) + 1, dtype=np.int64)
            self.table[self.keys] = self.vals

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        if not len(self.keys) or not len(ids):
            return ids
        if self.table is not None:
            mapped = self.table.take(ids, mode="clip")  # right where 0 <= id <= the largest key
            return np.where((ids >= 0) & (ids < len(self.table)), mapped, ids)
        pos = np.minimum(np.searchsorted(self.keys, ids), len(self.keys) - 1)
        return np.where(self.keys[pos] == ids, self.vals[pos], ids)


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


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.int64)


def _c_writable(a: np.ndarray, dtype) -> bool:
    """Whether `a` can be changed in place by the C passes (`_columns`, when built)."""
    return a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable


def _nondecreasing(a: np.ndarray) -> bool:
    if _columns is not None and a.dtype == np.int64 and a.flags.c_contiguous:
        return _columns.nondecreasing(a)
    return len(a) < 2 or bool(np.all(a[1:] >= a[:-1]))


def _add_to_slices(column: np.ndarray, first: np.ndarray, count: np.ndarray, add: np.ndarray) -> None:
    """column[first[i]:first[i] + count[i]] += add[i], in place (one C pass, or a numpy add per slice)."""
    if _columns is not None and _c_writable(column, np.int64):
        try:
            _columns.add_to_slices(column, _i64(first), _i64(count), _i64(add))
        except OverflowError:
            raise TimesOutOfRange(-1) from None
        return
    for a, n, d in zip(first.tolist(), count.tolist(), add.tolist()):
        if n and d:
            part = column[a:a + n]
            if (d > 0 and int(part.max()) > INT64_MAX - d) or (d < 0 and int(part.min()) < -INT64_MAX - 1 - d):
                raise TimesOutOfRange(-1)
            part += d


def _shift_values(kind: np.ndarray, value: np.ndarray, str_map: np.ndarray, blob_map: np.ndarray,
                  in_place: bool = False) -> np.ndarray:
    """Str / bytes values index the record's own tables: point them into the merged tables."""
    value = value if in_place else value.copy()
    if _columns is not None and _c_writable(value, np.int64) and kind.dtype == np.uint8 and kind.flags.c_contiguous:
        # A kind whose map is empty has no values to move (-1: no stat has that kind).
        _columns.remap_kinds(kind, value, KIND_STR if len(str_map) else -1, _i64(str_map),
                             KIND_BYTES if len(blob_map) else -1, _i64(blob_map))
        return value
    for k, to in ((KIND_STR, str_map), (KIND_BYTES, blob_map)):
        sel = kind == k
        if len(to) and sel.any():
            value[sel] = to[value[sel]]
    return value


def _writable(a: np.ndarray, dtype, in_place: bool) -> np.ndarray:
    """`a` itself when it may be changed in place (the decoder's own columns), else a copy."""
    return a if in_place and a.dtype == dtype and a.flags.writeable else np.array(a, dtype)


def _intern(table: list, index: dict, items: list) -> np.ndarray:
    """Row in `table` of each of `items`, appending the ones not there yet: records repeat their
    metadata (HLO protos, names), so the merged tables keep one copy of each."""
    rows = []
    for item in items:
        row = index.get(item)
        if row is None:
            row = index[item] = len(table)
            table.append(item)
        rows.append(row)
    return np.array(rows, np.int64)


def _order_facts(r: RawXSpace):
    """line -> (sorted, aggregated, (offset, duration) of the first and of the last event) of one
    record's lines. Sorted: no neighbour out of XProf's order (begin, then longer first; an
    aggregated event, with num_occurrences, begins at 0). One C pass over the record's events
    (`_columns.order_facts`); `_order_sets` is the numpy way, used without the C extension."""
    occ, off, dur = r.event_num_occurrences, r.event_offset_ps, r.event_duration_ps
    first, count = r.line_first_event, r.line_num_events
    if _columns is not None:
        i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
        flags = np.frombuffer(_columns.order_facts(i64(first), i64(count), i64(occ), i64(off), i64(dur)), np.uint8)
        unsorted = set(np.flatnonzero((flags & 1) == 0).tolist())
        aggregated = set(np.flatnonzero(flags & 2).tolist())
    else:
        unsorted, aggregated = _order_sets(r)

    def facts(li: int):
        a, n = int(first[li]), int(count[li])
        if not n:
            return True, False, (0, 0), (0, 0)
        z = a + n - 1
        return (li not in unsorted, li in aggregated, (int(off[a]), int(dur[a])), (int(off[z]), int(dur[z])))
    return facts


def _order_sets(r: RawXSpace) -> tuple[set[int], set[int]]:
    """(lines with a neighbour pair out of order, lines with an aggregated event), in whole-record
    numpy passes: every neighbour pair compared, the pairs across line boundaries dropped after."""
    occ, off, dur = r.event_num_occurrences, r.event_offset_ps, r.event_duration_ps
    agg_rows = np.flatnonzero(occ > 0)
    begin = off
    if len(agg_rows):
        begin = off.copy()
        begin[agg_rows] = 0
    unsorted: set[int] = set()
    if len(begin) > 1:
        bad = begin[1:] < begin[:-1]
        tie = np.flatnonzero(begin[1:] == begin[:-1])
        bad[tie[dur[tie + 1] > dur[tie]]] = True
        bad_at = np.flatnonzero(bad)
        if len(bad_at):  # pair i compares events i and i + 1: count it when both are on one line
            lines = r.event_line
            bad_at = bad_at[lines[bad_at] == lines[bad_at + 1]]
            unsorted = set(np.unique(lines[bad_at]).tolist())
    return unsorted, set(np.unique(r.event_line[agg_rows]).tolist())


class XSpaceMerger:
    """Feed the records the layout was counted from with `add`, in file order; `finish` gives the
    merged RawXSpace. `out`: where the merged event columns are written (files or memory);
    `in_place`: the records' own columns may be changed (each record is dropped once added)."""

    def __init__(self, layout: Layout, out: FileColumns | MemoryColumns, in_place: bool = True):
        self.layout, self.out, self.in_place = layout, out, in_place
        self.records = 0
        self._open: _Open | None = None  # the record being added in parts
        self.hostnames: list[str] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.planes: list[_Plane] = []
        self.by_name: dict[str, int] = {}
        self.strings: list[str] = []
        self.blobs: list[bytes] = []
        self.string_rows: dict[str, int] = {}
        self.blob_rows: dict[bytes, int] = {}
        self.em: dict[str, list] = {k: [] for k in ("plane", "id", "name", "display_name", "metadata")}
        self.em_children: list[tuple[np.ndarray, np.ndarray]] = []
        self.sm: dict[str, list] = {k: [] for k in ("plane", "id", "name", "description")}
        self.metadata_stats, self.plane_stats = _Stats(), _Stats()
        out.begin(layout.events, layout.stats)

    # --- one record ------------------------------------------------------------------------
    def add(self, r: RawXSpace, planes: np.ndarray | None = None, rows: np.ndarray | None = None,
            last: bool = True) -> None:
        """The next record, whole (planes, rows None), or one part of it (riegeli_parts.py): for
        each of its planes the plane's place among the record's, for each of its lines the line's
        row in the record. The first part holds every plane of the record; `last`: its last part."""
        k = self.records
        counted, got = self.layout.records[k], lines_of(r)
        pl = np.arange(len(r.plane_name), dtype=np.int64) if planes is None else np.asarray(planes, np.int64)
        rw = np.arange(len(got.lines), dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
        if self._open is None and not np.array_equal(pl, np.arange(len(counted.plane_names))):
            raise LayoutMismatch(k)
        if len(pl) != len(got.plane_names) or len(rw) != len(got.lines) \
                or (len(pl) and (pl.min() < 0 or pl.max() >= len(counted.plane_names))) \
                or (len(rw) and (rw.min() < 0 or rw.max() >= len(counted.lines))) \
                or got.plane_names != [counted.plane_names[i] for i in pl.tolist()]:
            raise LayoutMismatch(k)
        seen = got.lines.copy()
        seen[:, PLANE] = pl[seen[:, PLANE]] if len(seen) else seen[:, PLANE]
        if not np.array_equal(seen, counted.lines[rw]):
            raise LayoutMismatch(k)
        if self._open is None:
            self._open = self._begin(r, k)
        self._open.rows += len(rw)
        self._lines(r, k, pl, rw)
        if last:
            if self._open.rows != len(counted.lines):
                raise LayoutMismatch(k)
            self._open = None
            self.records += 1

    def _begin(self, r: RawXSpace, k: int) -> _Open:
        """A record's planes, metadata and plane stats (from its whole decode or its first part)."""
        first = k == 0
        if first:
            self.hostnames, self.errors, self.warnings = list(r.hostnames), list(r.errors), list(r.warnings)
        else:
            for mine, theirs in ((self.hostnames, r.hostnames), (self.errors, r.errors), (self.warnings, r.warnings)):
                seen = set(mine)
                for s in theirs:
                    if s not in seen:
                        seen.add(s)
                        mine.append(s)
        str_map = _intern(self.strings, self.string_rows, r.strings)
        blob_map = _intern(self.blobs, self.blob_rows, r.blobs)
        self._em_global = np.full(len(r.em_id), -1, np.int64)  # record em row -> merged row, if copied
        opened = _Open()
        known = dict(self.by_name)  # XProf looks planes up in the space as it was before this record
        for p in range(len(r.plane_id)):
            name = r.plane_name[p]
            target = None if first else known.get(name)
            if target is None:
                opened.planes.append(_OpenPlane(self._new_plane(r, p, blob_map, str_map), new=True))
                continue
            plane = self.planes[target]
            em_map = self._merge_metadata(plane, r, p, blob_map, str_map, event=True)
            sm_map = self._merge_metadata(plane, r, p, blob_map, str_map, event=False)
            opened.planes.append(_OpenPlane(plane, False, _Remap(em_map) if em_map else None,
                                            _Remap(sm_map) if sm_map else None))
            ps = r.plane_stats
            for j in np.flatnonzero(ps.owner == p).tolist():
                sid = sm_map.get(int(ps.stat[j]), int(ps.stat[j]))
                if sid in plane.stat_ids:
                    continue
                plane.stat_ids.add(sid)
                self.plane_stats.add([plane.index], [sid], ps.kind[j:j + 1],
                                     _shift_values(ps.kind[j:j + 1], ps.value[j:j + 1], str_map, blob_map))
        self._copy_em_children_and_stats(r, str_map, blob_map)
        return opened

    def _lines(self, r: RawXSpace, k: int, pl: np.ndarray, rw: np.ndarray) -> None:
        """The lines of a record (or of a part of it): matched to the merged lines, their ids
        remapped and offsets shifted in place, written to their final rows."""
        assert self._open is not None
        place = self.layout.placements[k]
        str_map = _intern(self.strings, self.string_rows, r.strings)
        blob_map = _intern(self.blobs, self.blob_rows, r.blobs)
        ev_mid = _writable(r.event_metadata_id, np.int64, self.in_place)  # remapped and shifted in place: written once
        ev_off = _writable(r.event_offset_ps, np.int64, self.in_place)
        es = r.event_stats
        if not _nondecreasing(es.owner):
            o = np.argsort(es.owner, kind="stable")  # grouped by event, so a line's stats are one run
            es = StatColumns(es.owner[o], es.stat[o], es.kind[o], es.value[o])
        es_owner = _writable(es.owner, np.int64, self.in_place)
        es_stat = _writable(es.stat, np.int64, self.in_place)
        line_end = r.line_first_event + r.line_num_events
        stat_first, stat_end = np.searchsorted(es.owner, r.line_first_event), np.searchsorted(es.owner, line_end)
        facts = _order_facts(r)
        event_at, stat_at = place.event_at[rw], place.stat_at[rw]

        def run(li: int) -> _Run:
            n = int(r.line_num_events[li])
            sa, sb = int(stat_first[li]), int(stat_end[li])
            return _Run(int(event_at[li]), n, int(stat_at[li]), sb - sa, int(r.line_timestamp_ns[li]), *facts(li))
        for li, p in enumerate(pl[r.line_plane].tolist() if len(r.line_plane) else []):
            target = self._open.planes[p]
            plane = target.plane
            if target.new:
                plane.lines.append(self._line(r, li, run(li)))
                continue
            a = int(r.line_first_event[li])
            b = a + int(r.line_num_events[li])
            if target.em_remap is not None:  # usually none: records of one profile share their metadata ids
                ev_mid[a:b] = target.em_remap(ev_mid[a:b])
            if target.sm_remap is not None:
                sa, sb = int(stat_first[li]), int(stat_end[li])
                es_stat[sa:sb] = target.sm_remap(es_stat[sa:sb])
            if target.to_lines is None:  # the plane's lines as they were before this record's first
                target.to_lines = {line.id: line for line in plane.lines}
            line = target.to_lines.get(int(r.line_id[li]))
            if line is None:
                plane.lines.append(self._line(r, li, run(li)))
                continue
            ts = int(r.line_timestamp_ns[li])
            line.segments.append(run(li))
            line.timestamp_ns = min(line.timestamp_ns, ts)
            line.duration_ps = max(line.duration_ps, int(r.line_duration_ps[li]))
        es_value = _shift_values(es.kind, _writable(es.value, np.int64, self.in_place), str_map, blob_map, in_place=True)
        # Each line's slice straight to its final rows: offsets moved to the merged line's start,
        # stat owners to the merged event rows.
        _add_to_slices(ev_off, r.line_first_event, r.line_num_events, place.shift_ps[rw])
        _add_to_slices(es_owner, stat_first, stat_end - stat_first, event_at - r.line_first_event)
        batch: list[Write] = []
        for li in range(len(r.line_first_event)):
            a, n = int(r.line_first_event[li]), int(r.line_num_events[li])
            if not n:
                continue
            at, b = int(event_at[li]), a + n
            batch += [("metadata_id", ev_mid[a:b], n, at), ("offset_ps", ev_off[a:b], n, at),
                      ("num_occurrences", r.event_num_occurrences[a:b], n, at),
                      ("duration_ps", r.event_duration_ps[a:b], n, at), ("line", int(place.line[rw[li]]), n, at)]
            sa, sb = int(stat_first[li]), int(stat_end[li])
            if sb > sa:
                sat = int(stat_at[li])
                batch += [(name, col[sa:sb], sb - sa, sat) for name, col in
                          (("es.owner", es_owner), ("es.stat", es_stat), ("es.kind", es.kind), ("es.value", es_value))]
        self.out.write(batch)

    def _line(self, r: RawXSpace, li: int, first: _Run) -> _Line:
        line = _Line(int(r.line_id[li]), int(r.line_display_id[li]), r.line_name[li], r.line_display_name[li],
                     first.timestamp_ns, int(r.line_duration_ps[li]))
        line.segments.append(first)
        return line

    def _new_plane(self, r: RawXSpace, p: int, blob_map: np.ndarray, str_map: np.ndarray) -> _Plane:
        plane = _Plane(len(self.planes), int(r.plane_id[p]), r.plane_name[p])
        self.planes.append(plane)
        self.by_name[plane.name] = plane.index
        for i in np.flatnonzero(r.em_plane == p).tolist():
            self._copy_em(plane, r, i, int(r.em_id[i]), blob_map)
        for i in np.flatnonzero(r.sm_plane == p).tolist():
            self._copy_sm(plane, r, i, int(r.sm_id[i]))
        ps = r.plane_stats
        sel = np.flatnonzero(ps.owner == p)
        plane.stat_ids.update(ps.stat[sel].tolist())
        self.plane_stats.add(np.full(len(sel), plane.index), ps.stat[sel], ps.kind[sel],
                             _shift_values(ps.kind[sel], ps.value[sel], str_map, blob_map))
        return plane

    def _copy_em(self, plane: _Plane, r: RawXSpace, i: int, new_id: int, blob_map: np.ndarray) -> None:
        self._em_global[i] = len(self.em["id"])
        md = int(r.em_metadata[i])
        for k, v in (("plane", plane.index), ("id", new_id), ("name", r.em_name[i]),
                     ("display_name", r.em_display_name[i]), ("metadata", int(blob_map[md]) if md >= 0 else -1)):
            self.em[k].append(v)
        if r.em_name[i]:
            plane.em_by_name[r.em_name[i]] = new_id
        plane.em_next = max(plane.em_next, new_id + 1)

    def _copy_em_children_and_stats(self, r: RawXSpace, str_map: np.ndarray, blob_map: np.ndarray) -> None:
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
                                        _shift_values(ms.kind[sel], ms.value[sel], str_map, blob_map))

    def _copy_sm(self, plane: _Plane, r: RawXSpace, i: int, new_id: int) -> None:
        for k, v in (("plane", plane.index), ("id", new_id), ("name", r.sm_name[i]),
                     ("description", r.sm_description[i])):
            self.sm[k].append(v)
        if r.sm_name[i]:
            plane.sm_by_name[r.sm_name[i]] = new_id
        plane.sm_next = max(plane.sm_next, new_id + 1)

    def _merge_metadata(self, plane: _Plane, r: RawXSpace, p: int, blob_map: np.ndarray, str_map: np.ndarray,
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
                    self._copy_em(plane, r, i, to, blob_map)
                else:
                    self._copy_sm(plane, r, i, to)
            mapping[rid] = to
        return {k: v for k, v in mapping.items() if k != v}

    def close(self) -> None:
        """Drop the merged columns (a merge given up half way)."""
        self.out.close()

    # --- the merged space ------------------------------------------------------------------
    def finish(self) -> RawXSpace:
        """The merged space. Written to files, its event and event-stat columns are memory-mapped
        from them."""
        if self.records != len(self.layout.records):
            raise ValueError(f"merged {self.records} records of {len(self.layout.records)} counted")
        lines = [(plane.index, line) for plane in self.planes for line in plane.lines]
        line_num = self.layout.line_events
        if len(lines) != len(line_num):
            raise LayoutMismatch(-1)
        at = 0
        for li, (_, line) in enumerate(lines):
            runs = [run for run in line.segments if run.count]
            if len(line.segments) > 1 and not _in_order(runs, line.timestamp_ns):
                self._sort_line(at, int(line_num[li]), runs[0].stat, sum(r.stats for r in runs))
            at += int(line_num[li])
        return self._space(lines, line_num, self.out.result())

    def _sort_line(self, at: int, n: int, stat_at: int, stats: int) -> None:
        """A merged line whose runs may be out of order, read back whole: time-sorted (begin, then
        longer first) when any two neighbours are out of order, each event's stats moved with it."""
        read = self.out.read
        cols = {name: read(name, at, at + n) for name in EVENT_COLUMNS}
        duration = cols["duration_ps"]
        begin = np.where(cols["num_occurrences"] > 0, 0, cols["offset_ps"])
        bad = (begin[1:] < begin[:-1]) | ((begin[1:] == begin[:-1]) & (duration[1:] > duration[:-1]))
        if not bad.any():
            return
        order = np.lexsort((-duration, begin))
        batch: list[Write] = [(name, col[order], n, at) for name, col in cols.items()]
        st = {name: read(name, stat_at, stat_at + stats) for name in STAT_COLUMNS}
        per_event = np.bincount(st["es.owner"] - at, minlength=n)
        counts = per_event[order]
        first = np.concatenate(([0], np.cumsum(per_event)[:-1]))
        idx = np.repeat(first[order] - np.concatenate(([0], np.cumsum(counts)[:-1])), counts) \
            + np.arange(stats, dtype=np.int64)
        batch.append(("es.owner", np.repeat(np.arange(at, at + n, dtype=np.int64), counts), stats, stat_at))
        batch += [(name, st[name][idx], stats, stat_at) for name in ("es.stat", "es.kind", "es.value")]
        self.out.write(batch)

    def _space(self, lines: list, line_num: np.ndarray, cols: dict[str, np.ndarray]) -> RawXSpace:
        line_first = np.concatenate(([0], np.cumsum(line_num)[:-1])) if len(line_num) else np.zeros(0, np.int64)
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
            event_line=cols["line"],
            event_metadata_id=cols["metadata_id"], event_offset_ps=cols["offset_ps"],
            event_num_occurrences=cols["num_occurrences"], event_duration_ps=cols["duration_ps"],
            em_plane=em_plane[em_order], em_id=np.array(self.em["id"], np.int64)[em_order],
            em_name=ems("name"), em_display_name=ems("display_name"),
            em_metadata=np.array(self.em["metadata"], np.int64)[em_order],
            em_child_owner=kids_owner[ko], em_child_id=kids_id[ko],
            sm_plane=sm_plane[sm_order], sm_id=np.array(self.sm["id"], np.int64)[sm_order],
            sm_name=sms("name"), sm_description=sms("description"),
            event_stats=StatColumns(cols["es.owner"], cols["es.stat"], cols["es.kind"], cols["es.value"]),
            metadata_stats=StatColumns(ms_owner[mo], ms.stat[mo], ms.kind[mo], ms.value[mo]),
            plane_stats=StatColumns(pst.owner[po], pst.stat[po], pst.kind[po], pst.value[po]),
            strings=self.strings, blobs=self.blobs,
        )


def _in_order(runs: list[_Run], line_ts: int) -> bool:
    """True when the runs, put one after the other, are certainly in time order (each sorted
    inside, each first event after the previous run's last); False: load the line and look."""
    if any(not r.sorted or r.aggregated for r in runs):
        return False  # an aggregated event begins at 0 whatever the shift: decided on the whole line
    for p, q in zip(runs, runs[1:]):
        bp = p.last[0] + (p.timestamp_ns - line_ts) * 1000
        bq = q.first[0] + (q.timestamp_ns - line_ts) * 1000
        if bq < bp or (bq == bp and q.first[1] > p.last[1]):
            return False
    return True


def merge(records: Iterable[RawXSpace]) -> RawXSpace:
    """Decoded records merged in memory (one record is returned as it is)."""
    records = list(records)
    if not records:
        raise ValueError("no records")
    if len(records) == 1:
        return records[0]
    m = XSpaceMerger(Layout([lines_of(r) for r in records]), MemoryColumns(), in_place=False)
    for r in records:
        m.add(r)
    return m.finish()
