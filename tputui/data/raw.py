"""The raw columns of a decoded XSpace: one flat array per wire field.

Two decoders produce exactly this structure: the C wire decoder (`tputui/data/_wire.c`,
fast) and the protobuf reference path below (slow; the fallback and the test oracle).
`xspace.py` turns it into the frame every tool reads.

Stats from three owners (events, event metadata, planes) share one layout:
owner row, stat-metadata id (plane-local), kind, and one 8-byte value column whose
meaning depends on kind (int64, uint64 bits, double bits, ref id, or an index into
`strings` / `blobs`).
"""
from __future__ import annotations

import mmap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tputui.data.interned import Interned

# Stat value kinds (the XStat oneof, in wire order).
KIND_NONE, KIND_DOUBLE, KIND_UINT64, KIND_INT64, KIND_STR, KIND_BYTES, KIND_REF = range(7)
STAT_OWNERS = ("event", "metadata", "plane")


@dataclass
class StatColumns:
    owner: np.ndarray  # int64: row in events / event metadata / planes
    stat: np.ndarray  # int64: plane-local XStatMetadata id
    kind: np.ndarray  # uint8: KIND_*
    value: np.ndarray  # int64 raw bits; str/bytes: index into RawXSpace.strings / blobs

    @classmethod
    def empty(cls) -> StatColumns:
        z = np.zeros(0, np.int64)
        return cls(z, z.copy(), np.zeros(0, np.uint8), z.copy())


@dataclass
class RawXSpace:
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    # planes
    plane_id: np.ndarray
    plane_name: list[str]
    # lines
    line_plane: np.ndarray  # int32
    line_id: np.ndarray
    line_display_id: np.ndarray
    line_timestamp_ns: np.ndarray
    line_duration_ps: np.ndarray
    line_name: list[str]
    line_display_name: list[str]
    line_first_event: np.ndarray  # events of line i are rows [first, first + count)
    line_num_events: np.ndarray
    # events (in file order, grouped by line)
    event_line: np.ndarray  # int32
    event_metadata_id: np.ndarray
    event_offset_ps: np.ndarray
    event_num_occurrences: np.ndarray
    event_duration_ps: np.ndarray
    # event metadata (one row per map entry)
    em_plane: np.ndarray  # int32
    em_id: np.ndarray
    em_name: list[str]
    em_display_name: list[str]
    em_metadata: np.ndarray  # int64 index into blobs, -1 when empty
    em_child_owner: np.ndarray  # (owner em row, child id) pairs
    em_child_id: np.ndarray
    # stat metadata
    sm_plane: np.ndarray  # int32
    sm_id: np.ndarray
    sm_name: list[str]
    sm_description: list[str]
    # stats
    event_stats: StatColumns
    metadata_stats: StatColumns
    plane_stats: StatColumns
    strings: list[str] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)

    @property
    def num_events(self) -> int:
        return len(self.event_line)


def decode_with_protobuf(data: bytes | mmap.mmap | memoryview, plane_filter: Callable[[str], bool] | None = None,
                         event_ids: Iterable[int] | None = None, lines: bool = True) -> RawXSpace:
    """Reference decoder: protobuf's own parse, walked one message at a time. `event_ids`: only
    the events with these metadata ids; lines=False: no lines (as the fast decoder's options).

    Slow (a Python object per event), but obviously right; the fast decoder must
    give identical columns (tests/test_xspace.py).
    """
    from google.protobuf.message import DecodeError

    from tputui.proto import xplane_pb2

    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(data if isinstance(data, bytes) else bytes(data))  # upb takes bytes only
    except DecodeError as e:
        raise ValueError(f"not a valid XSpace protobuf ({e})") from None
    keep_ids = None if event_ids is None else {int(i) for i in event_ids}
    b = _Builder()
    b.hostnames = list(space.hostnames)
    b.errors = list(space.errors)
    b.warnings = list(space.warnings)
    for plane in space.planes:
        if plane_filter is not None and not plane_filter(plane.name):
            continue
        p = len(b.plane_id)
        b.plane_id.append(plane.id)
        b.plane_name.append(plane.name)
        for line in plane.lines if lines else ():
            events = [ev for ev in line.events if keep_ids is None or ev.metadata_id in keep_ids]
            b.line_plane.append(p)
            b.line_id.append(line.id)
            b.line_display_id.append(line.display_id)
            b.line_timestamp_ns.append(line.timestamp_ns)
            b.line_duration_ps.append(line.duration_ps)
            b.line_name.append(line.name)
            b.line_display_name.append(line.display_name)
            b.line_first_event.append(len(b.event_line))
            b.line_num_events.append(len(events))
            li = len(b.line_id) - 1
            for ev in events:
                b.event_line.append(li)
                b.event_metadata_id.append(ev.metadata_id)
                b.event_offset_ps.append(ev.offset_ps)
                b.event_num_occurrences.append(ev.num_occurrences)
                b.event_duration_ps.append(ev.duration_ps)
                b.add_stats(b.event_stats, len(b.event_line) - 1, ev.stats)
        for key, md in plane.event_metadata.items():
            row = len(b.em_id)
            b.em_plane.append(p)
            b.em_id.append(md.id or key)
            b.em_name.append(md.name)
            b.em_display_name.append(md.display_name)
            b.em_metadata.append(b.blob(md.metadata) if md.metadata else -1)
            for c in md.child_id:
                b.em_child_owner.append(row)
                b.em_child_id.append(c)
            b.add_stats(b.metadata_stats, row, md.stats)
        for key, sm in plane.stat_metadata.items():
            b.sm_plane.append(p)
            b.sm_id.append(sm.id or key)
            b.sm_name.append(sm.name)
            b.sm_description.append(sm.description)
        b.add_stats(b.plane_stats, p, plane.stats)
    return b.finish()


