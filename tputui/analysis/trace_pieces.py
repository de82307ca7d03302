"""A giant host's trace viewer index, built piece by piece and composed on disk.

A host that host_pieces.plan cuts into pieces never becomes one frame. Each piece (the meta
piece, runs of host threads, whole chips) is decoded alone, its trace events built with the
host's one grouping (taken as it is: trace_events(piece=True)), and arranged into its own exact
TraceIndex with its level-of-detail pyramid, saved as a piece folder (`build_piece`, which a
worker process runs). `compose` then writes the host's index in trace_cache's format, copying
each track's rows from its piece in the host's track order (devices by pid, host threads by
name, as TraceIndex arranges them): a track is one piece's, so every array is the pieces' slices
one after another, read and written a slice at a time (memory follows a track, not the host).

What crosses pieces is small and joined here: the names (merged, ids remapped), the flows (each
piece's flow ends, positions made the host's, linked once: trace_flows.link_ends), the roots the
grouping renames (their candidate ranks count on over the thread pieces, in thread order), the
counters. Levels of detail: the host's level with gap g takes, from each piece, its coarsest
level whose gap is <= g (the events themselves when none): blocks merged over shorter gaps are
finer, never wrong, and a piece's skipped level barely differed from the one it kept. The saved
index knows each track's piece, so an event's details decode only its piece (PiecedIndex).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import asdict
from functools import lru_cache
from typing import Any

import numpy as np

from tputui.analysis import host_pieces
from tputui.analysis.event_grouping import HostGrouping
from tputui.analysis.event_groups import root_candidates
from tputui.analysis.trace import HOST_SECTION, TraceIndex
from tputui.analysis.trace_counters import CounterTable, build
from tputui.analysis.trace_events import DEVICE_PREFIXES, HOST_PID, trace_events
from tputui.analysis.trace_flows import FlowEnds, event_positions, flow_ends, link_ends
from tputui.analysis.trace_kinds import KIND_RAW
from tputui.data import event_subset
from tputui.data.plane_directory import PlaneEntry, line_sizes, plane_directory, space_texts, subset_xspace
from tputui.data.runs import HostFile
from tputui.data.storage import read
from tputui.data.xspace import XSpaceFrame, decode

Progress = Callable[[str], None] | None
_ROW_ARRAYS = ("start", "end", "cover", "name", "source", "kind", "ev_row", "event_row")
_LEVEL_ARRAYS = ("start", "end", "rep", "first_event", "events", "row_first", "row_count")
_COUNTER_ARRAYS = ("pid", "series", "t_ps", "value", "first", "count")


# A piece's peak memory over its serialized size while its index is built, measured on the x2000
# TPU host: 7.3x for 140 MB of host threads, 7.5x for a 200 MB TensorCore plane.
_PEAK_PER_BYTE = 8


def memory_estimate(piece: host_pieces.Piece) -> int:
    return _PEAK_PER_BYTE * piece.size


# --- one piece (a worker) --------------------------------------------------------------------
def build_piece(hf: HostFile, piece: host_pieces.Piece, grouping: HostGrouping, parent: str) -> dict:
    """The piece's own index saved in a folder of `parent`; returns what compose needs of it (small)."""
    folder = os.path.join(parent, f"{piece.kind}-{zlib.crc32(repr(piece).encode()):08x}")
    frame = host_pieces.piece_frame(hf, piece)
    frame_events = frame.num_events
    ev = trace_events(frame, grouping=grouping, piece=True)
    position = event_positions(ev.source, ev.kind)
    ends = flow_ends(frame, position)
    cands = root_candidates(frame) if piece.kind == "threads" else np.zeros(0, np.int64)
    cand_ev = position(np.asarray(cands, np.int64)) if len(cands) else np.zeros(0, np.int64)
    counters = ev.counters if ev.counters is not None else CounterTable.empty()
    ev.counters, ev.flows, ev.frame = None, None, None  # the host's are joined in compose
    del frame, position  # the index needs the events only: the decoded piece goes first
    ix = TraceIndex(ev, exact=True)
    del ev
    ix.build_pyramid()
    n = ix.num_events
    at = np.empty(n, np.int64)  # events' positions in the index, by their TraceEvents row
    at[np.asarray(ix.ev_row, np.int64)] = np.arange(n)
    ends = ends.remapped(at.__getitem__)
    cand_pos = np.where(cand_ev >= 0, at[np.maximum(cand_ev, 0)], -1) if len(cand_ev) else cand_ev
    del at
    os.makedirs(folder, exist_ok=True)

    def save(name: str, a: np.ndarray) -> None:
        np.save(os.path.join(folder, f"{name}.npy"), np.asarray(a))

    cover_is_end = ix.cover is ix.end or np.array_equal(ix.cover, ix.end)
    for name in _ROW_ARRAYS:
        if not (name == "cover" and cover_is_end):
            save(name, getattr(ix, name))
    save("row_count", ix.row_count)
    save("row_first", ix.row_first)
    for k, lv in enumerate(ix.levels[1:], 1):
        for name in _LEVEL_ARRAYS:
            save(f"L{k}.{name}", getattr(lv, name))
    for field in FlowEnds.FIELDS:
        for j, col in enumerate(getattr(ends, field)):
            save(f"ends.{field}.{j}", col)
    for name in _COUNTER_ARRAYS:
        save(f"counter.{name}", getattr(counters, name))
    save("candidates", cand_pos)
    return {
        "folder": folder, "piece": asdict(piece), "names": ix.names, "num_events": n, "num_rows": ix.num_rows,
        "t_min": ix.t_min, "t_max": ix.t_max, "gaps": [lv.gap for lv in ix.levels[1:]],
        "tracks": [[t.pid, t.tid, t.name, t.first_row, t.num_rows] for t in ix.tracks],
        "processes": [[int(p), n] for p, n in ix.processes.items()],
        "threads": [list(r) for r in ix.threads.iter_rows()],
        "counter_names": counters.names, "ends": [len(getattr(ends, f)) for f in FlowEnds.FIELDS],
        "candidates": len(cands), "cover_is_end": cover_is_end, "frame_events": frame_events,
    }


