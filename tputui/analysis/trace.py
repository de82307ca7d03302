"""TraceIndex: the trace viewer's events arranged for drawing at any zoom, without an event cap.

Layout: sections (one per process: each TPU/GPU device, then "Host Threads") hold tracks (one
per thread / device line); a track holds rows, one per nesting depth. Every event belongs to
exactly one row. Events are stored once, sorted by (row, start): row r is the slice
`[row_first[r], row_first[r] + row_count[r])` of the arrays `start`, `end`, `name`, `source`.

Level of detail: for each zoom level k >= 1 the pyramid holds, per row, the merged intervals
("blocks") of level k-1 whose gaps are shorter than `gap[k] = BASE_GAP * 4**(k-1)` ps, each
with its event count, its first event, and a representative (its longest event, which names
and colours it). A frame at `c` ps per column uses the coarsest level whose gap is <= c: a gap
shorter than a column can never empty a whole column, so the picture is exact, and blocks
there are >= c/4 apart, so a row costs O(columns), whatever the number of events.

Search is a substring match on the distinct names (a few thousand), then one vectorized pass
over the events' name ids.
"""
from __future__ import annotations

import threading
import weakref
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tputui.analysis.trace_counters import CounterTable
from tputui.analysis.trace_events import HOST_PID, TraceEvents, trace_events
from tputui.analysis.trace_flows import FlowTable
from tputui.data.heap import release_free_memory
from tputui.data.raw import release

BASE_GAP = 1000  # ps: level 1 merges gaps under 1 ns
GAP_FACTOR = 4
HOST_SECTION = "Host Threads"


@dataclass
class Track:
    pid: int
    tid: int
    name: str
    section: int
    first_row: int
    num_rows: int


@dataclass
class Section:
    pid: int
    name: str
    tracks: list[int] = field(default_factory=list)


@dataclass
class Level:
    """Blocks of one zoom level, stored by (row, start); row r is [first[r], first[r] + count[r])."""

    gap: int
    start: np.ndarray
    end: np.ndarray
    rep: np.ndarray  # event index (level-0 position) that names / colours the block
    first_event: np.ndarray  # level-0 position of the block's first event
    events: np.ndarray  # number of events merged into the block
    row_first: np.ndarray
    row_count: np.ndarray


