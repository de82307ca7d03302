"""What the trace viewer says about a selection of events: totals, span and per-name figures
(XProf's selection table), computed here so the screen only draws them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tputui.analysis.trace import TraceIndex


@dataclass(frozen=True)
class NameStats:
    name: str
    count: int
    total_ps: float

    @property
    def average_ps(self) -> float:
        return self.total_ps / self.count


@dataclass(frozen=True)
class SelectionStats:
    count: int  # events selected
    total_ps: int  # sum of their durations
    start_ps: int  # first start .. last end
    end_ps: int
    per_name: list[NameStats]  # every name selected, the largest total first

    @property
    def average_ps(self) -> float:
        return self.total_ps / self.count if self.count else 0.0

    @property
    def span_ps(self) -> int:
        return self.end_ps - self.start_ps


def selection_stats(ix: TraceIndex, selection: np.ndarray) -> SelectionStats:
    """Figures of the events `selection` (indices into `ix`); at least one event."""
    dur = ix.end[selection] - ix.start[selection]
    names = ix.name[selection]
    counts = np.bincount(names, minlength=len(ix.names))  # bincount, not np.unique: fast at 2M
    totals = np.bincount(names, weights=dur, minlength=len(ix.names))
    ids = np.flatnonzero(counts)
    ids = ids[np.argsort(-totals[ids], kind="stable")]
    out = SelectionStats(
        count=len(selection), total_ps=int(dur.sum()),
        start_ps=int(ix.start[selection].min()), end_ps=int(ix.end[selection].max()),
        per_name=[NameStats(ix.names[n], int(counts[n]), float(totals[n])) for n in ids.tolist()])
    if len(selection) > 1:
        ix.release_pages()  # a large selection read pages all over the columns
    return out


def _candidates(ix: TraceIndex, a: int, b: int, rows: np.ndarray) -> np.ndarray:
    """Events of `rows` that may overlap [a, b]: per row, those starting by b whose row cover (the
    running max of ends) reaches a. A row's events are by start, so this touches only the events
    near the range, not the whole profile."""
    cover, start = np.asarray(ix.cover), np.asarray(ix.start)
    lo = np.empty(len(rows), np.int64)
    hi = np.empty(len(rows), np.int64)
    for k, r in enumerate(rows.tolist()):
        first, count = int(ix.row_first[r]), int(ix.row_count[r])
        lo[k] = first + np.searchsorted(cover[first:first + count], a, "left")
        hi[k] = first + np.searchsorted(start[first:first + count], b, "right")
    n = np.maximum(hi - lo, 0)
    if not n.sum():
        return np.zeros(0, np.int64)
    keep = n > 0
    lo, n = lo[keep], n[keep]
    # Concatenated aranges lo[k] .. lo[k] + n[k]: one repeat, no loop over events.
    return np.repeat(lo - np.concatenate(([0], np.cumsum(n)[:-1])), n) + np.arange(int(n.sum()))


def self_share(ix: TraceIndex, event: int) -> tuple[int, float]:
    """An event's self time (its duration minus its children's) and its share of the duration."""
    duration = int(ix.end[event]) - int(ix.start[event])
    own = ix.self_time(event) if duration > 0 else 0
    return own, (own / duration if duration > 0 else 0.0)


def events_of(ix: TraceIndex, frame_rows=(), names=()) -> np.ndarray:
    """The index's events for another screen's request: those decoded from `frame_rows` (rows of
    frame.events; not the lines XProf derives from them) plus every event named in `names`."""
    picked = np.zeros(0, np.int64)
    if frame_rows:
        raw = ix.kind == 0
        picked = np.flatnonzero(raw & np.isin(ix.source, np.asarray(frame_rows, np.int64)))
    if names:
        wanted = set(names)
        ids = [i for i, n in enumerate(ix.names) if n in wanted]
        picked = np.union1d(picked, np.flatnonzero(np.isin(ix.name, ids)))
    ix.release_pages()  # every event's name or source was read
    return picked


def earliest(ix: TraceIndex, events: np.ndarray) -> int:
    """The event of `events` (not empty) that starts first."""
    return int(events[np.argmin(ix.start[events])])


@dataclass(frozen=True)
class RangeNameStats:
    """One name's events inside a time range (XProf's selection table row)."""

    name: str
    count: int
    total_ps: int  # time inside the range (an event cut by an edge counts its part inside)
    min_ps: int
    max_ps: int
    range_ps: int

    @property
    def average_ps(self) -> float:
        return self.total_ps / self.count

    @property
    def share(self) -> float:
        """total / the range's length (nested names can sum past 1)."""
        return self.total_ps / self.range_ps if self.range_ps else 0.0


@dataclass(frozen=True)
class RangeStats:
    start_ps: int
    end_ps: int
    count: int  # events overlapping [start, end)
    per_name: list[RangeNameStats]  # the largest total first

    @property
    def span_ps(self) -> int:
        return self.end_ps - self.start_ps


def range_stats(ix: TraceIndex, start_ps: int, end_ps: int, rows: np.ndarray | None = None) -> RangeStats:
    """Per name, the events of `ix` that overlap [start_ps, end_ps] (instants at a time inside
    it too): count, time inside the range, average, min, max and share of the range.
    `rows` limits it to those rows (e.g. the sections shown); None: every row."""
    a, b = (int(start_ps), int(end_ps)) if start_ps <= end_ps else (int(end_ps), int(start_ps))
    s, e = np.asarray(ix.start), np.asarray(ix.end)
    ev = _candidates(ix, a, b, np.arange(ix.num_rows) if rows is None else np.asarray(rows, np.int64))
    ev = ev[((s[ev] < b) & (e[ev] > a)) | ((s[ev] == e[ev]) & (s[ev] >= a) & (s[ev] <= b))]
    if not len(ev):
        return RangeStats(a, b, 0, [])
    clipped = np.minimum(e[ev], b) - np.maximum(s[ev], a)
    names = np.asarray(ix.name)[ev].astype(np.int64)
    n = len(ix.names)
    counts = np.bincount(names, minlength=n)
    totals = np.bincount(names, weights=clipped, minlength=n)
    order = np.argsort(names, kind="stable")
    starts = np.flatnonzero(np.concatenate(([True], names[order][1:] != names[order][:-1])))
    ids = names[order][starts]
    mins = np.minimum.reduceat(clipped[order], starts)
    maxs = np.maximum.reduceat(clipped[order], starts)
    by_total = np.argsort(-totals[ids], kind="stable")
    return RangeStats(a, b, len(ev), [
        RangeNameStats(ix.names[int(ids[k])], int(counts[ids[k]]), int(totals[ids[k]]), int(mins[k]), int(maxs[k]),
                       b - a)
        for k in by_total.tolist()])


INTERVAL_ENDS = ("start", "end")


def move_interval_end(start: int, end: int, which: str, to: int) -> tuple[int, int, str]:
    """A marked interval [start, end] with its `which` end ("start" / "end") moved to `to`.

    Returns the new (start, end, which): an end moved past the other one becomes that end (a
    start dragged beyond the end is now the end, and keeps being the one moved)."""
    if which not in INTERVAL_ENDS:
        raise ValueError(f"an interval end is 'start' or 'end', not {which!r}")
    to = int(to)
    if which == "start":
        return (to, end, "start") if to <= end else (end, to, "end")
    return (start, to, "end") if to >= start else (to, start, "start")
