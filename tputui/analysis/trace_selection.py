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
    return SelectionStats(
        count=len(selection), total_ps=int(dur.sum()),
        start_ps=int(ix.start[selection].min()), end_ps=int(ix.end[selection].max()),
        per_name=[NameStats(ix.names[n], int(counts[n]), float(totals[n])) for n in ids.tolist()])


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
    return picked


def earliest(ix: TraceIndex, events: np.ndarray) -> int:
    """The event of `events` (not empty) that starts first."""
    return int(events[np.argmin(ix.start[events])])
