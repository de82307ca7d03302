"""The trace viewer's index on disk, and the two passes that open it.

A host's final TraceIndex (every event, exact nesting, the level-of-detail pyramid) is written
beside its decoded frame: `<cache root>/frames/<frame key>.trace<INDEX_VERSION>-<tputui
version hash>/`, one .npy per array (memory-mapped on load) and `index.json` for the names,
tracks and sections. Keyed like the frame (path, size, mtime), so a changed file, a new index
format or a new tputui version builds it again; written to a temp dir and renamed (atomic); it
sits in the frames dir, so the frames' LRU prune (`TPUTUI_CACHE_MAX_GB`) covers it.

Opening (`open_index`): the index from disk when there is one (complete: nothing left to do);
else the first pass, a quick index of the raw events only (no derived TPU lines, nesting by
open-event count; on a device profile, without the host threads' events, its `deferred`
sections), drawn at once. `finish_index` (a worker, after the first frame) builds the
final index, keeps it with the frame and saves it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import polars as pl

import tputui
from tputui.analysis import host_map, host_pieces, map_pool, trace_pieces
from tputui.analysis.event_grouping import HostGrouping
from tputui.analysis.host_map import known_grouping
from tputui.analysis.trace import Level, Section, TraceIndex, Track, known_index, remember_index
from tputui.analysis.trace_counters import CounterTable
from tputui.analysis.trace_events import HOST_PID, TraceEvents, trace_events
from tputui.analysis.trace_flows import FlowTable
from tputui.data import entry_seal
from tputui.data.cache import cache_key, cache_root
from tputui.data.cache_folder import prune, temp_prefix
from tputui.data.code_stamp import code_stamp
from tputui.data.files import atomic_dir
from tputui.data.heap import release_free_memory
from tputui.data.run_data import RunData
from tputui.errors import UserError

INDEX_VERSION = 3  # 2: flow links and counter tracks; 3: a manifest with checksums (entry_seal)
_ARRAYS = ("start", "end", "cover", "name", "source", "kind", "ev_row", "event_row", "row_count", "row_first",
           "row_track", "row_depth", "name_hash")
_FLOW_ARRAYS = ("src", "dst", "kind", "category", "flow_id")
_COUNTER_ARRAYS = ("pid", "series", "t_ps", "value", "first", "count")
_LEVEL_ARRAYS = ("start", "end", "rep", "first_event", "events", "row_first", "row_count")

Progress = Callable[[str], None] | None


# --- the two passes ----------------------------------------------------------------------
def open_index(run: RunData, host: str | None, progress: Progress = None) -> TraceIndex:
    """The host's index to draw first: the final one from the disk cache (or this process),
    else the quick first pass over the raw events (`partial`; see finish_index)."""
    hf = run.host_file(host)
    entry = entry_path(run, host)
    if entry is not None:
        ix = load_index(entry)
        if isinstance(ix, trace_pieces.PiecedIndex):
            ix.host_file = hf
            return ix
        if ix is not None:
            ix.frame_loader = lambda: run.frame(host)
            return ix
    if in_pieces(run, host):
        coarse = _coarse_index(run, host, progress)
        if coarse is not None:
            return coarse
    frame = run.frame(host)
    ix = known_index(frame)
    if ix is not None and ix.complete:
        return ix
    if progress:
        progress(f"first pass over {hf.host}'s events ({frame.num_events:,})")
    ev = trace_events(frame, derived=False, grouping=known_grouping(run, host))
    on_host = ev.pid == HOST_PID
    # The first screen shows the devices: host threads (most of a TPU profile's events) come with
    # the final index, unless there is nothing else to show.
    keep = np.flatnonzero(~on_host) if on_host.any() and not on_host.all() else None
    if keep is not None:
        span = int(ev.start_ps.min()), int((ev.start_ps + ev.duration_ps).max())  # the view opens on all of it
        ev = TraceEvents(pid=ev.pid[keep], tid=ev.tid[keep], start_ps=ev.start_ps[keep],
                         duration_ps=ev.duration_ps[keep], name=ev.name[keep], source=ev.source[keep],
                         kind=ev.kind[keep], names=ev.names, processes=ev.processes, threads=ev.threads,
                         frame=ev.frame, counters=ev.counters)
    ix = TraceIndex(ev, progress, exact=False)
    ix.partial = True
    ix._events = None  # finish_index starts again from the frame: don't hold the raw events meanwhile
    if keep is not None:
        ix.ev_row = keep[ix.ev_row].astype(ix.ev_row.dtype)  # rows of the full events, as the final index has
        ix.t_min, ix.t_max = min(ix.t_min, span[0]), max(ix.t_max, span[1])
        ix.deferred = tuple(k for k, sec in enumerate(ix.sections) if sec.pid == HOST_PID)
        for k in ix.deferred:
            ix.sections[k].name += " (loading in the background)"
    return ix


def finish_index(run: RunData, host: str | None, first: TraceIndex, progress: Progress = None) -> TraceIndex:
    """The final index (derived lines, exact nesting, pyramid), saved to the disk cache and
    returned read back from it (memory-mapped: the built arrays are freed), or kept with the
    frame when it cannot be saved; `first` itself when it already is final."""
    if first.complete:
        return first
    if first.coarse:
        pieced = pieced_index(run, host, progress)
        if pieced is not None:
            return pieced
    frame = run.frame(host)
    if first.partial:
        if progress:
            progress(f"all events, derived lines too ({frame.num_events:,} in the file)")
        ix = TraceIndex(trace_events(frame, grouping=known_grouping(run, host)), progress, exact=True)
    else:
        ix = first.refined(progress)
    ix.build_pyramid(progress)
    entry = entry_path(run, host)
    if entry is not None:
        if progress:
            progress("saving the index for the next open")
        try:
            save_index(ix, entry)
            prune(os.path.dirname(entry), keep=entry)
        except OSError:
            pass  # a read-only or full cache dir must not stop the user from reading a profile
        saved = load_index(entry)
        if saved is not None:
            saved._frame = frame
            return saved
    remember_index(frame, ix)
    return ix


def in_pieces(run: RunData, host: str | None) -> bool:
    """Whether the host is a giant one the trace viewer reads in pieces (no whole-host frame)."""
    hf = run.host_file(host)
    return not run.has_frame(hf.host) and _in_pieces(hf)


def _in_pieces(hf) -> bool:
    try:
        return bool(host_pieces.plan(hf))
    except UserError:
        return False  # read whole: that path says what is wrong with the file


def _coarse_index(run: RunData, host: str | None, progress: Progress) -> TraceIndex | None:
    """A giant host's first frame: its devices' small lines (trace_pieces.coarse_frame), drawn
    while finish_index builds the host's index piece by piece."""
    hf = run.host_file(host)
    if progress:
        progress(f"first pass over {hf.host}'s device steps and modules")
    frame = trace_pieces.coarse_frame(hf)
    if frame is None:
        return None
    ev = trace_events(frame, derived=False, grouping=known_grouping(run, host) or HostGrouping.empty(), piece=True)
    ix = TraceIndex(ev, progress, exact=False)
    ix.partial, ix.coarse = True, True
    ix._events = None
    return ix