# --- the host's index from its pieces ------------------------------------------------------
class _Column:
    """One .npy file written front to back, its length known up front."""

    def __init__(self, path: str, dtype, length: int) -> None:
        self.dtype = np.dtype(dtype)
        self.length, self.written = length, 0
        self.f = open(path, "wb")  # noqa: SIM115 - closed by close()
        np.lib.format.write_array_header_1_0(self.f, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                      "fortran_order": False, "shape": (length,)})

    def add(self, a: np.ndarray) -> None:
        a = np.ascontiguousarray(a, self.dtype)
        self.f.write(a.tobytes())
        self.written += len(a)

    def close(self) -> None:
        self.f.close()
        if self.written != self.length:
            raise ValueError(f"{self.f.name}: {self.written} of {self.length} values written")


@lru_cache(maxsize=512)
def _header(path: str) -> tuple[np.dtype, int, int]:
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(f)
        return dtype, int(shape[0]) if shape else 0, f.tell()


def _read(folder: str, name: str, a: int, b: int) -> np.ndarray:
    """Values [a, b) of a piece's array, read (not mapped: nothing stays resident)."""
    path = os.path.join(folder, f"{name}.npy")
    dtype, _, offset = _header(path)
    if b <= a:
        return np.zeros(0, dtype)
    return np.fromfile(path, dtype=dtype, count=b - a, offset=offset + a * dtype.itemsize)


def _whole(folder: str, name: str) -> np.ndarray:
    return np.load(os.path.join(folder, f"{name}.npy"))


class _Piece:
    """A built piece as compose reads it: where each of its tracks goes in the host's index."""

    def __init__(self, info: dict, number: int) -> None:
        self.info, self.number, self.folder = info, number, info["folder"]
        self.row_count = _whole(self.folder, "row_count")
        self.row_first = _whole(self.folder, "row_first")
        self.track_first = np.zeros(0, np.int64)  # per local track, by its first event: the host's first event
        self.track_event = np.zeros(0, np.int64)  # local first event of each track, ascending
        self.events_before = 0  # the pieces before it, in events (ev_row numbering)

    def events_of(self, first_row: int, num_rows: int) -> tuple[int, int]:
        a = int(self.row_first[first_row])
        return a, a + int(self.row_count[first_row:first_row + num_rows].sum())

    def host_positions(self, local: np.ndarray) -> np.ndarray:
        """The host index's positions of local event positions."""
        local = np.asarray(local, np.int64)
        if not len(local):
            return local
        k = np.searchsorted(self.track_event, local, "right") - 1
        return local - self.track_event[k] + self.track_first[k]


