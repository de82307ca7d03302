"""The events exactly as XProf's trace viewer shows them, as columns.

XProf does not draw raw XSpace events: before converting, it preprocesses the space
(`PreprocessSingleHostXSpace` with step grouping and derived timelines) and then
`ConvertXSpaceToTraceEvents` picks, renames and numbers what it shows. We reproduce
those rules column-wise (no per-event Python loop on host events):

* Planes: `/host:CPU` becomes process 701 ("Host Threads"); device planes become process
  `1 + plane.id`, taken from `/device:GPU:*`, else `/device:TPU:*`, else `/device:CUSTOM:*`.
  Other planes (`/host:metadata`, `Task Environment`, ...) are not shown.
* Lines: thread id = `uint32(display_id or id)`, name = `display_name or name`. Lines named
  `Async XLA Ops` keep their thread entry but none of their events.
* Events: name = metadata `display_name or name`; a `step_name` stat replaces it. Internal
  events (memory allocation, tf.data produce/consume markers) are dropped. Zero-duration
  events are instants (`ph: "i"`), the rest complete events (`ph: "X"`).
* Step markers: the host's step groups come from the one grouping pass every tool shares
  (event_grouping.HostGrouping, XProf's event forest): a root event that starts a group (the
  user's `StepTraceAnnotation`, `Trace(..., _r=1)`, serving roots) is renamed
  `"<name> <step_num>"` (`iter_num` first, then `step_num`, else its group id); implicit roots
  keep their names. No steps when the space is already grouped (has a `group_id` stat) or has
  TF while-loop ops.
* `ThreadpoolListener::Region` events are synthesized on every line from each
  `ThreadpoolListener::StopRegion` back to the line's last `StartRegion` that has a `_c` stat.
* TPU tensor-core planes: a schema.LINE_STEPS line's events join the host step whose launch
  (the grouping's launch keys: device ordinal, queue id, run id, core type) started an XLA module
  inside them; they take its name ("train 5"), consecutive ones of one step merge, the others
  are dropped (with no link at all, each core's steps number themselves). Then the lines XProf
  derives from op-metadata stats, per step (trace_derived.py). Empty lines of those planes are
  dropped.

Not reproduced (no fixture to check them against; the raw events are still shown): GPU
derived lines and XProf's renumbering of GPU stream threads, std::sort's tie order on TPU cores of over 400k events
(ties then keep line order), and XProf's 5M-event cap (we have no cap).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis.event_grouping import HostGrouping, LaunchKey, device_key, host_grouping
from tputui.analysis.event_groups import root_candidates
from tputui.analysis.trace_counters import COUNTER_LINE, CounterTable, counter_table
from tputui.analysis.trace_derived import DeviceLines
from tputui.analysis.trace_flows import FlowTable, flow_table
from tputui.analysis.trace_kinds import KIND_RAW, KIND_REGION
from tputui.data import schema
from tputui.data.heap import release_free_memory
from tputui.data.interned import Interned
from tputui.data.xspace import XSpaceFrame

HOST_PID = 701  # kHostThreadsDeviceId
FIRST_DEVICE_PID = 1  # kFirstDeviceId
DEVICE_PREFIXES = (schema.GPU_PLANE_PREFIX, schema.TPU_PLANE_PREFIX, "/device:CUSTOM:")  # first non-empty wins
TPU_CORE_PLANE = re.compile(r"/device:TPU:([0-9]*)$")

# Events XProf never shows (IsInternalEvent).
INTERNAL_EVENTS = frozenset({
    "MemoryAllocation", "MemoryDeallocation", "PrefetchProduce", "PrefetchConsume",
    "ParallelInterleaveProduce", "ParallelInterleaveConsume", "ParallelInterleaveInitializeInput",
    "ParallelMapProduce", "ParallelMapConsume", "MapAndBatchProduce", "MapAndBatchConsume",
    "ParseExampleProduce", "ParseExampleConsume",
})
START_REGION, STOP_REGION = "ThreadpoolListener::StartRegion", "ThreadpoolListener::StopRegion"
REGION = "ThreadpoolListener::Region"


@dataclass
class TraceEvents:
    """XProf's trace-viewer events of one host, one row per event (any order).

    `source` is the row in the frame's `events` table the event shows (for a Region, its
    StartRegion; for a derived event, the first op it covers); -1 when there is none.
    """

    pid: np.ndarray  # uint32
    tid: np.ndarray  # uint32
    start_ps: np.ndarray  # int64, from the profile start
    duration_ps: np.ndarray  # int64; 0 = instant event
    name: np.ndarray  # int32 into `names`
    source: np.ndarray  # int64 row in frame.events, or -1
    kind: np.ndarray  # uint8 KIND_*
    names: list[str]
    processes: pl.DataFrame  # pid, name (in XProf's order)
    threads: pl.DataFrame  # pid, tid, name (sorted by pid, tid)
    frame: XSpaceFrame | None = field(default=None, repr=False)
    counters: CounterTable | None = field(default=None, repr=False)  # counter tracks (trace_counters)
    flows: Any = field(default=None, repr=False)  # trace_flows.FlowTable: links between these events

    def __len__(self) -> int:
        return len(self.pid)

    @property
    def is_complete(self) -> np.ndarray:
        return self.duration_ps != 0

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]

    def blocks(self, rows: int) -> Iterator[tuple[np.ndarray, ...]]:
        """pid, tid, start_ps, duration_ps, name of every event, as one block (SplitEvents' shape)."""
        if len(self):
            yield self.pid, self.tid, self.start_ps, self.duration_ps, self.name

    def take(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """pid, tid, start_ps at positions `pos`."""
        return self.pid[pos], self.tid[pos], self.start_ps[pos]


def trace_events(frame: XSpaceFrame, derived: bool = True, grouping: HostGrouping | None = None,
                 piece: bool = False) -> TraceEvents:
    """Build the trace viewer's events of one host's frame.

    derived=False leaves out the lines derived from TPU op stats (Framework Name Scope / Ops,
    Source code, Host Offload Ops): the trace viewer's quick first pass. Its events are the
    first rows of the full result, in the same order (the derived ones follow them).
    grouping: the host's step groups when the caller has them (its cached op stats).
    piece: the frame is a piece of a host (trace_pieces.py): `grouping` is the host's, taken as
    it is, and the roots it renames are left for the caller, which knows their ranks.
    """
    out = _Build(frame, grouping=grouping, piece=piece).run(derived)
    assert isinstance(out, TraceEvents)
    return out


def split_trace_events(frame: XSpaceFrame, grouping: HostGrouping | None = None) -> SplitEvents:
    """The events of trace_events(frame), with the raw events' columns left in the frame.

    For a one-pass writer (the JSON export): the raw events are ~90% of the rows and their
    pid, tid and start are gathers of frame columns, so only their rows, names and durations
    are held (~20 bytes an event instead of 37) while the frame is alive anyway."""
    release_free_memory()  # what the decode (on another thread) freed
    out = _Build(frame, split_raw=True, grouping=grouping).run(True)
    assert isinstance(out, SplitEvents)
    release_free_memory()
    return out


@dataclass
class RawEvents:
    """The raw events of a SplitEvents: frame rows `rows` with their final names and durations."""

    frame: XSpaceFrame
    rows: np.ndarray  # int32 frame rows (the events' `source`; int64 past 2**31 events)
    name: np.ndarray  # into the names: uint16 when they are few enough, else int32
    changed: np.ndarray  # positions whose duration is not the frame's (a step's end moved), ascending
    changed_ps: np.ndarray  # their durations
    line_pid: np.ndarray  # uint32 per frame line
    line_tid: np.ndarray  # uint32 per frame line

    def __len__(self) -> int:
        return len(self.rows)

    def columns(self, a: int, b: int) -> tuple[np.ndarray, ...]:
        """pid, tid, start_ps, duration_ps, name of positions a..b."""
        rows = self.rows[a:b]
        dur = self.frame.raw.event_duration_ps[rows]
        i, j = np.searchsorted(self.changed, (a, b))
        dur[self.changed[i:j] - a] = self.changed_ps[i:j]
        return (*self.placed(rows), dur, self.name[a:b])

    def placed(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """pid, tid, start_ps of frame rows (of raw events)."""
        line = self.frame.raw.event_line[rows]
        return self.line_pid[line], self.line_tid[line], self.frame.start_ps[rows]


@dataclass
class SplitEvents:
    """TraceEvents as two parts: the raw events (read from the frame on demand), then the
    others (`rest`: regions and derived lines, holding the names, tracks, flows and counters).
    Positions (flow ends) are those of the joined table."""

    raw: RawEvents
    rest: TraceEvents
    links: _Links | None = None  # counters and flows, still being built (rest's once done)

    def __len__(self) -> int:
        return len(self.raw) + len(self.rest)

    names = property(lambda self: self.rest.names)
    processes = property(lambda self: self.rest.processes)
    threads = property(lambda self: self.rest.threads)
    frame = property(lambda self: self.rest.frame)
    counters = property(lambda self: self._links()[0])

    @property
    def flows(self) -> Any:
        """The flow table (waits for it; not for the counters, built after it)."""
        return self.links.flows() if self.links is not None else self.rest.flows

    def wait_for_flows(self) -> None:
        """Return once the flow table is built (the counters may still be being built)."""
        if self.links is not None:
            self.links.flows()

    def _links(self) -> tuple[Any, Any]:
        if self.links is not None:
            self.rest.counters, self.rest.flows = self.links.result()
            self.links = None
        return self.rest.counters, self.rest.flows

    def blocks(self, rows: int) -> Iterator[tuple[np.ndarray, ...]]:
        """pid, tid, start_ps, duration_ps, name of consecutive positions, in up to `rows` rows
        for the raw part (gathered as they are asked for)."""
        for a in range(0, len(self.raw), rows):
            yield self.raw.columns(a, min(a + rows, len(self.raw)))
        if len(self.rest):
            yield from self.rest.blocks(rows)

    def take(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """pid, tid, start_ps at positions `pos`."""
        pos = np.asarray(pos, np.int64)
        n = len(self.raw)
        if len(pos) and int(pos.max()) >= n:  # some in the rest: both parts, joined per position
            joined = self.joined()
            return joined.pid[pos], joined.tid[pos], joined.start_ps[pos]
        return self.raw.placed(self.raw.rows[pos])

    def joined(self) -> TraceEvents:
        """The one table trace_events gives (a copy of every column)."""
        raw, rest = self.raw, self.rest
        self._links()
        pid, tid, start, dur, name = raw.columns(0, len(raw))
        return TraceEvents(
            pid=np.concatenate([pid, rest.pid]), tid=np.concatenate([tid, rest.tid]),
            start_ps=np.concatenate([start, rest.start_ps]), duration_ps=np.concatenate([dur, rest.duration_ps]),
            name=np.concatenate([name, rest.name]), source=np.concatenate([raw.rows, rest.source]),
            kind=np.concatenate([np.full(len(raw), KIND_RAW, np.uint8), rest.kind]), names=rest.names,
            processes=rest.processes, threads=rest.threads, frame=rest.frame, counters=rest.counters,
            flows=rest.flows)


class _Build:
    def __init__(self, frame: XSpaceFrame, split_raw: bool = False, grouping: HostGrouping | None = None,
                 piece: bool = False) -> None:
        self.f = frame
        self.piece = piece
        self.split_raw = split_raw
        self._grouping = grouping
        self._launches: dict[LaunchKey, int] | None = None
        self.raw_part: RawEvents | None = None
        self.r = frame.raw
        self.names = Interned()
        self.chunks: list[tuple] = []  # (pid, tid, start, dur, name, source, kind) arrays
        r = self.r
        self.ev_md = frame.events["metadata"].to_numpy()  # -1 (unknown) picks the trailing row below
        self.start = frame.start_ps
        self.dur = r.event_duration_ps
        # Per metadata row (+1 trailing row for events whose metadata id is unknown).
        self.md_name = np.array(r.em_name + [""], dtype=object)
        shown = [d or n for n, d in zip(r.em_name, r.em_display_name)] + [""]
        self.md_shown = np.array([self.names.id(s) for s in shown], np.int32)
        self.md_internal = np.array([n in INTERNAL_EVENTS for n in r.em_name] + [False])

    # --- planes and lines ------------------------------------------------------------
    def pid_of_plane(self) -> dict[int, int]:
        r = self.r
        pids: dict[int, int] = {}
        for p, n in enumerate(r.plane_name):
            if n == schema.HOST_PLANE:
                pids[p] = HOST_PID
                break
        for prefix in DEVICE_PREFIXES:
            dev = [p for p, n in enumerate(r.plane_name) if n.startswith(prefix)]
            if dev:
                for p in dev:
                    pids[p] = FIRST_DEVICE_PID + int(r.plane_id[p])
                break
        return pids

    def run(self, derived: bool = True) -> TraceEvents | SplitEvents:
        r = self.r
        pids = self.pid_of_plane()
        plane_pid = np.full(len(r.plane_name), -1, np.int64)
        for p, pid in pids.items():
            plane_pid[p] = pid
        line_tid = np.where(r.line_display_id != 0, r.line_display_id, r.line_id).astype(np.int64) & 0xFFFFFFFF
        line_shown_name = [d or n for n, d in zip(r.line_name, r.line_display_name)]
        line_keeps_events = np.array([n != schema.LINE_ASYNC_XLA_OPS for n in line_shown_name], bool)
        # A `_counters_` line holds counter samples, not a thread (XProf gives it no resource).
        counter_line = np.array([n == COUNTER_LINE for n in r.line_name], bool)

        grouped = self.space_is_grouped()
        line_pid = plane_pid[r.line_plane]
        line_ok = (line_pid >= 0) & line_keeps_events & ~counter_line
        # Counter tracks come with the final pass, as flows do: the quick first frame skips them.
        counter_lines = (line_pid >= 0) & counter_line
        md_names = self.md_shown_names() if derived else None
        keep = line_ok[r.event_line]
        if self.md_internal.any():
            keep &= ~self.md_internal[self.ev_md]
        # Frame rows as int32 when they fit: the export keeps them (and the flows search them).
        row_type = np.int32 if r.num_events < 2**31 else np.int64
        rows = np.arange(r.num_events, dtype=row_type) if keep.all() else np.flatnonzero(keep).astype(row_type)
        del keep
        names = self.md_shown[self.ev_md[rows]]
        # Durations the steps change, as (position, duration) pairs (the rest are the frame's).
        changed: dict[int, int] = {}
        self.device_steps: dict[int, _DeviceSteps] = {}
        self.apply_step_name_stats(rows, names)
        if not grouped:
            groups = self.grouping
            renamed = {} if self.piece else groups.renamed_rows(self.root_candidates)
            for p in pids:
                if TPU_CORE_PLANE.fullmatch(r.plane_name[p]) and groups.enabled:
                    self.device_steps[p] = _DeviceSteps.of(self, p, groups)
            if self.device_steps:
                steps = _DeviceSteps.finish(list(self.device_steps.values()), groups)
                drop = np.array(sorted(steps.dropped), np.int64)
                if len(drop):
                    at = np.searchsorted(rows, drop)
                    at = at[(at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == drop)]
                    rows, names = np.delete(rows, at), np.delete(names, at)
                for row, (end, name) in steps.changed.items():
                    pos = int(np.searchsorted(rows, row))
                    changed[pos] = end - int(self.start[row])
                    if name is not None:
                        renamed[row] = name
            for row, name in renamed.items():
                pos = int(np.searchsorted(rows, row))
                if pos < len(rows) and rows[pos] == row:
                    names[pos] = self.names.id(name)
        at = np.array(sorted(changed), np.int64)
        new_ps = np.array([changed[k] for k in at.tolist()], np.int64)
        if self.split_raw:  # pid, tid and start stay in the frame, durations where a step changed them
            moved = new_ps != self.dur[rows[at]]
            if len(self.names.strings) <= 1 << 16:  # the ids fit 16 bits (the writer widens each block)
                names = names.astype(np.uint16)
            self.raw_part = RawEvents(self.f, rows, names, at[moved], new_ps[moved], line_pid.astype(np.uint32),
                                      line_tid.astype(np.uint32))
        else:  # final dtypes from the start (uint32 ids), so the join below copies the least
            dur = self.dur[rows]
            dur[at] = new_ps
            ev_line = r.event_line[rows]
            self.chunks.append((line_pid.astype(np.uint32)[ev_line], line_tid.astype(np.uint32)[ev_line],
                                self.start[rows], dur, names, rows.astype(np.int64), np.zeros(len(rows), np.uint8)))
            del ev_line, dur
        del names
        links, links_later = None, None
        if md_names is not None:
            # Counters and flows need only the raw events (the first rows, their positions final):
            # built on a worker thread (Polars and numpy let the GIL go) while the derived lines are.
            # Split (the export): started once the derived lines are built, so their working
            # memory and the links' are not alive together; the writer waits for it after the
            # events, or for the flows before them on a large profile (trace_export.FLOWS_FIRST_EVENTS).
            args = (self.f, plane_pid, counter_lines, md_names, rows)
            if self.split_raw:
                links_later = args
            else:
                links = _Links(*args)
        del rows

        threads = [(int(plane_pid[r.line_plane[li]]), int(line_tid[li]), line_shown_name[li])
                   for li in range(len(r.line_id)) if plane_pid[r.line_plane[li]] >= 0 and not counter_line[li]]
        if not grouped:
            self.add_regions(line_pid, line_tid, line_ok)
            for p, pid in pids.items():
                if TPU_CORE_PLANE.fullmatch(r.plane_name[p]):
                    core = self.device_steps.get(p)
                    threads = DeviceLines(self, p, pid, core.spans if core is not None else None).derive(
                        threads, derived)
        return self.finish(pids, threads, links, links_later)

    def md_shown_names(self) -> np.ndarray:
        """The shown name of each event-metadata row (+1 trailing "" row), as strings."""
        return np.array(self.names.strings, dtype=object)[self.md_shown]

    def finish(self, pids: dict[int, int], threads: list[tuple[int, int, str]],
               links: _Links | None = None, links_later: tuple | None = None) -> TraceEvents | SplitEvents:
        cols = [list(c) for c in zip(*self.chunks)] or [[] for _ in range(7)]
        self.chunks = []
        dtypes = (np.uint32, np.uint32, np.int64, np.int64, np.int32, np.int64, np.uint8)
        # Straight into each column's final dtype (one pass, not concatenate + astype), one
        # column at a time, its parts let go as it is done: at 10M events the parts and the
        # joined columns side by side would be ~400 MB more.
        cat = []
        for k, dt in enumerate(dtypes):
            cat.append(_join(cols[k], dt))
            cols[k] = []
        split_links = _Links(*links_later) if links_later is not None else None
        counters, flows = links.result() if links is not None else (CounterTable.empty(), FlowTable.empty())
        procs = pl.DataFrame({"pid": list(pids.values()), "name": [self.r.plane_name[p] for p in pids]},
                             schema={"pid": pl.UInt32, "name": pl.String})
        # One entry per (pid, tid): the last line with that id names it, like XProf's map.
        th = (pl.DataFrame(threads, schema={"pid": pl.UInt32, "tid": pl.UInt32, "name": pl.String}, orient="row")
              .unique(["pid", "tid"], keep="last", maintain_order=True).sort("pid", "tid"))
        ev = TraceEvents(
            pid=cat[0], tid=cat[1], start_ps=cat[2], duration_ps=cat[3], name=cat[4], source=cat[5],
            kind=cat[6], names=self.names.strings, processes=procs, threads=th, frame=self.f,
            counters=counters, flows=flows)
        return ev if self.raw_part is None else SplitEvents(self.raw_part, ev, split_links)

    def apply_step_name_stats(self, rows: np.ndarray, names: np.ndarray) -> None:
        """A `step_name` stat already in the file (op metadata, then the event) names the event."""
        if "step_name" not in self.r.sm_name:
            return
        f = self.f
        md = f.stat_values("metadata", "step_name")
        md_name = np.full(len(self.r.em_name) + 1, -1, np.int64)
        for owner, tid in zip(md["owner"].to_list(), md["text_id"].to_list()):
            if tid is not None and tid >= 0:
                md_name[owner] = self.names.id(f.text(tid))
        by_md = md_name[self.ev_md[rows]]
        hit = by_md >= 0
        names[hit] = by_md[hit]
        ev = f.stat_values("event", "step_name")
        for owner, tid in zip(ev["owner"].to_list(), ev["text_id"].to_list()):  # stat rows, not events
            pos = np.searchsorted(rows, owner)
            if tid is not None and tid >= 0 and pos < len(rows) and rows[pos] == owner:
                names[pos] = self.names.id(f.text(tid))

    # --- stats helpers -----------------------------------------------------------------
    def event_stat(self, name: str) -> pl.DataFrame:
        """owner (event row), int, uint, text_id of an event stat, one row per event that has it."""
        return self.f.stat_values("event", name)

    def events_named(self, *names: str) -> np.ndarray:
        """Rows of the events whose metadata name is one of `names` (one pass only when any exists)."""
        flag = self.metadata_rows_named(names)
        return np.flatnonzero(flag[self.ev_md]) if flag.any() else np.zeros(0, np.int64)

    def metadata_rows_named(self, names) -> np.ndarray:
        names = set(names)
        return np.array([n in names for n in self.r.em_name] + [False])

    def space_is_grouped(self) -> bool:
        # IsXSpaceGrouped: a `group_id` stat metadata anywhere means XProf skips preprocessing.
        return "group_id" in self.r.sm_name

    # --- steps ---------------------------------------------------------------------------
    @property
    def grouping(self) -> HostGrouping:
        """XProf's step groups of the host: the op stats' own when the caller has them, else
        computed once per frame (event_grouping.py); never a second grouping of our own."""
        if self._grouping is None or not (self.piece or self._grouping.fits(self.root_candidates)):
            self._grouping = host_grouping(self.f)
        return self._grouping

    @cached_property
    def root_candidates(self) -> np.ndarray:
        """Frame rows of the host's candidate roots (what the grouping's root ranks index)."""
        return root_candidates(self.f)

    def launch_groups(self) -> dict[LaunchKey, int]:
        """(device ordinal, queue id, masked run id, core type) -> group of the host launch with it."""
        if self._launches is None:
            self._launches = self.grouping.launch_map()
        return self._launches

    def module_keys(self, plane: int) -> list[tuple[int, int, LaunchKey]]:
        """(start, end, launch key) of each XLA module run on a TPU core (TpuModuleLineMutator)."""
        r = self.r
        m = TPU_CORE_PLANE.fullmatch(r.plane_name[plane])
        if not m or not m.group(1):
            return []
        names = {n for n, pp in zip(r.sm_name, r.sm_plane.tolist()) if pp == plane}
        if not {"queue_id", "run_id"} <= names:
            return []
        ordinal = int(m.group(1))
        line = next((li for li in range(len(r.line_id)) if r.line_plane[li] == plane
                     and r.line_name[li] == schema.LINE_XLA_MODULES), None)
        if line is None:
            return []
        sl = self.f.line_events(line)
        stats = self.own_int_stats(["queue_id", "run_id", "core_type"])
        out = []
        for row in range(sl.start, sl.stop):  # per module run
            st = stats.get(row, {})
            if "queue_id" in st and "run_id" in st:
                out.append((int(self.start[row]), int(self.start[row] + self.dur[row]),
                            device_key(ordinal, st["queue_id"], st["run_id"], st.get("core_type", 0))))
        return out

    def own_int_stats(self, names: list[str]) -> dict[int, dict[str, Any]]:
        """row -> {stat: int value} (`graph_type`: its text) of the events that have them."""
        st = self.f.stat_values("event", names)
        out: dict[int, dict[str, Any]] = {}
        for owner, sname, iv, tid in zip(st["owner"].to_list(), st["stat_name"].to_list(),
                                         st["int"].to_list(), st["text_id"].to_list()):
            v = self.f.text(tid) if sname == "graph_type" else iv
            if v is not None:
                out.setdefault(owner, {})[sname] = v
        return out

    # --- threadpool regions --------------------------------------------------------------
    def add_regions(self, line_pid: np.ndarray, line_tid: np.ndarray, line_ok: np.ndarray) -> None:
        r = self.r
        is_start_md = self.metadata_rows_named([START_REGION])
        is_stop_md = self.metadata_rows_named([STOP_REGION])
        if not is_start_md.any() or not is_stop_md.any():
            return
        n = r.num_events
        has_c = np.zeros(n, bool)
        c = self.event_stat("_c")
        has_c[c["owner"].to_numpy()] = True
        start_rows = np.flatnonzero(is_start_md[self.ev_md] & has_c)
        del has_c
        stops = np.flatnonzero(is_stop_md[self.ev_md])
        # The latest qualifying StartRegion before each StopRegion, within its own line (searched
        # among the few starts: no pass over every event).
        at = np.searchsorted(start_rows, stops, "right") - 1
        starts = start_rows[np.maximum(at, 0)] if len(start_rows) else np.zeros(len(stops), np.int64)
        ok = (at >= 0) & (starts >= r.line_first_event[r.event_line[stops]])
        stops, starts = stops[ok], starts[ok]
        t0 = self.start[starts]
        ok = t0 != 0  # XProf treats a start at time 0 as "no start seen"
        stops, starts, t0 = stops[ok], starts[ok], t0[ok]
        ok = line_ok[r.event_line[stops]]
        stops, starts, t0 = stops[ok], starts[ok], t0[ok]
        name = self.names.id(REGION)
        lines = r.event_line[stops]
        self.chunks.append((line_pid[lines], line_tid[lines], t0, self.start[stops] - t0,
                            np.full(len(stops), name, np.int32), starts.astype(np.int64),
                            np.full(len(stops), KIND_REGION, np.uint8)))


class _Links:
    """The flow table and the counter table of a frame's raw events, built on a worker thread
    (the flows first: a writer may wait for them alone, and let the counters be built beside it).

    `rows` are the raw events' frame rows, in the order they open the events table (a flow's
    positions index it)."""

    def __init__(self, frame: XSpaceFrame, plane_pid: np.ndarray, counter_lines: np.ndarray, md_names: np.ndarray,
                 rows: np.ndarray) -> None:
        self._flows: Any = None
        self._counters: CounterTable | None = None
        self._error: BaseException | None = None
        self._flows_done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(frame, plane_pid, counter_lines, md_names, rows),
                                        name="tputui-trace-links", daemon=True)
        self._thread.start()

    def _run(self, frame, plane_pid, counter_lines, md_names, rows) -> None:
        try:
            try:
                self._flows = flow_table(frame, rows, np.full(len(rows), KIND_RAW, np.uint8))
            finally:
                self._flows_done.set()
            release_free_memory()
            self._counters = counter_table(frame, plane_pid, counter_lines, md_names)
            release_free_memory()
        except BaseException as e:  # noqa: BLE001 - handed to the caller in flows() / result()
            self._error = e

    def flows(self) -> Any:
        """The flow table, once built (the counters may still be being built)."""
        self._flows_done.wait()
        if self._flows is None:
            return self.result()[1]  # the flows failed: their error
        return self._flows

    def result(self) -> tuple[CounterTable, Any]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._counters is not None
        return self._counters, self._flows


@dataclass
class _DeviceSteps:
    """The schema.LINE_STEPS line of one TPU core, grouped the way GroupTpuXPlaneEvents does.

    A device step joins the host step whose launch (DoEnqueueProgram, matched on device
    ordinal, queue id, run id and core type) started one of the XLA modules inside it. Steps
    that joined a host step are named after it; consecutive steps of one group merge and
    steps with no group are dropped. When no step of any core joined a host step, each core's
    steps are numbered as groups of their own instead.
    """

    plane: int
    rows: np.ndarray  # Steps events, by start
    group: np.ndarray  # host group id per step, -1 when none
    starts: np.ndarray
    ends: np.ndarray
    step_nums: dict = field(default_factory=dict)  # row -> own iter_num / step_num stat
    own_groups: bool = False  # numbered as groups of their own (no host step joined)
    spans: tuple | None = None  # (starts, ends) of the steps left after merging

    @classmethod
    def of(cls, b: _Build, plane: int, groups: HostGrouping) -> _DeviceSteps:
        r, f = b.r, b.f
        line = next((li for li in range(len(r.line_id)) if r.line_plane[li] == plane and r.line_name[li] == schema.LINE_STEPS),
                    None)
        if line is None or not r.line_num_events[line]:
            z = np.zeros(0, np.int64)
            return cls(plane, z, z.copy(), z.copy(), z.copy())
        sl = f.line_events(line)
        rows = np.arange(sl.start, sl.stop)[np.argsort(b.start[sl], kind="stable")]
        group = np.full(len(rows), -1, np.int64)
        nums = b.own_int_stats(["iter_num", "step_num"])
        step_nums = {int(x): nums[int(x)].get("iter_num", nums[int(x)].get("step_num"))
                     for x in rows.tolist() if int(x) in nums}
        launches = b.launch_groups()
        modules = b.module_keys(plane)
        if launches and modules:
            s, e = b.start[rows], b.start[rows] + b.dur[rows]
            for m_start, m_end, key in modules:  # one per XLA module run
                k = int(np.searchsorted(e, m_start, "right"))  # first step ending after it starts
                if k < len(rows) and s[k] <= m_start and m_end <= e[k]:
                    g = launches.get(key)
                    if g is not None and (group[k] < 0 or g < group[k]):
                        group[k] = g
        return cls(plane, rows, group, b.start[rows], b.start[rows] + b.dur[rows], step_nums)

    @staticmethod
    def finish(cores: list[_DeviceSteps], groups: HostGrouping) -> _StepEdits:
        """Rows to drop and (end, name) changes for the Steps events of every core."""
        edits = _StepEdits()
        if not any((c.group >= 0).any() for c in cores if len(c.rows)):
            # tpu_needs_grouping: each core's steps become groups of their own, numbered after
            # the host's (the same numbers on every core); a step is named by its step number
            # stat, else its group id.
            for c in cores:
                c.group = groups.count + np.arange(len(c.rows))
                c.own_groups = True
        for c in cores:  # per step, not per event
            if not len(c.rows):
                continue
            keep: list[list[int]] = []
            prev = None
            for i, row in enumerate(c.rows.tolist()):
                g, end = int(c.group[i]), int(c.ends[i])
                if g < 0:
                    edits.dropped.add(row)  # ungrouped device steps are discarded
                    prev = None
                elif prev is not None and g == prev[1]:
                    edits.dropped.add(row)  # a multi-module step: extend the first event
                    edits.changed[prev[0]] = (end, edits.changed[prev[0]][1])
                    keep[-1][1] = end
                else:
                    num = c.step_nums.get(row) if c.own_groups else None
                    name = (str(num if num is not None else g)) if c.own_groups else (
                        groups.name[g] if g < groups.count else None)
                    edits.changed[row] = (end, name)
                    keep.append([int(c.starts[i]), end])
                    prev = (row, g)
            c.spans = (np.array([k[0] for k in keep], np.int64), np.array([k[1] for k in keep], np.int64))
        return edits


@dataclass
class _StepEdits:
    dropped: set = field(default_factory=set)
    changed: dict = field(default_factory=dict)  # row -> (end_ps, new name or None)


def _join(parts, dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype)
    if len(parts) == 1:
        return np.asarray(parts[0]).astype(dtype, copy=False)
    return np.concatenate(parts, dtype=dtype, casting="unsafe")
