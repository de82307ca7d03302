"""Where each plane of a `.xplane.pb` lies, and a plane's own stats, without decoding any event.

The first look at a giant host (analysis/host_pieces.py): the C decoder's scan locates the planes
(name, offset, size); a plane's stats are read from its top-level fields, whose `lines` field is
skipped by its length, so a 1.7 GB file costs milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from tputui.data import pbwire

_wire: ModuleType | None
try:
    from tputui.data import _wire
except ImportError:  # no C extension: no directory (callers read the host whole)
    _wire = None

# XPlane fields (PROTOCOL.md): stat_metadata=5 (map<int64, XStatMetadata{id=1, name=2}>), stats=6.
_PLANE_STAT_METADATA, _PLANE_STATS = 5, 6
_STAT_BYTES = 6  # XStat.bytes_value


@dataclass(frozen=True)
class PlaneEntry:
    index: int  # the plane's place in the file
    name: str
    offset: int  # of the serialized XPlane in the file
    size: int


def plane_directory(data) -> list[PlaneEntry] | None:
    """Every plane of a serialized XSpace, in file order (None without the C extension)."""
    if _wire is None:
        return None
    planes, _, _, _ = _wire.scan(data)
    return [PlaneEntry(i, name.decode("utf-8", "replace"), off, n) for i, (off, n, name) in enumerate(planes)]


def plane_stat_bytes(data, entry: PlaneEntry, name: str) -> bytes | None:
    """The bytes value of the plane stat `name` (None when absent, not bytes, or unreadable)."""
    buf = memoryview(data)[entry.offset:entry.offset + entry.size]
    try:
        ids = set()
        stats = []
        for number, wire, value in pbwire.fields(buf):
            if wire != 2 or isinstance(value, int):
                continue
            if number == _PLANE_STAT_METADATA:
                md = pbwire.first_bytes_field(value, 2)  # the map entry's value
                if md is not None and bytes(pbwire.first_bytes_field(md, 2) or b"") == name.encode():
                    ids.add(pbwire.varint_fields(value).get(1, pbwire.varint_fields(md).get(1)))
            elif number == _PLANE_STATS:
                stats.append(value)
        found = None
        for st in stats:
            if pbwire.varint_fields(st).get(1) in ids:
                v = pbwire.first_bytes_field(st, _STAT_BYTES)
                found = bytes(v) if v is not None else None  # the last one, as a stat map keeps
        return found
    except pbwire.WireError:
        return None