class TraceIndex:
    """Rows of events plus their level-of-detail pyramid (see module docstring)."""

    # Set by the first pass over the raw events only (trace_events(derived=False)): the lines
    # derived from op stats come with the final index (trace_cache.finish_index).
    partial = False
    coarse = False  # a giant host's first pass: some lines only (trace_cache._coarse_index)
    deferred: tuple[int, ...] = ()  # sections of a partial index whose events come with the final one

    def __init__(self, ev: TraceEvents, progress: Callable[[str], None] | None = None, exact: bool = True) -> None:
        """exact=False: nest every track by open-event count for now, unchecked (fast; where a
        track is improperly nested a few events may share a row with an overlapping one); such
        an index is not `exact`, and `refined()` gives the exact one."""
        self.names = ev.names
        # A stable hue per name (not per intern order): the same op keeps its colour everywhere.
        self.name_hash = np.array([zlib.crc32(n.encode()) for n in ev.names], np.uint32)
        self.processes = dict(ev.processes.iter_rows())
        self.threads = ev.threads
        report = progress or (lambda msg: None)
        report(f"arranging {len(ev):,} events into tracks")
        self.exact = True
        self.counters = ev.counters if ev.counters is not None else CounterTable.empty()
        self._arrange(ev, exact)
        self._cover()
        self.flows = self._flows_of(ev)
        self.init_state(ev.frame, None if self.exact else ev)
        self.levels: list[Level] = [self.level0()]

    def init_state(self, frame, events: TraceEvents | None = None) -> None:
        """What is not arrays: the frame, search state, the pyramid's lock (also for an index
        read back from disk, see trace_cache)."""
        self._frame = frame
        self.frame_loader: Callable[[], object] | None = None  # an index read from disk loads it on demand
        self._events = events  # kept only until refined
        self._match_cache: dict = {}
        self.search_ids: np.ndarray | None = None
        self.pyramid_ready = False
        self._pyramid_lock = threading.Lock()

    @property
    def frame(self):
        """The decoded frame the events come from (stats and full names for the details pane)."""
        if self._frame is None and self.frame_loader is not None:
            self._frame = self.frame_loader()
        return self._frame

    @property
    def frame_ready(self) -> bool:
        """False while an index read from disk has not loaded its frame yet (see `frame`)."""
        return self._frame is not None or self.frame_loader is None

    def details_ready(self, i: int) -> bool:
        """Whether event i's stats can be read without decoding anything (see prepare_details)."""
        return self.frame_ready

    def prepare_details(self, i: int) -> None:
        """Decode what event i's stats come from (a worker calls this when details_ready is False)."""
        _ = self.frame_of(i)

    @property
    def complete(self) -> bool:
        """Every event (derived lines too), exactly nested, with its level-of-detail pyramid."""
        return self.exact and self.pyramid_ready and not self.partial

    # --- building ------------------------------------------------------------------------
    def _arrange(self, ev: TraceEvents, exact: bool) -> None:
        threads = ev.threads
        known = set(zip(threads["pid"].to_list(), threads["tid"].to_list()))
        # Events come in runs of one thread (a line at a time): map runs, not events.
        key = (ev.pid.astype(np.uint64) << np.uint64(32)) | ev.tid.astype(np.uint64)
        run_start = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else np.zeros(0, np.int64)
        run_keys = key[run_start]
        del key  # the big temporaries go as soon as they are used: peak memory at 10M+ events
        keys = {(int(k) >> 32, int(k) & 0xFFFFFFFF) for k in np.unique(run_keys).tolist()}
        extra = [(p, t, f"thread {t}") for p, t in sorted(keys - known)]
        rows = [(p, t, n) for p, t, n in threads.iter_rows()] + extra
        pids = sorted({p for p, _, _ in rows} | set(self.counters.pid.tolist()))  # counters need a section
        # Devices first (in pid order, as XProf), host threads last, each sorted like XProf's
        # sort index (tid); host threads by name, which reads better than hashed thread ids.
        pids.sort(key=lambda p: (p == HOST_PID, p))
        self.sections: list[Section] = []
        self.tracks: list[Track] = []
        track_of: dict[tuple[int, int], int] = {}
        for p in pids:
            name = HOST_SECTION if p == HOST_PID else self.processes.get(p, f"process {p}")
            sec = Section(p, name)
            mine = [(t, n) for pp, t, n in rows if pp == p]
            mine.sort(key=(lambda x: (x[1], x[0])) if p == HOST_PID else (lambda x: x[0]))
            for t, n in mine:
                track_of[(p, t)] = len(self.tracks)
                sec.tracks.append(len(self.tracks))
                self.tracks.append(Track(p, t, n, len(self.sections), 0, 1))
            self.sections.append(sec)

        n = len(ev)
        run_track = np.array([track_of[(int(k) >> 32, int(k) & 0xFFFFFFFF)] for k in run_keys.tolist()], np.int64)
        small_ids = np.int32 if len(self.tracks) < 2**31 else np.int64
        ev_track = (np.repeat(run_track.astype(small_ids), np.diff(np.concatenate((run_start, [n])))) if n
                    else np.zeros(0, small_ids))
        order = _track_time_order(ev_track, ev.start_ps, ev.duration_ps, len(self.tracks))
        track = ev_track[order]
        del ev_track
        start = ev.start_ps[order]
        end = start + ev.duration_ps[order]
        depth, improper = _nesting_depth(track, start, end, len(self.tracks), exact, check=exact)
        self.exact = exact or not improper
        # Rows: each track gets max depth + 1 rows (at least one, even when empty).
        ntr = len(self.tracks)
        max_depth = np.full(ntr, -1, np.int64)
        if n:  # events are by track: a max per segment (ufunc.at is ~10x slower)
            bounds = np.searchsorted(track, np.arange(ntr + 1))
            nonempty = bounds[:-1] < bounds[1:]
            max_depth[nonempty] = np.maximum.reduceat(depth, bounds[:-1][nonempty])
        num_rows = np.maximum(max_depth + 1, 1)
        first_row = np.concatenate(([0], np.cumsum(num_rows)[:-1])) if ntr else np.zeros(0, np.int64)
        for k, t in enumerate(self.tracks):
            t.first_row, t.num_rows = int(first_row[k]), int(num_rows[k])
        self.num_rows = int(num_rows.sum())
        self.row_track = np.repeat(np.arange(ntr), num_rows) if ntr else np.zeros(0, np.int64)
        self.row_depth = (np.arange(self.num_rows) - first_row[self.row_track]) if ntr else np.zeros(0, np.int64)
        row = first_row[track] + depth if n else np.zeros(0, np.int64)
        del track, depth
        # Already by (track, start, longest first): a stable sort on the row keeps that order.
        small = row.astype(np.uint16) if self.num_rows < 65536 else row  # radix sort
        by_row = np.argsort(small, kind="stable") if n else np.zeros(0, np.int64)
        del small
        self.start = start[by_row]
        del start
        self.end = end[by_row]
        del end
        src = order[by_row]
        del order
        self.ev_row = src.astype(np.int32) if n < 2**31 else src  # row in the TraceEvents (identity)
        self.name = ev.name[src]
        source = ev.source[src]
        self.source = source.astype(np.int32) if n == 0 or source.max() < 2**31 else source
        self.kind = ev.kind[src]
        self.event_row = row[by_row].astype(np.int32)
        self.row_count = np.bincount(self.event_row, minlength=self.num_rows).astype(np.int64)
        self.row_first = np.concatenate(([0], np.cumsum(self.row_count)[:-1])).astype(np.int64)
        self.num_events = n
        self.t_min = int(self.start.min()) if n else 0
        self.t_max = int(self.end.max()) if n else 1
        if self.t_max <= self.t_min:
            self.t_max = self.t_min + 1

    def _cover(self) -> None:
        n = self.num_events
        # Events of a row may overlap when they are not properly nested: per row, a running
        # max of ends tells whether anything started earlier still covers a time.
        cover = self.end
        same = np.zeros(n, bool)
        if n > 1:
            same[1:] = self.event_row[1:] == self.event_row[:-1]
        bad = np.flatnonzero(same[1:] & (cover[1:] < cover[:-1])) + 1 if n > 1 else np.zeros(0, np.int64)
        if len(bad):
            cover = cover.copy()
            for r in np.unique(self.event_row[bad]).tolist():  # rows with overlaps only
                a, c = int(self.row_first[r]), int(self.row_count[r])
                cover[a:a + c] = np.maximum.accumulate(cover[a:a + c])
        self.cover = cover

    def _flows_of(self, ev: TraceEvents) -> FlowTable:
        """ev's links in this index's event positions."""
        if ev.flows is None or not len(ev.flows):
            return FlowTable.empty()
        pos = np.empty(len(ev), np.int64)
        pos[np.asarray(self.ev_row, np.int64)] = np.arange(self.num_events)
        return ev.flows.remap(pos)

    def level0(self) -> Level:
        """The finest level: the events themselves (blocks end where their row's cover does)."""
        n = self.num_events
        idx = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
        return Level(0, self.start, self.cover, idx, idx, np.ones(n, np.int32), self.row_first, self.row_count)

    def build_pyramid(self, progress: Callable[[str], None] | None = None) -> None:
        """Merge levels until one more merge would not shrink the blocks (or covers the span).

        Safe to call from a worker while frames are drawn: levels are only appended, and until
        a level exists frames use the finest one (exact, just slower to draw when zoomed out).
        """
        with self._pyramid_lock:
            if not self.pyramid_ready:
                self._build_pyramid(progress)
                self.pyramid_ready = True

    def _build_pyramid(self, progress: Callable[[str], None] | None) -> None:
        report = progress or (lambda msg: None)
        span = self.t_max - self.t_min
        dur = self.end - self.start
        gap = BASE_GAP
        while gap <= span * GAP_FACTOR:
            prev = self.levels[-1]
            # Merging with a larger gap straight from a finer level gives the same blocks, so a
            # level that would barely shrink is skipped (it would only cost memory).
            if _merged_count(prev, gap) <= 0.7 * len(prev.start) or gap * GAP_FACTOR > span * GAP_FACTOR:
                report(f"level of detail {len(self.levels)}: {len(prev.start):,} -> blocks over {_ps_text(gap)} gaps")
                self.levels.append(_merge(prev, gap, dur))
            gap *= GAP_FACTOR
        report("ready")

    def refined(self, progress: Callable[[str], None] | None = None) -> TraceIndex:
        """The exact index (see `exact`); self when already exact."""
        if self.exact or self._events is None:
            return self
        if progress:
            progress("nesting overlapping events exactly")
        return TraceIndex(self._events, progress, exact=True)

    def positions_of(self, other: TraceIndex, events: np.ndarray) -> np.ndarray:
        """Positions in self of `other`'s events (both built from the same TraceEvents, unless
        `other` is a coarse first pass: then found by place, time and name; -1 when not here)."""
        if other.coarse:
            return self.locate(other, events)
        inv = np.empty(len(self.ev_row), np.int64)
        inv[self.ev_row] = np.arange(len(self.ev_row))
        return inv[other.ev_row[np.asarray(events, np.int64)]]

    def locate(self, other: TraceIndex, events: np.ndarray, limit: int = 10_000) -> np.ndarray:
        """Positions in self of `other`'s events found by track, start and name (at most `limit`:
        a selection, not a trace); -1 for an event not found."""
        events = np.asarray(events, np.int64)[:limit]
        track_of = {(t.pid, t.tid): k for k, t in enumerate(self.tracks)}
        ids = {n: i for i, n in enumerate(self.names)}
        out = np.full(len(events), -1, np.int64)
        for j, e in enumerate(events.tolist()):
            t = other.tracks[int(other.row_track[int(other.event_row[e])])]
            k = track_of.get((t.pid, t.tid))
            want = ids.get(other.names[int(other.name[e])])
            if k is None or want is None:
                continue
            track = self.tracks[k]
            s = int(other.start[e])
            for r in range(track.first_row, track.first_row + track.num_rows):
                sl = self.row_events(r)
                a, b = np.searchsorted(self.start[sl], [s, s + 1])
                hit = [sl.start + x for x in range(int(a), int(b)) if int(self.name[sl.start + x]) == want]
                if hit:
                    out[j] = hit[0]
                    break
        return out

    # --- frame queries -----------------------------------------------------------------
    def level_for(self, ps_per_col: float) -> Level:
        """The coarsest built level whose merged gaps are shorter than a column."""
        best = self.levels[0]
        for lv in self.levels[1:]:
            if lv.gap <= ps_per_col:
                best = lv
            else:
                break
        return best

    def row_columns(self, row: int, edges: np.ndarray, level: Level) -> np.ndarray:
        """Per column (edges[i], edges[i+1]): the block index of `level` drawn there, -1 if none."""
        a, c = int(level.row_first[row]), int(level.row_count[row])
        if c == 0:
            return np.full(len(edges) - 1, -1, np.int64)
        bs = level.start[a:a + c]
        be = level.end[a:a + c]
        j = np.searchsorted(bs, edges[1:], "left") - 1
        jc = np.maximum(j, 0)
        hit = (j >= 0) & ((bs[jc] >= edges[:-1]) | (be[jc] > edges[:-1]))
        return np.where(hit, a + jc, -1)

    # --- events ------------------------------------------------------------------------
    def row_events(self, row: int) -> slice:
        a = int(self.row_first[row])
        return slice(a, a + int(self.row_count[row]))

    def event_name(self, i: int) -> str:
        return self.names[int(self.name[i])]

    def event_at(self, row: int, t: int) -> int:
        """The event of `row` at time t, else the nearest one; -1 when the row is empty."""
        sl = self.row_events(row)
        if sl.stop == sl.start:
            return -1
        s, e = self.start[sl], self.cover[sl]
        j = int(np.searchsorted(s, t, "right")) - 1
        if j >= 0 and e[j] >= t:
            # The covering event may have started earlier than j when events overlap.
            k = j
            while k >= 0 and self.end[sl.start + k] < t:
                k -= 1
            return sl.start + (k if k >= 0 else j)
        cands = [x for x in (j, j + 1) if 0 <= x < len(s)]
        dist = [min(abs(int(s[x]) - t), abs(int(self.end[sl.start + x]) - t)) for x in cands]
        return sl.start + cands[int(np.argmin(dist))]

    def self_time(self, i: int) -> int:
        """Event i's duration less the time its children (the next depth of its track) cover,
        as XProf's trace viewer reports "Self time"."""
        r, s, e = int(self.event_row[i]), int(self.start[i]), int(self.end[i])
        if r + 1 >= self.num_rows or self.row_track[r + 1] != self.row_track[r]:
            return e - s
        sl = self.row_events(r + 1)
        starts, ends = self.start[sl], self.end[sl]
        a, b = np.searchsorted(starts, [s, e], "left")
        covered = np.minimum(ends[a:b], e) - np.maximum(starts[a:b], s)
        return e - s - int(np.clip(covered, 0, None).sum())

    def neighbour(self, i: int, step: int) -> int:
        """The next (step=1) / previous (-1) event on i's row, or i at the row's end."""
        r = int(self.event_row[i])
        sl = self.row_events(r)
        j = i + step
        return j if sl.start <= j < sl.stop else i

    # --- search -------------------------------------------------------------------------
    def search(self, text: str) -> np.ndarray:
        """Event indices whose name contains `text` (case-insensitive), in time order."""
        ids = self.matching_names(text)
        self.search_ids = ids
        self._match_cache.clear()
        if not len(ids):
            return np.zeros(0, np.int64)
        hits = np.flatnonzero(self.match_mask())
        hits = hits[np.lexsort((self.event_row[hits], self.start[hits]))]
        self.release_pages()
        return hits

    def release_pages(self) -> None:
        """Let go of the pages a pass over whole columns read in (a saved index's columns are
        memory-mapped: a search over a giant host's 58M names would stay resident). In-memory
        columns are left alone; what is drawn next is read again from the page cache."""
        cols = [self.start, self.end, self.cover, self.name, self.source, self.kind, self.ev_row, self.event_row]
        for lv in self.levels[1:]:
            cols += [lv.start, lv.end, lv.rep, lv.first_event, lv.events]
        release(*cols)
        release_free_memory()  # and the pass's temporaries, which the heap would keep

    def matching_names(self, text: str) -> np.ndarray:
        needle = text.lower()
        if not needle:
            return np.zeros(0, np.int32)
        return np.array([i for i, n in enumerate(self.names) if needle in n.lower()], np.int32)

    def match_mask(self) -> np.ndarray:
        m = self._match_cache.get("events")
        if m is None:
            ids = self.search_ids if self.search_ids is not None else np.zeros(0, np.int32)
            flag = np.zeros(len(self.names) + 1, bool)
            flag[ids] = True
            m = self._match_cache["events"] = flag[self.name] if len(ids) else np.zeros(self.num_events, bool)
        return m

    def block_matches(self, level: Level) -> np.ndarray:
        """Per block of `level`: does it contain a search match?"""
        key = ("blocks", level.gap)
        m = self._match_cache.get(key)
        if m is None:
            mask = self.match_mask()
            if level.gap == 0:
                m = mask
            elif not mask.any() or not len(level.start):
                m = np.zeros(len(level.start), bool)
            else:
                csum = np.concatenate(([0], np.cumsum(mask, dtype=np.int32 if len(mask) < 2**31 else np.int64)))
                m = csum[level.first_event + level.events] - csum[level.first_event] > 0
            self._match_cache[key] = m
        return m

    # --- details --------------------------------------------------------------------------
    def frame_of(self, i: int):
        """The frame event i's `source` row belongs to (the one frame, unless hosts are stacked)."""
        return self.frame

    def detail_row(self, i: int) -> tuple[Any, int] | None:
        """(frame, row of its events) that event i's stats come from; None when there is none."""
        src = int(self.source[i])
        frame = self.frame_of(i)
        return (frame, src) if frame is not None and src >= 0 else None

    def stats(self, i: int) -> dict[str, object]:
        """Every stat of the event's source (op metadata first, then the event's own)."""
        at = self.detail_row(i)
        if at is None:
            return {}
        frame, src = at
        md = int(frame.events["metadata"][src])
        out: dict[str, object] = {}
        if md >= 0:
            out.update(frame.metadata_stat_map(md))
        out.update(frame.stat_map("event", src))
        return out

    def metadata_name(self, i: int) -> str:
        """The source event's full metadata name (e.g. an op's HLO text) when it differs."""
        at = self.detail_row(i)
        if at is None:
            return ""
        frame, src = at
        md = int(frame.events["metadata"][src])
        return frame.raw.em_name[md] if md >= 0 else ""