class _Builder:
    """Python lists that become RawXSpace arrays (reference path only)."""

    _I32 = ("line_plane", "event_line", "em_plane", "sm_plane")

    # One list per RawXSpace column (filled in __init__ from the dataclass fields).
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    plane_id: list[int]
    plane_name: list[str]
    line_plane: list[int]
    line_id: list[int]
    line_display_id: list[int]
    line_timestamp_ns: list[int]
    line_duration_ps: list[int]
    line_name: list[str]
    line_display_name: list[str]
    line_first_event: list[int]
    line_num_events: list[int]
    event_line: list[int]
    event_metadata_id: list[int]
    event_offset_ps: list[int]
    event_num_occurrences: list[int]
    event_duration_ps: list[int]
    em_plane: list[int]
    em_id: list[int]
    em_name: list[str]
    em_display_name: list[str]
    em_metadata: list[int]
    em_child_owner: list[int]
    em_child_id: list[int]
    sm_plane: list[int]
    sm_id: list[int]
    sm_name: list[str]
    sm_description: list[str]
    event_stats: list[list[int]]  # owner, stat, kind, value
    metadata_stats: list[list[int]]  # owner, stat, kind, value
    plane_stats: list[list[int]]  # owner, stat, kind, value
    strings: list[str]
    blobs: list[bytes]

    def __init__(self) -> None:
        for name, f in RawXSpace.__dataclass_fields__.items():
            if f.type in ("np.ndarray", "list[str]"):
                setattr(self, name, [])
        self.event_stats = [[], [], [], []]
        self.metadata_stats = [[], [], [], []]
        self.plane_stats = [[], [], [], []]
        self._texts = Interned()
        self.strings = self._texts.strings
        self.blobs = []

    def blob(self, data: bytes) -> int:
        self.blobs.append(bytes(data))
        return len(self.blobs) - 1

    def add_stats(self, cols: list[list[int]], owner: int, stats: Iterable[Any]) -> None:
        for st in stats:
            which = st.WhichOneof("value")
            if which == "double_value":
                kind, val = KIND_DOUBLE, int(np.float64(st.double_value).view(np.int64))
            elif which == "uint64_value":
                kind, val = KIND_UINT64, int(np.uint64(st.uint64_value).view(np.int64))
            elif which == "int64_value":
                kind, val = KIND_INT64, st.int64_value
            elif which == "str_value":
                kind, val = KIND_STR, self._texts.id(st.str_value)
            elif which == "bytes_value":
                kind, val = KIND_BYTES, self.blob(st.bytes_value)
            elif which == "ref_value":
                kind, val = KIND_REF, int(np.uint64(st.ref_value).view(np.int64))
            else:
                kind, val = KIND_NONE, 0
            for col, v in zip(cols, (owner, st.metadata_id, kind, val)):
                col.append(v)

    def finish(self) -> RawXSpace:
        kw: dict[str, Any] = {}
        for name, f in RawXSpace.__dataclass_fields__.items():
            v = getattr(self, name)
            if f.type == "np.ndarray":
                v = np.array(v, dtype=np.int32 if name in self._I32 else np.int64)
            elif f.type == "StatColumns":
                v = StatColumns(np.array(v[0], np.int64), np.array(v[1], np.int64),
                                np.array(v[2], np.uint8), np.array(v[3], np.int64))
            kw[name] = v
        return RawXSpace(**kw)


# A memory-mapped column (a big cache entry's) is checked this many rows at a time, and the pages
# each step read are let go after it: checking a 3 GB host's entry must not make it resident.
_CHECK_ROWS = 8 << 20