def compose(infos: list[dict], grouping: HostGrouping, path: str, progress: Progress = None) -> dict:
    """Write the host's index arrays (trace_cache's format) into the new folder `path`; returns
    its index.json (tracks, sections, names, ... and its pieces), for trace_cache to seal."""
    report = progress or (lambda msg: None)
    pieces = [_Piece(info, k) for k, info in enumerate(infos)]
    names: list[str] = []
    name_id: dict[str, int] = {}

    def intern(s: str) -> int:
        if s not in name_id:
            name_id[s] = len(names)
            names.append(s)
        return name_id[s]

    name_maps = [np.array([intern(s) for s in p.info["names"]] + [0], np.int32) for p in pieces]
    # Tracks in the host's order (TraceIndex._arrange): device sections by pid, host threads last.
    tracks = [(int(t[0]), int(t[1]), str(t[2]), p.number, int(t[3]), int(t[4])) for p in pieces for t in p.info["tracks"]]
    processes: dict[int, str] = {}
    for p in pieces:
        processes.update({int(pid): n for pid, n in p.info["processes"]})
    counter_pids = [int(pid) for p in pieces for pid in _whole(p.folder, "counter.pid").tolist()]
    pids = sorted({t[0] for t in tracks} | set(counter_pids), key=lambda q: (q == HOST_PID, q))
    order: list[tuple] = []
    sections = []
    for q in pids:
        mine = [t for t in tracks if t[0] == q]
        mine.sort(key=(lambda t: (t[2], t[1])) if q == HOST_PID else (lambda t: t[1]))
        sec_name = HOST_SECTION if q == HOST_PID else processes.get(q, f"process {q}")
        sections.append([q, sec_name, list(range(len(order), len(order) + len(mine)))])
        order += [(*t, len(sections) - 1) for t in mine]
    # Rows and events of each track in the host's index.
    num_rows = sum(t[5] for t in order)
    row_at = np.cumsum([0] + [t[5] for t in order])
    spans = [pieces[t[3]].events_of(t[4], t[5]) for t in order]
    ev_at = np.cumsum([0] + [b - a for a, b in spans])
    num_events = int(ev_at[-1])
    before = 0
    for p in pieces:
        p.events_before = before
        before += int(p.info["num_events"])
        firsts = sorted((spans[g][0], int(ev_at[g])) for g, t in enumerate(order) if t[3] == p.number)
        p.track_event = np.array([a for a, _ in firsts], np.int64)
        p.track_first = np.array([g for _, g in firsts], np.int64)
    with_cover = not all(p.info["cover_is_end"] for p in pieces)
    small_rows = num_events < 2**31
    report(f"writing the index: {num_events:,} events in {len(order):,} tracks")
    # Roots the host's grouping renames: their candidate ranks count on over the thread pieces.
    renamed: dict[int, int] = {}
    offset = 0
    for p in pieces:
        if p.info["piece"]["kind"] != "threads":
            continue
        cand = _whole(p.folder, "candidates")
        for g, r in enumerate(grouping.root_rank.tolist()):
            if grouping.named[g] and offset <= r < offset + len(cand) and cand[r - offset] >= 0:
                renamed[int(p.host_positions(np.array([cand[r - offset]]))[0])] = intern(grouping.name[g])
        offset += len(cand)
    # The events, track by track.
    # Piece-local sources fit int32 when the pieces' events do (each piece's rows are its own).
    source_type = np.int32 if max(p.info["frame_events"] for p in pieces) < 2**31 else np.int64
    dtypes = {"start": np.int64, "end": np.int64, "cover": np.int64, "name": np.int32, "source": source_type,
              "kind": np.uint8, "ev_row": np.int32 if small_rows else np.int64, "event_row": np.int32}
    for name in _ROW_ARRAYS:
        if name == "cover" and not with_cover:
            continue
        col = _Column(os.path.join(path, f"{name}.npy"), dtypes[name], num_events)
        for g, t in enumerate(order):
            p = pieces[t[3]]
            a, b = spans[g]
            if name == "cover" and p.info["cover_is_end"]:
                part = _read(p.folder, "end", a, b)
            else:
                part = _read(p.folder, name, a, b)
            if name == "name":
                part = name_maps[p.number][part]
                if renamed:
                    lo, hi = int(ev_at[g]), int(ev_at[g + 1])
                    for pos in [x for x in renamed if lo <= x < hi]:
                        part[pos - lo] = renamed[pos]
            elif name == "ev_row":
                part = part.astype(np.int64) + p.events_before
            elif name == "event_row":
                part = part.astype(np.int64) - t[4] + int(row_at[g])
            col.add(part)
        col.close()
    row_count = np.concatenate([pieces[t[3]].row_count[t[4]:t[4] + t[5]] for t in order]) if order else np.zeros(0, np.int64)
    np.save(os.path.join(path, "row_count.npy"), row_count.astype(np.int64))
    np.save(os.path.join(path, "row_first.npy"), np.concatenate(([0], np.cumsum(row_count)[:-1])).astype(np.int64))
    row_track = np.repeat(np.arange(len(order)), [t[5] for t in order]) if order else np.zeros(0, np.int64)
    np.save(os.path.join(path, "row_track.npy"), row_track)
    np.save(os.path.join(path, "row_depth.npy"), np.arange(num_rows) - row_at[:-1][row_track] if order else row_track)
    gaps = _write_levels(pieces, order, spans, sorted({g for p in pieces for g in p.info["gaps"]}), path, report,
                         np.int32 if num_events < 2**31 else np.int64)
    _write_flows(pieces, path, report)
    counter_names = _write_counters(pieces, path)
    np.save(os.path.join(path, "name_hash.npy"), np.array([zlib.crc32(n.encode()) for n in names], np.uint32))
    threads: dict[tuple[int, int], list] = {}
    for p in pieces:
        for row in p.info["threads"]:
            threads[(int(row[0]), int(row[1]))] = list(row)
    _header.cache_clear()  # the pieces' folders go once composed: nothing of theirs stays held
    _level_rows.cache_clear()
    return {
        "cover_is_end": not with_cover, "names": names, "num_rows": num_rows,
        "num_events": num_events, "t_min": min((p.info["t_min"] for p in pieces if p.info["num_events"]), default=0),
        "t_max": max((p.info["t_max"] for p in pieces if p.info["num_events"]), default=1), "gaps": gaps,
        "tracks": [[t[0], t[1], t[2], t[6], int(row_at[g]), t[5]] for g, t in enumerate(order)],
        "sections": sections, "processes": [[q, n] for q, n in processes.items()],
        "threads": [threads[k] for k in sorted(threads)], "counter_names": counter_names,
        "pieces": [p.info["piece"] for p in pieces], "track_piece": [t[3] for t in order],
    }


