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
  are dropped (with no link at all, each core's steps number themselves). Derived lines come
  from op-metadata stats, grouped by step (or else by XLA module): "Framework Name Scope"
  (nested `tf_op` scopes, XProf's 1 ns shortening of stacked equal spans included),
  "Framework Ops", "Source code" and "Host Offload Ops row N" (copy start/done pairs packed
  onto rows); the ops are taken in XProf's sort order, ties included (libstdc++'s std::sort is
  replayed, see stdsort.py). Empty lines of those planes are dropped.

Not reproduced (no fixture to check them against; the raw events are still shown): GPU
derived lines and XProf's renumbering of GPU stream threads, steps tied to launches through
more than one cross-thread flow, std::sort's tie order on TPU cores of over 400k events
(ties then keep line order), and XProf's 5M-event cap (we have no cap).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis.event_grouping import HostGrouping, LaunchKey, device_key, host_grouping
from tputui.analysis.stdsort import sort_order
from tputui.analysis.trace_counters import COUNTER_LINE, CounterTable, counter_table
from tputui.data import schema
from tputui.data.interned import Interned
from tputui.data.xspace import XSpaceFrame

_derive: ModuleType | None  # None: the C extension is not built
try:
    from tputui.analysis import _derive
except ImportError:  # built without a C compiler: the one-at-a-time Python path
    _derive = None

HOST_PID = 701  # kHostThreadsDeviceId
FIRST_DEVICE_PID = 1  # kFirstDeviceId
DEVICE_PREFIXES = (schema.GPU_PLANE_PREFIX, schema.TPU_PLANE_PREFIX, "/device:CUSTOM:")  # first non-empty wins
TPU_CORE_PLANE = re.compile(r"/device:TPU:([0-9]*)$")

# Derived thread ids (trace_utils.h: kThreadIdDerivedMin = 0xdeadbeef).
TID_NAME_SCOPE = 0xDEADBEEF + 2
TID_TF_OP = 0xDEADBEEF + 3
TID_SOURCE = 0xDEADBEEF + 7
TID_OFFLOAD_FIRST = 0xDEADBEEF + 8
MAX_OFFLOAD_ROWS = 41

# Events XProf never shows (IsInternalEvent).
INTERNAL_EVENTS = frozenset({
    "MemoryAllocation", "MemoryDeallocation", "PrefetchProduce", "PrefetchConsume",
    "ParallelInterleaveProduce", "ParallelInterleaveConsume", "ParallelInterleaveInitializeInput",
    "ParallelMapProduce", "ParallelMapConsume", "MapAndBatchProduce", "MapAndBatchConsume",
    "ParseExampleProduce", "ParseExampleConsume",
})
START_REGION, STOP_REGION = "ThreadpoolListener::StartRegion", "ThreadpoolListener::StopRegion"
REGION = "ThreadpoolListener::Region"
OFFLOAD_KEYWORDS = ("copy-start", "copy-done", "dynamic-slice-start", "dynamic-slice-done",
                    "dynamic-update-slice-start", "dynamic-update-slice-done")
HOST_MEMORY_LABEL = "S(5)"

# Derive TPU lines with array operations when every op has a group (tests switch it off to
# compare with the op-by-op reference).
DERIVE_COLUMNS = True
STD_SORT_MAX = 400_000  # events of one TPU core up to which std::sort's tie order is replayed
OFFLOAD_IN_C = True  # tests switch it off to compare with _OffloadRows

# Where an event comes from (TraceEvents.kind).
KIND_RAW, KIND_REGION, KIND_DERIVED = 0, 1, 2


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


def trace_events(frame: XSpaceFrame, derived: bool = True, grouping: HostGrouping | None = None) -> TraceEvents:
    """Build the trace viewer's events of one host's frame.

    derived=False leaves out the lines derived from TPU op stats (Framework Name Scope / Ops,
    Source code, Host Offload Ops): the trace viewer's quick first pass. Its events are the
    first rows of the full result, in the same order (the derived ones follow them).
    grouping: the host's step groups when the caller has them (its cached op stats).
    """
    out = _Build(frame, grouping=grouping).run(derived)
    assert isinstance(out, TraceEvents)
    return out


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim; nothing elsewhere).

    glibc keeps what numpy frees in a thread's arena, and below the mmap threshold (which rises
    to 32 MB as big arrays are freed) in the main heap too: after building the flows at 10M
    events that is ~150 MB the process holds but does not use."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


