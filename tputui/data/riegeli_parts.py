"""A big riegeli record decoded a group of lines at a time (the merge's second pass).

A record is one serialized XSpace and may be a GB (a long capture's host plane: 1 GB of 122
threads' lines). Decoded whole, its columns take 2-3x its bytes beside them. One over
WHOLE_BYTES is cut instead into parts of about PART_BYTES of lines: the first part holds every
selected plane (each with its metadata, stats and its first lines), the later ones only the
planes whose lines they carry (a plane's metadata comes with each, decoded again and not used). Each part is re-serialized from
the record's bytes (plane_directory.subset_xspace) and decoded on its own; the merge
(xspace_merge.XSpaceMerger.add) places its lines by their rows in the record. A single line
bigger than a part is one part of its own: memory follows the largest line, not the record.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tputui.data import xspace
from tputui.data.plane_directory import line_sizes, plane_directory, space_texts, subset_xspace
from tputui.data.raw import RawXSpace
from tputui.data.xspace import PlaneSelector, decode_raw

WHOLE_BYTES = 128 << 20  # a record up to this is decoded whole (XLA's records: tens of MB)
PART_BYTES = 64 << 20  # of serialized lines per part of a bigger one (their columns take 2-3x that)


@dataclass
class Part:
    """One decoded part of a record: `raw`, and for each of its planes the plane's place among
    the record's selected planes, for each of its lines the line's row in the record (None: the
    whole record, in its own order). `last`: the record's last part."""
    raw: RawXSpace
    planes: np.ndarray | None
    rows: np.ndarray | None
    last: bool = True


def record_parts(record, planes: PlaneSelector = None, part_bytes: int | None = None) -> Iterator[Part]:
    """The record's parts, in record order (one Part, decoded whole, when it is up to WHOLE_BYTES
    or the C decoder is missing). `part_bytes` (for tests): cut into parts of that size whenever
    the record is bigger. Raises DecodeError as decode_raw does."""
    whole = part_bytes or WHOLE_BYTES
    part_bytes = part_bytes or PART_BYTES
    if len(record) <= whole or xspace.wire is None:
        yield Part(decode_raw(record, planes), None, None)
        return
    keep = xspace.plane_filter(planes)
    directory = plane_directory(record)
    if directory is None:
        yield Part(decode_raw(record, planes), None, None)
        return
    chosen = [e for e in directory if keep is None or keep(e.name)]
    sizes = [line_sizes(record, e) for e in chosen]
    groups = _groups(sizes, part_bytes)
    if len(groups) < 2:
        yield Part(decode_raw(record, planes), None, None)
        return
    texts = space_texts(record)
    base = np.cumsum([0] + [len(s) for s in sizes])
    for g, group in enumerate(groups):
        if g == 0:  # every plane, for its metadata; lines only where the group has them
            group = {p: group.get(p, []) for p in range(len(chosen))}
        order = sorted(group)
        sub = subset_xspace(record, [(chosen[p], group[p]) for p in order], texts)
        raw = decode_raw(sub)
        del sub
        rows = np.concatenate([base[p] + np.asarray(group[p], np.int64) for p in order]).astype(np.int64) \
            if order else np.zeros(0, np.int64)
        yield Part(raw, np.asarray(order, np.int64), rows, last=g == len(groups) - 1)


def _groups(sizes: list[list[int]], part_bytes: int) -> list[dict[int, list[int]]]:
    """Lines (per plane: their places) packed in record order into groups of about part_bytes."""
    groups: list[dict[int, list[int]]] = [{}]
    used = 0
    for p, plane in enumerate(sizes):
        for i, n in enumerate(plane):
            if used and used + n > part_bytes:
                groups.append({})
                used = 0
            groups[-1].setdefault(p, []).append(i)
            used += n
    return groups