def _write_levels(pieces: list[_Piece], order: list[tuple], spans: list[tuple[int, int]], gaps: list[int],
                  path: str, report: Callable[[str], None], position_type) -> list[int]:
    """The host's levels: for a gap g, per track, its piece's coarsest level with gap <= g. A gap
    is kept when its blocks are at most 0.7 of the last kept level's (as TraceIndex builds its
    own), and the coarsest always; returns the kept gaps."""
    plans = []
    kept = sum(b - a for a, b in spans)
    for gap in gaps:
        chosen = [_chosen(pieces[t[3]], gap, t, spans[g]) for g, t in enumerate(order)]
        total = sum(c[3] - c[2] for c in chosen)
        if total <= 0.7 * kept or gap == gaps[-1]:
            plans.append((gap, chosen, total))
            kept = total
    for k, (_gap, chosen, total) in enumerate(plans, 1):
        report(f"level of detail {k} of {len(plans)}")
        # Event positions and counts as narrow as the events allow (TraceIndex's own levels too).
        cols = {name: _Column(os.path.join(path, f"L{k}.{name}.npy"), dt, total) for name, dt in
                (("start", np.int64), ("end", np.int64), ("rep", position_type), ("first_event", position_type),
                 ("events", position_type))}
        row_count = []
        for p, lv, a, b, counts in chosen:
            if lv == 0:
                cols["start"].add(_read(p.folder, "start", a, b))
                cols["end"].add(_read(p.folder, "end" if p.info["cover_is_end"] else "cover", a, b))
                pos = p.host_positions(np.arange(a, b))
                cols["rep"].add(pos)
                cols["first_event"].add(pos)
                cols["events"].add(np.ones(b - a, position_type))
            else:
                for name in ("start", "end", "events"):
                    cols[name].add(_read(p.folder, f"L{lv}.{name}", a, b))
                for name in ("rep", "first_event"):
                    cols[name].add(p.host_positions(_read(p.folder, f"L{lv}.{name}", a, b)))
            row_count.append(np.asarray(counts, np.int64))
        for c in cols.values():
            c.close()
        rc = np.concatenate(row_count) if row_count else np.zeros(0, np.int64)
        np.save(os.path.join(path, f"L{k}.row_count.npy"), rc)
        np.save(os.path.join(path, f"L{k}.row_first.npy"), np.concatenate(([0], np.cumsum(rc)[:-1])).astype(np.int64))
    return [gap for gap, _, _ in plans]