def final_index(run: RunData, host: str | None, progress: Progress = None) -> TraceIndex:
    """The host's complete index: the saved one, else built (piece by piece on a giant host)."""
    first = open_index(run, host, progress)
    return finish_index(run, host, first, progress)


def pieced_index(run: RunData, host: str | None, progress: Progress = None) -> TraceIndex | None:
    """A giant host's final index built piece by piece (trace_pieces.py) and read back from disk
    (memory-mapped), or None when the host is read whole (host_pieces.plan)."""
    hf = run.host_file(host)
    try:
        pieces = host_pieces.plan(hf)
    except UserError:
        return None  # read whole: that path says what is wrong with the file
    if not pieces:
        return None
    report = progress or (lambda msg: None)
    grouping = known_grouping(run, host)
    if grouping is None:
        report("op stats first: the host's step groups name the trace's steps")
        grouping = host_map.host_op_stats(run, host, progress)[0].grouping
    entry = entry_path(run, host)
    parent = os.path.dirname(entry) if entry is not None else tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    scratch = trace_pieces.piece_folder(parent)
    # Workers build the pieces; this process (an app, perhaps, with a run loaded) only composes.
    lanes = min(run.jobs or map_pool.default_jobs(), len(pieces))
    pool: ProcessPoolExecutor | None = map_pool.take(lanes)
    try:
        infos = []
        for info in host_map.pieces_in_lanes(pool, lanes, pieces, trace_pieces.build_piece, (hf,), (grouping, scratch),
                                             f"the worker process building a piece of host {hf.host}'s trace died; "
                                             "building it again here", trace_pieces.memory_estimate, here=False):
            infos.append(info)
            report(f"trace pieces: {len(infos)}/{len(pieces)} built ({100 * len(infos) // len(pieces)}%)")
        if pool is not None:  # its workers' memory goes before the index is composed
            pool.shutdown(wait=True)
            pool = None
        place = {trace_pieces.piece_of(i["piece"]): i for i in infos}
        infos = [place[p] for p in pieces]  # in the plan's order: the file's
        target = entry if entry is not None else os.path.join(scratch, "index")
        with atomic_dir(target, temp_prefix()) as tmp:
            meta = trace_pieces.compose(infos, grouping, tmp, report)
            meta.update(version=INDEX_VERSION, processes=meta["processes"])
            with open(os.path.join(tmp, "index.json"), "w", encoding="utf-8") as f:
                json.dump(meta, f)
            report("sealing the index (checksums)")
            entry_seal.seal(tmp, {"version": INDEX_VERSION})
        trace_pieces.remove_scratch(scratch, keep=target)
        if entry is not None:
            prune(os.path.dirname(entry), keep=entry)
        ix = load_index(target)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if entry is None:
            shutil.rmtree(scratch, ignore_errors=True)  # mapped arrays outlive their unlinked files
        else:
            trace_pieces.remove(scratch)
    release_free_memory()  # composing held flows and tracks' slices: give the heap back (an app keeps running)
    if ix is None:
        raise UserError(f"could not read back the trace index just built for {hf.host}")
    assert isinstance(ix, trace_pieces.PiecedIndex)
    ix.host_file = hf
    return ix


