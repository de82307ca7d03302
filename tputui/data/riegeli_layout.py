"""Where every line of every record goes in a merged riegeli host, before anything is decoded.

Pass 1 of the merge: each record is walked (the C decoder's count_lines: per line its id, times,
events and event stats, nothing built) and XProf's plane and line matching (xspace_merge.py has
the rules) is played on those counts alone, so each (record, line) slice gets its final first
event row, first event-stat row and offset shift. Pass 2 then writes each decoded record's
columns straight there (riegeli_columns.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tputui.data import xspace
from tputui.data.raw import RawXSpace
from tputui.data.xspace import DecodeError, PlaneSelector

# Columns of RecordLines.lines.
PLANE, ID, TIMESTAMP_NS, DURATION_PS, EVENTS, STATS = range(6)


@dataclass
class RecordLines:
    """One record's selected planes (names, in order) and one row per line (columns above)."""
    plane_names: list[str]
    lines: np.ndarray  # int64, shape (lines, 6)


def count_record(record, planes: PlaneSelector = None) -> RecordLines:
    """The lines of one serialized XSpace without decoding it (a full decode where the C
    decoder is missing). Raises DecodeError as decode_raw does."""
    keep = xspace.plane_filter(planes)
    if xspace.wire is None:
        return lines_of(xspace.decode_raw(record, planes))
    from tputui.data import _wire

    try:
        found, _, _, _ = _wire.scan(record)
        chosen = [(off, n, name.decode("utf-8", "replace")) for off, n, name in found]
        chosen = [c for c in chosen if keep is None or keep(c[2])]
        ranges = [(off, n) for off, n, _ in chosen]
        rows = np.frombuffer(_wire.count_lines(record, ranges, xspace.wire.threads_for(sum(n for _, n in ranges))),
                             np.int64)
    except ValueError as e:
        raise DecodeError(str(e)) from None
    return RecordLines([name for _, _, name in chosen], rows.reshape(-1, 6))


def lines_of(r: RawXSpace) -> RecordLines:
    """The same facts read from a decoded record."""
    first = r.line_first_event
    owner = r.event_stats.owner
    stats = np.searchsorted(owner, first + r.line_num_events) - np.searchsorted(owner, first)
    rows = np.stack([r.line_plane.astype(np.int64), r.line_id, r.line_timestamp_ns, r.line_duration_ps,
                     r.line_num_events, stats], axis=1) if len(first) else np.zeros((0, 6), np.int64)
    return RecordLines(list(r.plane_name), np.ascontiguousarray(rows, np.int64))


INT64_MAX = (1 << 63) - 1


class TimesOutOfRange(Exception):
    """A record's event times do not fit 64-bit picoseconds once placed on the merged line
    (args: the record's index in the layout, or -1 when the merge cannot tell)."""


@dataclass
class _Slot:
    """One merged line: its id and the (record, line row) runs it takes, in record order."""
    id: int
    timestamp_ns: int
    runs: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Placement:
    """Where one record's lines go: per line row of the record, its merged line, first event
    row, first event-stat row and the shift of its offsets (ps) to the merged line's start."""
    line: np.ndarray
    event_at: np.ndarray
    stat_at: np.ndarray
    shift_ps: np.ndarray


class Layout:
    """The merged lines of records (RecordLines, in file order) and every slice's place."""

    def __init__(self, records: list[RecordLines]):
        planes: list[list[_Slot]] = []
        by_name: dict[str, int] = {}
        for k, rec in enumerate(records):
            known = dict(by_name)  # XProf looks planes up in the space as it was before this record
            rows = rec.lines
            for p, name in enumerate(rec.plane_names):
                target = None if k == 0 else known.get(name)
                mine = np.flatnonzero(rows[:, PLANE] == p).tolist()
                if target is None:
                    by_name[name] = len(planes)
                    planes.append([_Slot(int(rows[li, ID]), int(rows[li, TIMESTAMP_NS]), [(k, li)]) for li in mine])
                    continue
                slots = planes[target]
                by_id = {s.id: s for s in slots}  # the plane's lines before this record's
                for li in mine:
                    lid, ts = int(rows[li, ID]), int(rows[li, TIMESTAMP_NS])
                    s = by_id.get(lid)
                    if s is None:
                        slots.append(_Slot(lid, ts, [(k, li)]))
                    else:
                        s.runs.append((k, li))
                        s.timestamp_ns = min(s.timestamp_ns, ts)
        self.slots = [s for plane in planes for s in plane]
        self.placements = [Placement(*(np.zeros(len(r.lines), np.int64) for _ in range(4))) for r in records]
        self.line_events = np.zeros(len(self.slots), np.int64)
        ev = st = 0
        for i, s in enumerate(self.slots):
            start = ev
            for k, li in s.runs:
                row, pl = records[k].lines[li], self.placements[k]
                pl.line[li], pl.event_at[li], pl.stat_at[li] = i, ev, st
                shift = (int(row[TIMESTAMP_NS]) - s.timestamp_ns) * 1000
                if shift > INT64_MAX:  # absurd timestamps: the record's times cannot be placed
                    raise TimesOutOfRange(k)
                pl.shift_ps[li] = shift
                ev += int(row[EVENTS])
                st += int(row[STATS])
            self.line_events[i] = ev - start
        self.events, self.stats = ev, st
        self.records = records