def _track_time_order(track: np.ndarray, start: np.ndarray, dur: np.ndarray, ntracks: int) -> np.ndarray:
    """Order of events by (track, start, longest first).

    Cheaper than a three-key sort on real traces: events arrive nearly in time order per line,
    which a stable sort by start exploits; a radix sort by track follows; only runs of equal
    (track, start) then need the duration tie-break.
    """
    n = len(start)
    if n == 0:
        return np.zeros(0, np.int64)
    quick = _runs_in_order(track, start, dur)
    if quick is not None:
        return quick
    order = np.argsort(start, kind="stable")
    t = track[order]
    order = order[np.argsort(t.astype(np.uint16) if ntracks < 65536 else t, kind="stable")]
    s, t = start[order], track[order]
    tie = np.zeros(n, bool)
    tie[1:] = (s[1:] == s[:-1]) & (t[1:] == t[:-1])
    if tie.any():
        first = tie.copy()
        first[:-1] |= tie[1:]  # every member of a run of ties, including its first
        pos = np.flatnonzero(first)
        group = np.cumsum(~tie[pos])  # a new group where a member is not tied to its predecessor
        sub = np.lexsort((-dur[order[pos]], group))
        order[pos] = order[pos[sub]]
    return order


def _runs_in_order(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray | None:
    """The (track, start, longest first) order without sorting events, when each track is one
    contiguous run already in that order (a decoded file's lines usually are): the runs are
    put in track order. None otherwise."""
    n = len(start)
    brk = np.flatnonzero(track[1:] != track[:-1]) + 1
    first = np.concatenate(([0], brk))
    run_track = track[first]
    if len(np.unique(run_track)) != len(first):
        return None  # a track in several runs: they need merging
    ds = np.diff(start)
    in_order = (ds > 0) | ((ds == 0) & (dur[1:] <= dur[:-1]))
    in_order[brk - 1] = True  # across runs anything goes
    if not in_order.all():
        return None
    lens = np.diff(np.concatenate((first, [n])))
    by_track = np.argsort(run_track, kind="stable")
    dest = np.concatenate(([0], np.cumsum(lens[by_track])[:-1]))  # where each run lands
    return np.arange(n) - np.repeat(dest - first[by_track], lens[by_track])


def _nesting_depth(track: np.ndarray, start: np.ndarray, end: np.ndarray, ntracks: int,
                   exact: bool = True, check: bool = True) -> tuple[np.ndarray, bool]:
    """Depth of each event in its track's nesting tree (events sorted by track, start, longest first).

    An event's parent is the nearest earlier event of its track (not an instant) that lasts at
    least as long, so contains it; depth = number of ancestors. When a track is properly nested that is simply the
    number of events still open at the event's start, which costs one sort of the ends per track.
    Tracks where that count puts an event under a parent that does not contain it (a step that
    starts while a Python-tracer frame is still open, say) get the exact tree (`_tree_depth`),
    unless `exact` is False. Returns (depth, whether some track was improperly nested).
    check=False skips that check (a first pass that is rebuilt anyway) and says "improper".
    """
    n = len(start)
    improper = False
    if n == 0:
        return np.zeros(0, np.int64), improper
    opener = end > start
    small = np.int32 if n < 2**31 else np.int64  # half the memory of the default at 10M+ events
    started: np.ndarray = np.cumsum(opener, dtype=small) - opener  # openers strictly before i
    bounds = np.searchsorted(track, np.arange(ntracks + 1))
    depth = np.empty(n, small)
    for k in range(ntracks):  # per track, not per event
        a, b = int(bounds[k]), int(bounds[k + 1])
        if a == b:
            continue
        ends = np.sort(end[a:b][opener[a:b]])
        # Events that ended by the start are closed; an instant at an event's very end is inside it.
        closed = np.where(opener[a:b], np.searchsorted(ends, start[a:b], "right"),
                          np.searchsorted(ends, start[a:b], "left"))
        depth[a:b] = started[a:b] - started[a] - closed
        if not check:
            improper = True
        elif not _contained_by_parents(start[a:b], end[a:b], depth[a:b]):
            improper = True
            if exact:
                depth[a:b] = _tree_depth(start[a:b], end[a:b])
    return depth, improper


def _contained_by_parents(start: np.ndarray, end: np.ndarray, depth: np.ndarray) -> bool:
    """Does every event lie inside the latest event one level up that starts before it?"""
    order = np.argsort(depth, kind="stable")  # by depth, then start (the input order)
    d = depth[order]
    cuts = np.searchsorted(d, np.arange(int(d[-1]) + 2))
    for lvl in range(1, int(d[-1]) + 1):
        kids = order[cuts[lvl]:cuts[lvl + 1]]
        parents = order[cuts[lvl - 1]:cuts[lvl]]
        parents = parents[end[parents] > start[parents]]  # instants hold nothing
        if not len(kids):
            continue
        if not len(parents):
            return False
        j = np.searchsorted(start[parents], start[kids], "right") - 1
        if (j < 0).any() or (end[parents[j]] < end[kids]).any():
            return False
    return True


def _tree_depth(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Exact nesting depth of one track's events (sorted by start, longest first).

    Parent = nearest earlier event, not an instant, ending no earlier. Found by pointer jumping, not a loop per
    event: a candidate that ends too early is replaced by its own candidate (everything between
    them ends earlier still); depths are then summed by pointer doubling.
    """
    n = len(start)
    parent = np.arange(n) - 1
    todo = np.flatnonzero(parent >= 0)
    while len(todo):
        # Jump past a candidate that ends too early, or is an instant (instants hold nothing;
        # everything between an instant and its own candidate ended before it, so skipping is safe).
        c = parent[todo]
        todo = todo[(end[c] < end[todo]) | (end[c] == start[c])]
        parent[todo] = parent[parent[todo]]
        todo = todo[parent[todo] >= 0]
    depth = (parent >= 0).astype(np.int64)
    anc = parent
    act = np.flatnonzero(anc >= 0)
    while len(act):
        a = anc[act]
        new_depth = depth[act] + depth[a]
        new_anc = anc[a]
        depth[act] = new_depth
        anc[act] = new_anc
        act = act[new_anc >= 0]
    return depth


def _ps_text(ps: int) -> str:
    for unit, size in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps >= size:
            return f"{ps / size:g} {unit}"
    return f"{ps} ps"


def _breaks(prev: Level, gap: int) -> np.ndarray:
    """Where a new block starts when merging `prev` with `gap`.

    Neighbours merge when the gap between them is under `gap` and neither is itself at least
    `gap` long: an event wide enough to see keeps its own block (and name) at every zoom, while
    runs of events too small to see become one block. Either way a column of width >= gap
    meets only a few blocks: the long ones (each >= gap wide) and the runs between them.
    """
    n = len(prev.start)
    rows = np.repeat(np.arange(len(prev.row_count)), prev.row_count)
    length = prev.end - prev.start
    new = np.ones(n, bool)
    long_ = length >= gap
    new[1:] = ((rows[1:] != rows[:-1]) | (prev.start[1:] - prev.end[:-1] >= gap)
               | long_[1:] | long_[:-1])
    return new


def _merged_count(prev: Level, gap: int) -> int:
    """How many blocks merging `prev` with `gap` would leave."""
    return int(np.count_nonzero(_breaks(prev, gap))) if len(prev.start) else 0


def _merge(prev: Level, gap: int, dur: np.ndarray) -> Level:
    """Blocks of `prev` joined as `_breaks` says."""
    n = len(prev.start)
    if n == 0:
        return Level(gap, prev.start, prev.end, prev.rep, prev.first_event, prev.events,
                     prev.row_first, prev.row_count)
    rows = np.repeat(np.arange(len(prev.row_count)), prev.row_count)
    new = _breaks(prev, gap)
    first = np.flatnonzero(new)
    start = prev.start[first]
    end = np.maximum.reduceat(prev.end, first)
    events = np.add.reduceat(prev.events, first)
    # Representative: the longest event among the merged blocks' representatives (first on ties).
    rep_dur = dur[prev.rep]
    block = np.cumsum(new) - 1
    is_max = rep_dur == np.maximum.reduceat(rep_dur, first)[block]
    pos = np.flatnonzero(is_max)
    bp = block[pos]
    take = np.flatnonzero(np.concatenate(([True], bp[1:] != bp[:-1])))
    rep = prev.rep[pos[take]]
    row_count = np.bincount(rows[first], minlength=len(prev.row_count)).astype(np.int64)
    row_first = np.concatenate(([0], np.cumsum(row_count)[:-1])).astype(np.int64)
    return Level(gap, start, end, rep, prev.first_event[first], events, row_first, row_count)



_INDEXES: weakref.WeakKeyDictionary[object, TraceIndex] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def known_index(frame) -> TraceIndex | None:
    """The index this process already built for the frame, if any."""
    with _LOCK:
        return _INDEXES.get(frame)


def remember_index(frame, ix: TraceIndex) -> None:
    """Keep a better (refined) index for the frame than the one index_for built."""
    with _LOCK:
        _INDEXES[frame] = ix


def index_for(frame, progress: Callable[[str], None] | None = None, exact: bool = True) -> TraceIndex:
    """The TraceIndex of a decoded frame, built once and kept as long as the frame is.

    exact=False builds the quick index first (see TraceIndex); its `refined()` is the final one.
    """
    with _LOCK:
        ix = _INDEXES.get(frame)
    if ix is None:
        if progress:
            progress(f"building the trace viewer's events ({frame.num_events:,} events)")
        ix = TraceIndex(trace_events(frame), progress, exact=exact)
        with _LOCK:
            ix = _INDEXES.setdefault(frame, ix)
    return ix
