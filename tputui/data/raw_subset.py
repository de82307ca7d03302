"""Some planes (and lines) of a decoded XSpace as a RawXSpace of their own: a piece of a giant host
read from its decoded columns (a riegeli host's merged cache entry, memory-mapped).

Planes keep their order; a plane keeps all its lines or only those asked for. Event and event-stat
rows are copied out of the big columns one line at a time (so only the piece's pages are read),
every row index renumbered; metadata tables are filtered to the planes kept; the string and blob
tables are shared. analysis/host_pieces.py then reads the piece as if it were a file of its own.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from tputui.data.raw import RawXSpace, StatColumns, release

_columns: ModuleType | None
try:
    from tputui.data import _columns
except ImportError:  # the C extension is not built: numpy does the check
    _columns = None


def subset(raw: RawXSpace, planes: list[int], lines: dict[int, list[int]] | None = None) -> RawXSpace:
    """The planes `planes` (indices, ascending) of `raw`; `lines`: plane -> the places, among
    the plane's lines, of the lines it keeps (the others keep every line). Needs the event stats
    in owner order (the decoders' and the merge's order: `owners_sorted`)."""
    lines = lines or {}
    plane_new = np.full(len(raw.plane_name), -1, np.int64)
    plane_new[planes] = np.arange(len(planes))
    kept_lines: list[int] = []
    for p in planes:
        of_plane = np.flatnonzero(raw.line_plane == p)
        kept_lines += of_plane[lines[p]].tolist() if p in lines else of_plane.tolist()
    ln = np.asarray(kept_lines, np.int64)
    first = raw.line_first_event[ln]
    count = raw.line_num_events[ln]
    new_first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64) if len(ln) else np.zeros(0, np.int64)
    ranges = [(int(a), int(a + n)) for a, n in zip(first, count) if n]
    owner = raw.event_stats.owner
    stat_ranges = [(int(np.searchsorted(owner, a)), int(np.searchsorted(owner, b))) for a, b in ranges]

    # Each column's pages are let go once its rows are copied out (a mapped column; one in memory
    # is left alone): the piece holds its copy, and a chip's rows of nine mapped columns stayed
    # resident beside it until the piece was done (1.5 GB of a 3 GB riegeli host's chip).
    def events(col: np.ndarray) -> np.ndarray:
        out = np.concatenate([col[a:b] for a, b in ranges]) if ranges else col[:0].copy()
        release(col)
        return out

    def stat_rows(col: np.ndarray) -> np.ndarray:
        out = np.concatenate([col[a:b] for a, b in stat_ranges]) if stat_ranges else col[:0].copy()
        release(col)
        return out

    # An event's new row: its old row less its line's old first row, plus the line's new first row.
    stat_shift = np.concatenate([np.full(sb - sa, s, np.int64) for (sa, sb), s in
                                 zip(stat_ranges, (new_first[count > 0] - first[count > 0]).tolist())]) \
        if stat_ranges else np.zeros(0, np.int64)
    event_line = np.concatenate([np.full(int(n), i, np.int32) for i, n in enumerate(count.tolist()) if n]) \
        if ranges else np.zeros(0, np.int32)

    em = np.flatnonzero(np.isin(raw.em_plane, planes))
    em_new = np.full(len(raw.em_plane) + 1, -1, np.int64)
    em_new[em] = np.arange(len(em))
    ch = np.flatnonzero(em_new[raw.em_child_owner] >= 0) if len(raw.em_child_owner) else np.zeros(0, np.int64)
    sm = np.flatnonzero(np.isin(raw.sm_plane, planes))
    return RawXSpace(
        hostnames=list(raw.hostnames), errors=list(raw.errors), warnings=list(raw.warnings),
        plane_id=raw.plane_id[planes], plane_name=[raw.plane_name[p] for p in planes],
        line_plane=plane_new[raw.line_plane[ln]].astype(np.int32), line_id=raw.line_id[ln],
        line_display_id=raw.line_display_id[ln], line_timestamp_ns=raw.line_timestamp_ns[ln],
        line_duration_ps=raw.line_duration_ps[ln], line_name=[raw.line_name[i] for i in kept_lines],
        line_display_name=[raw.line_display_name[i] for i in kept_lines],
        line_first_event=new_first, line_num_events=count.astype(np.int64),
        event_line=event_line, event_metadata_id=events(raw.event_metadata_id),
        event_offset_ps=events(raw.event_offset_ps), event_num_occurrences=events(raw.event_num_occurrences),
        event_duration_ps=events(raw.event_duration_ps),
        em_plane=plane_new[raw.em_plane[em]].astype(np.int32), em_id=raw.em_id[em],
        em_name=[raw.em_name[i] for i in em.tolist()], em_display_name=[raw.em_display_name[i] for i in em.tolist()],
        em_metadata=raw.em_metadata[em], em_child_owner=em_new[raw.em_child_owner[ch]], em_child_id=raw.em_child_id[ch],
        sm_plane=plane_new[raw.sm_plane[sm]].astype(np.int32), sm_id=raw.sm_id[sm],
        sm_name=[raw.sm_name[i] for i in sm.tolist()], sm_description=[raw.sm_description[i] for i in sm.tolist()],
        event_stats=StatColumns(stat_rows(owner) + stat_shift, stat_rows(raw.event_stats.stat),
                                stat_rows(raw.event_stats.kind), stat_rows(raw.event_stats.value)),
        metadata_stats=_owned(raw.metadata_stats, em_new),
        plane_stats=_owned(raw.plane_stats, np.concatenate([plane_new, [-1]])),
        strings=raw.strings, blobs=raw.blobs,
    )


def _owned(st: StatColumns, new_owner: np.ndarray) -> StatColumns:
    """The stats whose owner is kept, owners renumbered (new_owner[old] = new row, -1 dropped)."""
    o = new_owner[st.owner]
    keep = o >= 0
    return StatColumns(o[keep], st.stat[keep], st.kind[keep], st.value[keep])


def owners_sorted(raw: RawXSpace) -> bool:
    """Whether the event stats come in owner order (subset's requirement)."""
    owner = raw.event_stats.owner
    if len(owner) < 2:
        return True
    if _columns is not None:
        return bool(_columns.nondecreasing(owner))
    return bool((owner[1:] >= owner[:-1]).all())


def release_pages(raw: RawXSpace) -> None:
    """Let go of the pages the big memory-mapped columns have read in (raw.release): a piece is
    done with them."""
    es = raw.event_stats
    release(raw.event_line, raw.event_metadata_id, raw.event_offset_ps, raw.event_num_occurrences,
            raw.event_duration_ps, es.owner, es.stat, es.kind, es.value)