def _in_range(name: str, values: np.ndarray, low: int, high: int, kinds: np.ndarray | None = None,
              kind: int = 0) -> None:
    """Every value (those whose `kinds` is `kind`, when given) in [low, high)."""
    step = _CHECK_ROWS if _mapping(values) is not None else max(len(values), 1)
    for a in range(0, len(values), step):
        part = values[a:a + step]
        if kinds is not None:
            part = part[kinds[a:a + step] == kind]
        if len(part) and (int(part.min()) < low or int(part.max()) >= high):
            raise ValueError(f"{name} outside [{low}, {high})")
        if step < len(values):
            release(values, kinds)


def _mapping(a: np.ndarray | None) -> mmap.mmap | None:
    mm = getattr(a, "_mmap", None)
    return mm if isinstance(mm, mmap.mmap) else None


def release(*columns: np.ndarray | None) -> None:
    """Let go of the pages memory-mapped columns have read in (they stay in the page cache; the
    process's resident memory drops). Columns in memory are left alone."""
    for col in columns:
        mm = _mapping(col)
        if mm is not None:
            try:
                mm.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):  # closed, or not allowed here: the kernel reclaims later
                pass


def validate(raw: RawXSpace) -> None:
    """Raise ValueError unless `raw` holds together: dtypes, equal column lengths, every row
    index inside the table it points into. Both decoders' output passes; a damaged or
    hand-edited cache entry does not (and is then decoded again)."""
    fields = RawXSpace.__dataclass_fields__
    for name, f in fields.items():
        value = getattr(raw, name)
        if f.type == "np.ndarray":
            want = np.int32 if name in _Builder._I32 else np.int64
            if not isinstance(value, np.ndarray) or value.dtype != want or value.ndim != 1:
                raise ValueError(f"{name}: not a 1-d {np.dtype(want)} column")
        elif f.type == "list[str]":
            if not isinstance(value, list) or not all(type(s) is str for s in value):
                raise ValueError(f"{name}: not a list of strings")
    if not isinstance(raw.blobs, list) or not all(type(b) is bytes for b in raw.blobs):
        raise ValueError("blobs: not a list of bytes")
    tables = {  # table -> its columns (all the same length)
        "plane": ("plane_id", "plane_name"),
        "line": ("line_plane", "line_id", "line_display_id", "line_timestamp_ns", "line_duration_ps", "line_name",
                 "line_display_name", "line_first_event", "line_num_events"),
        "event": ("event_line", "event_metadata_id", "event_offset_ps", "event_num_occurrences", "event_duration_ps"),
        "em": ("em_plane", "em_id", "em_name", "em_display_name", "em_metadata"),
        "em_child": ("em_child_owner", "em_child_id"),
        "sm": ("sm_plane", "sm_id", "sm_name", "sm_description"),
    }
    rows = {}
    for table, names in tables.items():
        lengths = {len(getattr(raw, c)) for c in names}
        if len(lengths) != 1:
            raise ValueError(f"{table} columns of different lengths")
        rows[table] = lengths.pop()
    _in_range("line_plane", raw.line_plane, 0, rows["plane"])
    _in_range("event_line", raw.event_line, 0, rows["line"])
    _in_range("em_plane", raw.em_plane, 0, rows["plane"])
    _in_range("sm_plane", raw.sm_plane, 0, rows["plane"])
    _in_range("em_child_owner", raw.em_child_owner, 0, rows["em"])
    _in_range("em_metadata", raw.em_metadata, -1, len(raw.blobs))
    _in_range("line_num_events", raw.line_num_events, 0, rows["event"] + 1)
    _in_range("line_first_event", raw.line_first_event, 0, rows["event"] + 1)
    if len(raw.line_first_event) and int((raw.line_first_event + raw.line_num_events).max()) > rows["event"]:
        raise ValueError("a line's events run past the event table")
    for owner, table in zip(STAT_OWNERS, ("event", "em", "plane")):
        cols: StatColumns = getattr(raw, f"{owner}_stats")
        parts = (cols.owner, cols.stat, cols.kind, cols.value)
        if any(not isinstance(p, np.ndarray) or p.ndim != 1 for p in parts) or cols.kind.dtype != np.uint8 \
                or {p.dtype for p in parts if p is not cols.kind} != {np.dtype(np.int64)}:
            raise ValueError(f"{owner}_stats: wrong column types")
        if len({len(p) for p in parts}) != 1:
            raise ValueError(f"{owner}_stats columns of different lengths")
        _in_range(f"{owner}_stats.owner", cols.owner, 0, rows[table])
        _in_range(f"{owner}_stats.kind", cols.kind, 0, KIND_REF + 1)
        _in_range(f"{owner}_stats str", cols.value, 0, len(raw.strings), cols.kind, KIND_STR)
        _in_range(f"{owner}_stats bytes", cols.value, 0, len(raw.blobs), cols.kind, KIND_BYTES)