def _chosen(p: _Piece, gap: int, t: tuple, span: tuple[int, int]) -> tuple:
    """(piece, its level for `gap`, first block, end block, blocks per row) of track t."""
    lv = sum(1 for x in p.info["gaps"] if x <= gap)  # the piece's levels are by gap, finest first
    if lv == 0:
        return p, 0, span[0], span[1], p.row_count[t[4]:t[4] + t[5]]
    rf = _level_rows(p.folder, lv, "row_first")
    rc = _level_rows(p.folder, lv, "row_count")
    a = int(rf[t[4]])
    counts = rc[t[4]:t[4] + t[5]]
    return p, lv, a, a + int(counts.sum()), counts


@lru_cache(maxsize=256)
def _level_rows(folder: str, level: int, name: str) -> np.ndarray:
    return _whole(folder, f"L{level}.{name}")


def _write_flows(pieces: list[_Piece], path: str, report: Callable[[str], None]) -> None:
    report("linking flows across pieces")
    parts = []
    for p in pieces:
        sizes = p.info["ends"]
        ends = FlowEnds(**{f: tuple(_whole(p.folder, f"ends.{f}.{j}") for j in range(n))
                           for f, n in zip(FlowEnds.FIELDS, sizes)})
        parts.append(ends.remapped(p.host_positions))
    table = link_ends(FlowEnds.joined(parts))
    for name in ("src", "dst", "kind", "category", "flow_id"):
        np.save(os.path.join(path, f"flow.{name}.npy"), getattr(table, name))


def _write_counters(pieces: list[_Piece], path: str) -> list[str]:
    """The pieces' counter series joined: one series per (process, name), as one frame gives
    (the host's memory counters come from every thread piece); numbered by process, then in the
    order the pieces (the file's order) first show them."""
    keys: dict[tuple[int, str], int] = {}
    series, t, value = [], [], []
    for p in pieces:
        names = list(p.info["counter_names"])
        if not names:
            continue
        pids = _whole(p.folder, "counter.pid").tolist()
        ids = np.array([keys.setdefault((int(q), n), len(keys)) for q, n in zip(pids, names)], np.int64)
        series.append(ids[_whole(p.folder, "counter.series").astype(np.int64)])
        t.append(_whole(p.folder, "counter.t_ps"))
        value.append(_whole(p.folder, "counter.value"))
    numbered = sorted(keys, key=lambda k: (k[0], keys[k]))  # by process, stable
    rank = np.empty(len(keys), np.int64)
    rank[[keys[k] for k in numbered]] = np.arange(len(keys))
    table = (build([n for _, n in numbered], [q for q, _ in numbered], rank[np.concatenate(series)],
                   np.concatenate(t), np.concatenate(value)) if keys else CounterTable.empty())
    for name in _COUNTER_ARRAYS:
        np.save(os.path.join(path, f"counter.{name}.npy"), getattr(table, name))
    return table.names