_trim: Any = None


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
    def __init__(self, frame: XSpaceFrame, split_raw: bool = False, grouping: HostGrouping | None = None) -> None:
        self.f = frame
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
            renamed = groups.renamed_rows()
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
                pos = np.searchsorted(rows, row)
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
                    threads = _DeviceLines(self, p, pid).derive(threads, derived)
        return self.finish(pids, threads, links, links_later)

    def md_shown_names(self) -> np.ndarray:
        """The shown name of each event-metadata row (+1 trailing "" row), as strings."""
        return np.array(self.names.strings, dtype=object)[self.md_shown]

    def finish(self, pids: dict[int, int], threads: list[tuple[int, int, str]],
               links: _Links | None = None, links_later: tuple | None = None) -> TraceEvents | SplitEvents:
        from tputui.analysis.trace_flows import FlowTable

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
        if self._grouping is None:
            self._grouping = host_grouping(self.f)
        return self._grouping

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
        from tputui.analysis.trace_flows import flow_table  # trace_flows reads KIND_RAW from here

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


class _DeviceLines:
    """DeriveLinesFromStats for one TPU tensor-core plane (derived_timeline.cc)."""

    def __init__(self, b: _Build, plane: int, pid: int) -> None:
        self.b, self.plane, self.pid = b, plane, pid
        r = b.r
        self.lines = [li for li in range(len(r.line_id)) if r.line_plane[li] == plane]
        self.new_events: dict[int, list] = {}  # tid -> list of [start, end, name_id, source]
        self.arrays: dict[int, list] = {}  # tid -> list of (starts, ends, name_ids, sources) arrays

    def groups(self, rows: np.ndarray) -> np.ndarray:
        """Group label per event row: the (merged) Steps event, or else the XLA Modules event, it
        overlaps; -1 if none (GroupLine)."""
        r, b = self.b.r, self.b
        steps = b.device_steps.get(self.plane)
        if steps is not None and steps.spans is not None:
            gs, ge = steps.spans
        else:
            li = next((li for li in self.lines if r.line_name[li] == schema.LINE_XLA_MODULES and r.line_num_events[li]), None)
            if li is None:
                return np.full(len(rows), -1, np.int64)
            sl = b.f.line_events(li)
            gs = np.sort(b.start[sl])
            ge = gs + b.dur[sl][np.argsort(b.start[sl], kind="stable")]
        if not len(gs):
            return np.full(len(rows), -1, np.int64)
        s = b.start[rows]
        e = s + b.dur[rows]
        # Closed-interval overlap with the last group event starting at or before the event's end.
        j = np.searchsorted(gs, e, "right") - 1
        jc = np.clip(j, 0, len(gs) - 1)
        hit = (j >= 0) & (ge[jc] >= s)
        return np.where(hit, jc, -1)

    def derive(self, threads: list[tuple[int, int, str]], derived: bool = True) -> list[tuple[int, int, str]]:
        b, r, f = self.b, self.b.r, self.b.f
        rows = np.concatenate([np.arange(f.line_events(li).start, f.line_events(li).stop) for li in self.lines]
                              + [np.zeros(0, np.int64)]).astype(np.int64)
        if len(rows) and derived:
            self.derive_from(rows)
        # RemoveEmptyLines: this plane keeps only lines with events.
        counts: dict[int, int] = {}
        for li in self.lines:
            tid = int((r.line_display_id[li] or r.line_id[li]) & 0xFFFFFFFF)
            counts[tid] = counts.get(tid, 0) + int(r.line_num_events[li])
        out = [t for t in threads if t[0] != self.pid or counts.get(t[1], 0) > 0]
        names = {TID_NAME_SCOPE: "Framework Name Scope", TID_TF_OP: "Framework Ops", TID_SOURCE: "Source code"}
        for tid, evs in self.new_events.items():  # events built one by one (sequential path, offload rows)
            if evs:
                a = np.array([e[:2] + [e[3]] for e in evs], np.int64).reshape(-1, 3)
                self.arrays.setdefault(tid, []).append((a[:, 0], a[:, 1], np.array([e[2] for e in evs], np.int32),
                                                        a[:, 2]))
        for tid in sorted(self.arrays):
            s, e, nm, src = (np.concatenate(c) for c in zip(*self.arrays[tid]))
            if not len(s):
                continue
            out.append((self.pid, tid, names.get(tid) or f"Host Offload Ops row {tid - TID_OFFLOAD_FIRST}"))
            b.chunks.append((np.full(len(s), self.pid, np.int64), np.full(len(s), tid, np.int64), s, e - s,
                             nm.astype(np.int32), src.astype(np.int64), np.full(len(s), KIND_DERIVED, np.uint8)))
        return out

    def op_stats(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: text id of its tf_op and source (event stat over op-metadata stat; -1 when
        absent or empty) and whether it is async (`_a`)."""
        b, f = self.b, self.b.f
        n_md = len(b.r.em_name) + 1
        out = []
        for owner, pick in (("metadata", None), ("event", rows)):
            vals = f.stat_values(owner, ["tf_op", "source", "_a"])
            if pick is not None and vals.height:  # a mask, not is_in: Polars converts a big list slowly
                mine = np.zeros(b.r.num_events, bool)
                mine[pick] = True
                vals = vals.filter(pl.Series(mine[vals["owner"].to_numpy()]))
            out.append(vals)
        md_vals, ev_vals = out
        tf_md, src_md, asy_md = (np.full(n_md, -1, np.int64), np.full(n_md, -1, np.int64), np.zeros(n_md, bool))
        _scatter_stats(md_vals, tf_md, src_md, asy_md, md_vals["owner"].to_numpy())
        md = b.ev_md[rows]
        tf, src, asy = tf_md[md], src_md[md], asy_md[md]
        if ev_vals.height:
            order = np.argsort(rows, kind="stable")
            pos = order[np.searchsorted(rows[order], ev_vals["owner"].to_numpy())]
            _scatter_stats(ev_vals, tf, src, asy, pos)
        empty = np.array([t == "" for t in f.texts] + [True])  # text id -1 picks the trailing True
        tf[empty[tf]] = -1
        src[empty[src]] = -1
        return tf, src, asy

    def derive_from(self, rows: np.ndarray) -> None:
        """rows: every event of the plane, in line order (GetSortedEvents' input)."""
        b = self.b
        tf, src, asy = self.op_stats(rows)
        offload = self.offload_candidates(rows)
        wanted = ~asy & ((tf >= 0) | (src >= 0) | offload)
        if not wanted.any():
            return
        # GetSortedEvents: by start, then shorter first. Only the ops with op stats matter, and
        # their order is fixed unless two of them tie; then std::sort's order for ties, which
        # depends on every event of the plane, is replayed (up to STD_SORT_MAX events).
        w = np.flatnonzero(wanted)
        rw = rows[w]
        s_, d_ = b.start[rw], b.dur[rw]
        order = np.lexsort((d_, s_))
        s_, d_ = s_[order], d_[order]
        if len(w) > 1 and ((s_[1:] == s_[:-1]) & (d_[1:] == d_[:-1])).any() and len(rows) <= STD_SORT_MAX:
            full = sort_order(b.start[rows], b.dur[rows])
            interesting = full[wanted[full]]
        else:
            interesting = w[order]
        rows_i = rows[interesting]
        groups = self.groups(rows_i)
        tf_i, src_i = tf[interesting], src[interesting]
        if DERIVE_COLUMNS and (groups[(tf_i >= 0) | (src_i >= 0)] >= 0).all():
            self.derive_columns(rows_i, tf_i, src_i, groups)  # every op is in a step / module
        else:
            self.derive_sequential(rows_i, tf_i, src_i, groups)
        self.add_offload_rows(rows_i[offload[interesting]])

    def add_offload_rows(self, rows: np.ndarray) -> None:
        """Host Offload Ops rows from copy start/done ops (rows: in sorted order). In C when
        built (`_derive.pair_offload`); `_OffloadRows` is the reference, one op at a time."""
        if _derive is None or not OFFLOAD_IN_C:
            offload_rows = _OffloadRows(self)
            for row in rows.tolist():  # copy start/done pairs only
                offload_rows.add(row)
            return
        if not len(rows):
            return
        b, r = self.b, self.b.r
        md_u, md_inv = np.unique(b.ev_md[rows], return_inverse=True)
        labels: dict[str, int] = {}
        label_of_md = np.zeros(len(md_u), np.int64)
        kind_of_md = np.zeros(len(md_u), np.int64)
        for k, md in enumerate(md_u.tolist()):  # per distinct op, not per event
            shown = r.em_display_name[md] or r.em_name[md]
            label_of_md[k] = labels.setdefault(offload_name(shown), len(labels))
            kind_of_md[k] = 1 if "-start" in shown else 2 if "-done" in shown else 0
        label = label_of_md[md_inv]
        s = b.start[rows].astype(np.int64)
        e = s + b.dur[rows]
        pairs = np.frombuffer(_derive.pair_offload(label, kind_of_md[md_inv], s, e, MAX_OFFLOAD_ROWS),
                              np.int64).reshape(-1, 3)
        if not len(pairs):
            return
        first, done, pick = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        # Intern the labels in the order the pairs meet them (as the one-at-a-time path does).
        text = list(labels)
        pair_label = label[first]
        u, at = np.unique(pair_label, return_index=True)
        name_of_label = np.zeros(len(text), np.int32)
        for lab in u[np.argsort(at)].tolist():
            name_of_label[lab] = b.names.id(text[lab])
        for k in np.unique(pick).tolist():  # per row (<= MAX_OFFLOAD_ROWS)
            m = pick == k
            self.arrays.setdefault(TID_OFFLOAD_FIRST + k, []).append(
                (s[first[m]], e[done[m]], name_of_label[pair_label[m]], rows[first[m]]))

    def derive_sequential(self, rows: np.ndarray, tf: np.ndarray, src: np.ndarray, groups: np.ndarray) -> None:
        """DeriveLinesFromStats event by event (the reference; used when some op has no group)."""
        b, texts = self.b, self.b.f.texts
        scope_line = _DerivedLine(self, TID_NAME_SCOPE)
        op_line = _DerivedLine(self, TID_TF_OP)
        scope_line.dependents = [op_line]
        src_line = _DerivedLine(self, TID_SOURCE)
        parsed: dict[str, tuple[list[str], str, bool]] = {}
        for k, row in enumerate(rows.tolist()):
            s = int(b.start[row])
            e = s + int(b.dur[row])
            group = int(groups[k])
            g = None if group < 0 else group
            if tf[k] >= 0:
                tf_op = texts[tf[k]]
                p = parsed.get(tf_op)
                if p is None:
                    p = parsed[tf_op] = parse_tf_op(tf_op)
                scopes, op_name, framework = p
                if framework and scopes:
                    scope_line.expand_or_add_levels([b.names.id(x) for x in scopes], s, e, g, row)
                op_line.expand_or_add(b.names.id(self.metadata_display(tf_op, op_name)), 0, s, e, g, row, key=tf_op)
            if src[k] >= 0:
                src_line.expand_or_add(b.names.id(texts[src[k]]), 0, s, e, g, row)
        scope_line.reset(0)

    def derive_columns(self, rows: np.ndarray, tf: np.ndarray, src: np.ndarray, groups: np.ndarray) -> None:
        """DeriveLinesFromStats as array operations, for when every op has a group (then an
        op continues the line's last event iff it has the same name and group: no gap rule).

        Same events as derive_sequential (tests compare them), but one pass per nesting level
        instead of one per op.
        """
        b, texts = self.b, self.b.f.texts
        starts = b.start[rows]
        ends = starts + b.dur[rows]
        # Source code: a new event when the source or the group changes.
        o = np.flatnonzero(src >= 0)
        if len(o):
            key = _string_keys(src[o], texts)
            self.emit_runs(TID_SOURCE, o, key, groups[o], starts, ends, rows,
                           lambda first: np.array([b.names.id(texts[t]) for t in src[o][first].tolist()], np.int32))
        o = np.flatnonzero(tf >= 0)
        if not len(o):
            return
        uniq, inv = np.unique(_string_keys(tf[o], texts), return_inverse=True)
        first_tid = np.zeros(len(uniq), np.int64)
        first_tid[inv] = tf[o]  # any text id of each distinct tf_op string
        parsed = [parse_tf_op(texts[t]) for t in first_tid.tolist()]
        op_name = np.array([b.names.id(self.metadata_display(texts[t], p[1])) for t, p in zip(first_tid.tolist(), parsed)],
                           np.int32)
        scoped_u = np.array([p[2] and len(p[0]) > 0 for p in parsed], bool)
        depth = max((len(p[0]) for p in parsed), default=0)
        table = np.full((len(uniq), max(depth, 1)), -1, np.int64)
        for u, p in enumerate(parsed):  # per distinct tf_op, not per op
            if p[2]:
                table[u, :len(p[0])] = [b.names.id(x) for x in p[0]]
        in_q = scoped_u[inv]
        q = o[in_q]  # ops with name scopes, in time order
        reset0 = np.zeros(len(o), bool)
        if len(q):
            common = self.emit_scopes(q, table[inv[in_q]], groups[q], starts, ends, rows)
            reset0[in_q] = common == 0  # the scope line restarted: so does Framework Ops
        self.emit_runs(TID_TF_OP, o, inv, groups[o], starts, ends, rows, lambda first: op_name[inv[first]],
                       extra_breaks=reset0)

    def emit_runs(self, tid: int, o: np.ndarray, key: np.ndarray, g: np.ndarray, starts, ends, rows, name_of,
                  extra_breaks: np.ndarray | None = None) -> None:
        """One derived event per run of consecutive ops with the same key and group."""
        new = np.ones(len(o), bool)
        new[1:] = (key[1:] != key[:-1]) | (g[1:] != g[:-1])
        if extra_breaks is not None:
            new |= extra_breaks
        first = np.flatnonzero(new)
        end = np.maximum.reduceat(ends[o], first)
        self.arrays.setdefault(tid, []).append((starts[o[first]], end, name_of(first), rows[o[first]]))

    def emit_scopes(self, q: np.ndarray, m: np.ndarray, g: np.ndarray, starts, ends, rows) -> np.ndarray:
        """Framework Name Scope: nested scope events, level by level; returns each op's common
        prefix with the previous scoped op (0 where the line restarted)."""
        n, depth = m.shape
        length = (m >= 0).sum(1)
        common = np.zeros(n, np.int64)
        if n > 1:
            same = (m[1:] == m[:-1]) & (m[1:] >= 0)
            common[1:] = np.cumprod(same, axis=1).sum(1)
            common[1:][g[1:] != g[:-1]] = 0
        block_of = np.full((n, depth), -1, np.int64)
        b_start, b_end, b_name, b_src = [], [], [], []
        count = 0
        for level in range(depth):  # per nesting level
            member = np.flatnonzero(length > level)
            if not len(member):
                break
            new = level >= common[member]
            first = member[new]
            bid = np.cumsum(new) - 1 + count
            block_of[member, level] = bid
            cut = np.flatnonzero(new)
            b_start.append(starts[q[first]])
            b_end.append(np.maximum.reduceat(ends[q[member]], cut))
            b_name.append(m[first, level])
            b_src.append(rows[q[first]])
            count += len(first)
        bs, be = np.concatenate(b_start), np.concatenate(b_end)
        # AdjustDurationForTraceViewer: when a stack of levels ends together, each level with
        # the same span as the one above it is shortened by one more ns (at most to 1 ns on top).
        lo = np.zeros(n, np.int64)
        lo[:-1] = common[1:]  # the restart level after each op; 0 after the last
        top = length - 1
        lv = np.arange(depth)
        valid = (lv[None, :] >= lo[:, None]) & (lv[None, :] <= top[:, None])
        blk = np.where(valid, block_of, 0)
        s_, e_ = bs[blk], be[blk]
        eq = np.zeros((n, depth), bool)
        eq[:, 1:] = valid[:, 1:] & valid[:, :-1] & (s_[:, 1:] == s_[:, :-1]) & (e_[:, 1:] == e_[:, :-1])
        shrink = np.cumsum(eq, axis=1)
        top_blk = block_of[np.arange(n), np.maximum(top, 0)]
        cap = np.maximum((be[top_blk] - bs[top_blk]) // 1000 - 1, 0)
        shrink = np.minimum(shrink, cap[:, None])
        hit = valid & (shrink > 0)
        be[block_of[hit]] -= 1000 * shrink[hit]
        self.arrays.setdefault(TID_NAME_SCOPE, []).append(
            (bs, be, np.concatenate(b_name).astype(np.int32), np.concatenate(b_src)))
        return common

    def metadata_display(self, name: str, default: str) -> str:
        """GetOrCreateEventMetadata(name): an existing metadata keeps its display name."""
        cache = getattr(self, "_md_display", None)
        if cache is None:
            r = self.b.r
            cache = self._md_display = {n: d for p, n, d in zip(r.em_plane.tolist(), r.em_name, r.em_display_name)
                                        if p == self.plane}
        d = cache.get(name)
        return d if d else default

    def offload_candidates(self, rows: np.ndarray) -> np.ndarray:
        r = self.b.r
        md = self.b.ev_md[rows]
        flag = np.zeros(len(r.em_name) + 1, bool)
        for m, (n, d) in enumerate(zip(r.em_name, r.em_display_name)):
            shown = d or n
            if HOST_MEMORY_LABEL in n and any(k in shown for k in OFFLOAD_KEYWORDS):
                flag[m] = True
        return flag[md]


U64 = (1 << 64) - 1


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


class _DerivedLine:
    """DerivedXLineBuilder: per nesting level, the last event, expanded while ops continue it."""

    def __init__(self, dev: _DeviceLines, tid: int) -> None:
        self.dev, self.tid = dev, tid
        self.events: list[list] = dev.new_events.setdefault(tid, [])  # [start, end, name, source]
        self.last: list[tuple[list, int | None, object] | None] = []  # per level: (event, group, key)
        self.dependents: list[_DerivedLine] = []

    def expand_or_add(self, name: int, level: int, s: int, e: int, g: int | None, source: int,
                      key: object = None) -> None:
        """key: the event's metadata identity (its full tf_op for Framework Ops), else its name."""
        key = name if key is None else key
        while len(self.last) <= level:
            self.last.append(None)
        cur = self.last[level]
        if cur is not None:
            ev, cg, ck = cur
            if ck == key and cg == g and (g is not None or ev[1] + 2 * (ev[1] - ev[0]) >= s):
                ev[0], ev[1] = min(ev[0], s), max(ev[1], e)
                return
        self.reset(level)
        ev = [s, e, name, source]
        self.events.append(ev)
        self.last[level] = (ev, g, key)

    def expand_or_add_levels(self, names: list[int], s: int, e: int, g: int | None, source: int) -> None:
        for level, name in enumerate(names):
            self.expand_or_add(name, level, s, e, g, source)
        self.reset(len(names))

    def reset(self, level: int) -> None:
        self.adjust_durations(level)
        for i in range(level, len(self.last)):
            self.last[i] = None
        if level == 0:
            for d in self.dependents:
                d.reset(0)

    def adjust_durations(self, level: int) -> None:
        """Stacked events with equal spans: shrink each deeper one by 1 ns more (XProf does)."""
        if level >= len(self.last) or self.last[level] is None:
            return
        top = level
        while top + 1 < len(self.last) and self.last[top + 1] is not None:
            top += 1
        if top <= level:
            return
        stack = [cur[0] for cur in self.last[level:top + 1] if cur is not None]  # all set (the loop above)
        t_ev = stack[-1]
        max_shrink_ns = (t_ev[1] - t_ev[0]) // 1000 - 1
        shrink = 0
        prev = None
        for ev in stack:
            span = (ev[0], ev[1])
            if shrink < max_shrink_ns and prev == span:
                shrink += 1
            prev = span
            if shrink:
                ev[1] = span[1] - 1000 * shrink

    def flush(self) -> None:
        pass


class _OffloadRows:
    """HostOffloadEventProcessor: pair copy-start/-done ops and pack them onto rows."""

    def __init__(self, dev: _DeviceLines) -> None:
        self.dev = dev
        self.pending: dict[str, list[int]] = {}
        self.frontier: list[int] = []

    def add(self, row: int) -> None:
        b = self.dev.b
        r = b.r
        md = int(b.ev_md[row])
        shown = r.em_display_name[md] or r.em_name[md]
        label = offload_name(shown)
        queue = self.pending.setdefault(label, [])
        if "-start" in shown:
            queue.append(row)
            return
        if "-done" not in shown or not queue:
            return
        first = queue.pop(0)
        s = int(b.start[first])
        e = int(b.start[row] + b.dur[row])
        pick, best = -1, s
        for i, fr in enumerate(self.frontier):
            if fr <= best:
                pick, best = i, fr
        if pick == -1:
            if len(self.frontier) < MAX_OFFLOAD_ROWS:
                self.frontier.append(e)
            pick = len(self.frontier) - 1
        self.frontier[pick] = max(self.frontier[pick], e)
        tid = TID_OFFLOAD_FIRST + pick
        self.dev.new_events.setdefault(tid, []).append([s, e, b.names.id(label), first])


def _scatter_stats(vals: pl.DataFrame, tf: np.ndarray, src: np.ndarray, asy: np.ndarray, pos: np.ndarray) -> None:
    """Write tf_op / source text ids and the async flag of long-form stats `vals` at `pos`."""
    name = vals["stat_name"].to_numpy()
    tid = vals["text_id"].to_numpy()
    flag = vals["int"].fill_null(vals["uint"].cast(pl.Int64, strict=False)).fill_null(0).to_numpy() != 0
    for stat, target, value in (("tf_op", tf, tid), ("source", src, tid), ("_a", asy, flag)):
        sel = name == stat
        target[pos[sel]] = value[sel]


def _string_keys(text_ids: np.ndarray, texts: list[str]) -> np.ndarray:
    """Text ids -> ids that are equal exactly when the strings are (a text may repeat)."""
    uniq, inv = np.unique(text_ids, return_inverse=True)
    index: dict[str, int] = {}
    canon = np.array([index.setdefault(texts[t], len(index)) for t in uniq.tolist()], np.int64)
    return canon[inv]


def offload_name(op: str) -> str:
    """`copy-start.3` -> `offload-copy.3` (GetOffloadInstructionName)."""
    parts = op.split(".")
    ident = parts[-1] if len(parts) >= 2 else "0"
    for marker in ("-start", "-done"):
        pos = op.find(marker)
        if pos != -1:
            return f"offload-{op[:pos]}.{ident}"
    return f"offload-{op}.{ident}"


_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")


def parse_tf_op(full: str) -> tuple[list[str], str, bool]:
    """(name scopes, Framework Ops event name, is TF/JAX) of a `tf_op` (ParseTfOpFullname)."""
    parts = full.split(":", 1)
    if len(parts) != 2:
        return [], full.rstrip(), False
    name, typ = parts
    if name == "Iterator":
        return [], "Iterator::" + full.split("::")[-1], False
    if _TF_NAME.fullmatch(name) and _TF_TYPE.fullmatch(typ):
        return name.split("/")[:-1], typ, True
    op_type = typ if typ else _derive_op_type(name)
    if _JAX_TYPE.fullmatch(op_type):
        return name.split("/")[:-1], op_type.split("[", 1)[0], True
    if not typ:
        return name.split("/")[:-1], op_type, True
    return [], full.rstrip(), False


def _derive_op_type(full_op_name: str) -> str:
    op_name = full_op_name.split("/")[-1]
    suffix = op_name.split("_")[-1]
    try:
        int(suffix)
    except ValueError:
        return op_name
    return op_name[: len(op_name) - len(suffix) - 1]


def _join(parts, dtype) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype)
    if len(parts) == 1:
        return np.asarray(parts[0]).astype(dtype, copy=False)
    return np.concatenate(parts, dtype=dtype, casting="unsafe")
