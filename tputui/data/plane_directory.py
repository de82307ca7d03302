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


_XPLANE_LINES = 3  # XPlane.lines
# XSpace fields: planes=1, errors=2, warnings=3, hostnames=4.
_SPACE_PLANES, _SPACE_ERRORS, _SPACE_WARNINGS, _SPACE_HOSTNAMES = 1, 2, 3, 4


def line_sizes(data, entry: PlaneEntry) -> list[int]:
    """The serialized size of each of the plane's lines, in order (what a piece of lines weighs)."""
    buf = memoryview(data)[entry.offset:entry.offset + entry.size]
    return [len(v) for number, wire, v in pbwire.fields(buf) if number == _XPLANE_LINES and wire == 2
            and not isinstance(v, int)]


def subset_xspace(data, planes: list[tuple[PlaneEntry, list[int] | None]],
                  texts: tuple[list[str], list[str], list[str]]) -> bytes:
    """A serialized XSpace of some planes of `data`, in the order given: a plane whole (None) or
    with only the lines listed (their places in the plane; every other field kept). `texts`:
    the file's (hostnames, errors, warnings), as the decoder's scan returns them."""
    out: list = []  # byte chunks (memoryviews of `data` for whole lines and planes): one copy, at the join
    for entry, lines in planes:
        buf = memoryview(data)[entry.offset:entry.offset + entry.size]
        if lines is None:
            out += _field(_SPACE_PLANES, 2, buf)
            continue
        wanted = set(lines)
        kept: list = []
        n = 0
        for number, wire, value in pbwire.fields(buf):
            if number == _XPLANE_LINES and wire == 2:
                n += 1
                if n - 1 not in wanted:
                    continue
            kept += _field(number, wire, value)
        out += [pbwire.encode_varint(_SPACE_PLANES << 3 | 2), pbwire.encode_varint(sum(len(c) for c in kept)), *kept]
    hostnames, errors, warnings = texts
    for number, values in ((_SPACE_ERRORS, errors), (_SPACE_WARNINGS, warnings), (_SPACE_HOSTNAMES, hostnames)):
        for v in values:
            out += _field(number, 2, v.encode("utf-8"))
    return b"".join(out)


def _field(number: int, wire: int, value) -> list:
    """One field's chunks: its key, then its value (length-prefixed when wire type 2)."""
    key = pbwire.encode_varint(number << 3 | wire)
    if wire == 0:
        return [key, pbwire.encode_varint(value)]
    if wire == 2:
        return [key, pbwire.encode_varint(len(value)), value]
    return [key, value]  # fixed 32 / 64 bits


def space_texts(data) -> tuple[list[str], list[str], list[str]]:
    """The file's (hostnames, errors, warnings) (empty without the C extension)."""
    if _wire is None:
        return [], [], []
    _, hostnames, errors, warnings = _wire.scan(data)
    return list(hostnames), list(errors), list(warnings)