def cached_events(run: RunData, host: str | None) -> TraceEvents | None:
    """The host's trace viewer events from a saved index (no decode), or None when none is saved."""
    entry = entry_path(run, host)
    ix = load_index(entry, full=True) if entry is not None else None  # every array is read: checked in full
    return events_of(ix) if ix is not None else None


# --- the disk format ---------------------------------------------------------------------
def entry_path(run: RunData, host: str | None) -> str | None:
    """Where the host's index lives in the cache; None with --no-cache or an unkeyable file."""
    if not run.use_cache:
        return None
    key = cache_key(run.host_file(host), None)
    if key is None:
        return None
    version = hashlib.sha1(f"{tputui.__version__}\0{code_stamp()}".encode()).hexdigest()[:8]
    return os.path.join(cache_root(), "frames", f"{key}.trace{INDEX_VERSION}-{version}")


def save_index(ix: TraceIndex, path: str) -> None:
    """Write a complete index as a cache entry at `path` (atomically; an existing one wins)."""
    if not ix.complete:
        raise ValueError("only a complete trace index is saved")
    # cover = end unless some row has overlapping events: then it is not written twice.
    cover_is_end = ix.cover is ix.end or np.array_equal(ix.cover, ix.end)
    with atomic_dir(path, temp_prefix()) as tmp:
        for name in _ARRAYS:
            if not (name == "cover" and cover_is_end):
                np.save(os.path.join(tmp, f"{name}.npy"), getattr(ix, name))
        for k, lv in enumerate(ix.levels[1:], 1):
            for name in _LEVEL_ARRAYS:
                np.save(os.path.join(tmp, f"L{k}.{name}.npy"), getattr(lv, name))
        for name in _FLOW_ARRAYS:
            np.save(os.path.join(tmp, f"flow.{name}.npy"), getattr(ix.flows, name))
        for name in _COUNTER_ARRAYS:
            np.save(os.path.join(tmp, f"counter.{name}.npy"), getattr(ix.counters, name))
        meta = {
            "version": INDEX_VERSION, "cover_is_end": cover_is_end, "names": ix.names,
            "num_rows": ix.num_rows, "num_events": ix.num_events,
            "t_min": ix.t_min, "t_max": ix.t_max, "gaps": [lv.gap for lv in ix.levels[1:]],
            "tracks": [[t.pid, t.tid, t.name, t.section, t.first_row, t.num_rows] for t in ix.tracks],
            "sections": [[s.pid, s.name, s.tracks] for s in ix.sections],
            "processes": [[p, n] for p, n in ix.processes.items()],
            "threads": [list(r) for r in ix.threads.iter_rows()],
            "counter_names": ix.counters.names,
        }
        with open(os.path.join(tmp, "index.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f)
        entry_seal.seal(tmp, {"version": INDEX_VERSION})  # last: sizes and checksums of every file


def load_index(path: str, full: bool = False) -> TraceIndex | None:
    """A saved index (arrays memory-mapped), or None when there is none or it is damaged (it is
    then removed). Checked in full when small or `full` (a caller reading every array), else
    its big arrays by sampled blocks (entry_seal): the viewer reads only what it draws."""
    if not os.path.isdir(path):
        return None
    try:
        entry_seal.check(path, full=full)
        with open(os.path.join(path, "index.json"), encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("version") != INDEX_VERSION:
            return None
        arr = {n: np.load(os.path.join(path, f"{n}.npy"), mmap_mode="r") for n in _ARRAYS
               if not (n == "cover" and meta.get("cover_is_end"))}
        arr.setdefault("cover", arr["end"])
        levels = [Level(gap, *(np.load(os.path.join(path, f"L{k}.{n}.npy"), mmap_mode="r") for n in _LEVEL_ARRAYS))
                  for k, gap in enumerate(meta["gaps"], 1)]
        flows = FlowTable(*(np.load(os.path.join(path, f"flow.{n}.npy"), mmap_mode="r") for n in _FLOW_ARRAYS))
        counters = CounterTable(list(meta["counter_names"]),
                                *(np.load(os.path.join(path, f"counter.{n}.npy")) for n in _COUNTER_ARRAYS))
        os.utime(path)  # recently used, for the LRU prune
        ix = _index_of(meta, arr, levels, flows, counters)
        if "pieces" in meta:  # built piece by piece: an event's details come from its piece
            ix = trace_pieces.as_pieced(ix, meta)
    except Exception:  # noqa: BLE001 - damaged (or another build's): this open builds it again
        shutil.rmtree(path, ignore_errors=True)
        return None
    return ix


def _index_of(meta: dict, arr: dict, levels: list[Level], flows: FlowTable, counters: CounterTable) -> TraceIndex:
    ix = TraceIndex.__new__(TraceIndex)
    ix.__dict__.update(arr)
    ix.names = meta["names"]
    ix.num_rows, ix.num_events = int(meta["num_rows"]), int(meta["num_events"])
    ix.t_min, ix.t_max = int(meta["t_min"]), int(meta["t_max"])
    ix.tracks = [Track(*t) for t in meta["tracks"]]
    ix.sections = [Section(p, n, list(t)) for p, n, t in meta["sections"]]
    ix.processes = {int(p): n for p, n in meta["processes"]}
    ix.threads = pl.DataFrame(meta["threads"], schema={"pid": pl.UInt32, "tid": pl.UInt32, "name": pl.String},
                              orient="row")
    ix.flows, ix.counters = flows, counters
    ix.exact = True
    ix.init_state(None)
    ix.levels = [ix.level0()] + levels
    ix.pyramid_ready = True
    return ix


def events_of(ix: TraceIndex) -> TraceEvents:
    """The TraceEvents an index was built from, in their own order (ev_row inverted)."""
    n = ix.num_events
    order = np.empty(n, np.int64)
    order[np.asarray(ix.ev_row)] = np.arange(n)
    track_pid = np.array([t.pid for t in ix.tracks], np.uint32)
    track_tid = np.array([t.tid for t in ix.tracks], np.uint32)
    track = np.asarray(ix.row_track)[np.asarray(ix.event_row)[order]]
    start = np.asarray(ix.start)[order]
    procs = pl.DataFrame({"pid": list(ix.processes), "name": list(ix.processes.values())},
                         schema={"pid": pl.UInt32, "name": pl.String})
    return TraceEvents(pid=track_pid[track], tid=track_tid[track], start_ps=start,
                       duration_ps=np.asarray(ix.end)[order] - start, name=np.asarray(ix.name)[order],
                       source=np.asarray(ix.source)[order].astype(np.int64), kind=np.asarray(ix.kind)[order],
                       names=ix.names, processes=procs, threads=ix.threads, frame=None,
                       counters=ix.counters, flows=ix.flows.remap(np.asarray(ix.ev_row, np.int64)))