# --- an index of pieces, read back ------------------------------------------------------------
class PiecedIndex(TraceIndex):
    """A composed index: no frame of the whole host. An event's stats come from its own plane's
    events of its name alone (event_subset), decoded when asked (prepare_details, a worker)."""

    host_file: HostFile | None = None
    pieces: list[host_pieces.Piece] = []
    track_piece: list[int] = []
    _details: tuple[int, tuple[XSpaceFrame, int] | None] | None = None

    @property
    def frame(self):
        return None

    def piece_of(self, i: int) -> int:
        return self.track_piece[int(self.row_track[int(self.event_row[i])])]

    def frame_of(self, i: int):
        at = self.detail_row(i)
        return at[0] if at is not None else None

    def details_ready(self, i: int) -> bool:
        return self._details is not None and self._details[0] == i

    def prepare_details(self, i: int) -> None:
        if not self.details_ready(i):
            self._details = (i, self._find(i))

    def detail_row(self, i: int) -> tuple[Any, int] | None:
        self.prepare_details(i)
        assert self._details is not None
        return self._details[1]

    def _find(self, i: int) -> tuple[XSpaceFrame, int] | None:
        """The frame of the event's plane holding only the events of its name (its piece's lines
        of a host plane), and the event's row there; None for derived events (no such row)."""
        if self.host_file is None or int(self.kind[i]) != KIND_RAW:
            return None
        track = self.tracks[int(self.row_track[int(self.event_row[i])])]
        plane = self.processes.get(track.pid)
        if plane is None:
            return None
        meta = event_subset.plane_metadata(self.host_file, plane)
        if meta is None:
            return None
        want = self.names[int(self.name[i])]
        shown = [d or n for n, d in zip(meta.raw.em_name, meta.raw.em_display_name)]
        # A root the grouping renamed reads "<its name> <step>".
        names = {n for n, s in zip(meta.raw.em_name, shown) if s == want or s == want.rsplit(" ", 1)[0]}
        frame = event_subset.events_named(self.host_file, plane, names)
        if frame is None:
            return None
        r = frame.raw
        line_tid = np.where(r.line_display_id != 0, r.line_display_id, r.line_id).astype(np.int64) & 0xFFFFFFFF
        rows = np.flatnonzero((line_tid[r.event_line] == track.tid) & (frame.start_ps == int(self.start[i])))
        return (frame, int(rows[0])) if len(rows) else None

    def positions_of(self, other: TraceIndex, events: np.ndarray) -> np.ndarray:
        return self.locate(other, events)  # ev_row numbers no frame's events here


def as_pieced(ix: TraceIndex, meta: dict) -> PiecedIndex:
    """A loaded index whose index.json names its pieces, as the PiecedIndex it is."""
    ix.__class__ = PiecedIndex
    assert isinstance(ix, PiecedIndex)
    ix.pieces = [piece_of(d) for d in meta["pieces"]]
    ix.track_piece = [int(k) for k in meta["track_piece"]]
    return ix


def piece_of(d: dict) -> host_pieces.Piece:
    """A Piece from its asdict() form (lists back to tuples)."""
    return host_pieces.Piece(d["kind"], tuple(d["names"]), tuple(d["index"]), int(d["size"]), tuple(d["lines"]))


# --- the first frame of a giant host -------------------------------------------------------------
COARSE_LINE_BYTES = 16 << 20  # a device line up to this size is in the first pass
COARSE_BYTES = 96 << 20  # and the first pass reads at most this much


def coarse_frame(hf: HostFile) -> XSpaceFrame | None:
    """The device planes' small lines (steps, XLA modules, ...: not the XLA ops), decoded alone:
    what the trace viewer draws first on a giant host while its pieces are built. None when the
    host has no device plane."""
    data = read(hf)
    planes = plane_directory(data) or []
    picked: list[tuple[PlaneEntry, list[int] | None]] = []
    total = 0
    for e in planes:
        if not e.name.startswith(DEVICE_PREFIXES):
            continue
        lines = []
        for i, n in enumerate(line_sizes(data, e)):
            if n <= COARSE_LINE_BYTES and total + n <= COARSE_BYTES:
                lines.append(i)
                total += n
        picked.append((e, lines))
    if not picked:
        return None
    raw = subset_xspace(data, picked, space_texts(data))
    del data
    return decode(raw)


def piece_folder(parent: str) -> str:
    """A scratch folder for the pieces' own indexes (removed once composed)."""
    return tempfile.mkdtemp(dir=parent, prefix=".pieces-")


def remove(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def remove_scratch(folder: str, keep: str) -> None:
    """The pieces' folders of `folder`, all but `keep` (the index itself, when it lives there)."""
    for e in os.scandir(folder):
        if e.path != keep:
            shutil.rmtree(e.path, ignore_errors=True)
