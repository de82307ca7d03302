"""The trace viewer's index on disk: read back equal to the built one, keyed like the frame (a
changed file or a new version builds it again), atomic, pruned with the frames, and the export
written from it equal to the export from the decoded frame.

Oracles: the index built in this process from the real fixtures (every array equal, exactly)
and trace_events(frame) (the events an index read back gives: equal, in the same order).
"""
from __future__ import annotations

import os
import shutil
import threading

import numpy as np
import pytest
from conftest import PROFILES

from tputui.analysis import trace_cache
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_cache import (
    cached_events,
    entry_path,
    events_of,
    finish_index,
    load_index,
    open_index,
    save_index,
)
from tputui.analysis.trace_events import trace_events
from tputui.analysis.trace_export import analyze as export_analyze
from tputui.data.cache import cache_root
from tputui.data.cache_folder import prune
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

PROFILE = "tpu_v6e_inference"  # a TPU profile: derived lines, Host Offload Ops rows, overlaps


def copy_run(tmp_path, profile: str = PROFILE) -> RunData:
    """A private copy of the fixture (tests change its mtime)."""
    dst = tmp_path / "logdir"
    shutil.copytree(PROFILES / profile, dst, ignore=shutil.ignore_patterns("oracle"))
    return RunData(open_logdir(str(dst)).runs[0])


def same_index(a: TraceIndex, b: TraceIndex) -> None:
    for name in trace_cache._ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.names == b.names and a.num_rows == b.num_rows and (a.t_min, a.t_max) == (b.t_min, b.t_max)
    assert [vars(t) for t in a.tracks] == [vars(t) for t in b.tracks]
    assert [vars(s) for s in a.sections] == [vars(s) for s in b.sections]
    assert a.processes == b.processes and a.threads.equals(b.threads)
    assert [lv.gap for lv in a.levels] == [lv.gap for lv in b.levels]
    for la, lb in zip(a.levels, b.levels):
        for name in trace_cache._LEVEL_ARRAYS:
            assert np.array_equal(getattr(la, name), getattr(lb, name)), (la.gap, name)


def test_first_open_is_the_quick_pass_then_the_saved_index_is_equal(tmp_path):
    run = copy_run(tmp_path)
    first = open_index(run, None)
    assert first.partial and not first.complete
    built = finish_index(run, None, first)
    assert built.complete and built is not first and built.num_events > first.num_events
    assert isinstance(built.start, np.memmap)  # the saved copy: the built arrays are freed
    entry = entry_path(run, None)
    assert os.path.isdir(entry) and os.path.dirname(entry) == os.path.join(cache_root(), "frames")
    # A new process (a fresh RunData) opens the saved index: complete at once, nothing decoded.
    again = RunData(run.run)
    loaded = open_index(again, None)
    assert loaded.complete and not again._frames
    assert isinstance(loaded.start, np.memmap)  # really read from the cache
    same_index(built, loaded)
    # The details pane's stats load the frame on demand, and equal the built index's.
    i = int(np.flatnonzero(np.asarray(loaded.source) >= 0)[0])
    assert loaded.stats(i) == built.stats(i) and loaded.metadata_name(i) == built.metadata_name(i)
    assert again._frames  # decoded only now
    # Queries work on the memory-mapped arrays as on the built ones.
    assert loaded.search("fusion").tolist() == built.search("fusion").tolist()


def test_first_pass_of_a_device_profile_defers_the_host_threads(tmp_path):
    """The first screen shows the devices: the host threads' events (most of them) wait for the
    final index; their section is there, says so, and the view spans every event."""
    from tputui.analysis.trace_events import HOST_PID

    run = copy_run(tmp_path)
    first = open_index(run, None)
    host = [k for k, sec in enumerate(first.sections) if sec.pid == HOST_PID]
    assert first.deferred == tuple(host) and "loading" in first.sections[host[0]].name
    tracks_of = np.asarray(first.row_track)[np.asarray(first.event_row)]
    assert not np.isin(tracks_of, first.sections[host[0]].tracks).any()  # no host event yet
    final = finish_index(run, None, first)
    assert not final.deferred and final.sections[host[0]].name == "Host Threads"
    assert (first.t_min, first.t_max) == (final.t_min, final.t_max)
    # Every first-pass event is found in the final index (selections carry over).
    pos = final.positions_of(first, np.arange(first.num_events))
    assert (np.asarray(final.start)[pos] == np.asarray(first.start)).all()
    assert (np.asarray(final.name)[pos] == np.asarray(first.name)).all()


def test_events_read_back_equal_the_built_events_in_order(tmp_path):
    run = copy_run(tmp_path)
    finish_index(run, None, open_index(run, None))
    ev = cached_events(RunData(run.run), None)
    ref = trace_events(run.frame())
    assert ev is not None and len(ev) == len(ref)
    for col in ("pid", "tid", "start_ps", "duration_ps", "source", "kind"):
        assert getattr(ev, col).tolist() == getattr(ref, col).tolist(), col
    assert [ev.names[i] for i in ev.name] == [ref.names[i] for i in ref.name]
    assert ev.processes.equals(ref.processes) and ev.threads.equals(ref.threads)


def test_export_from_the_saved_index_equals_the_export_from_the_frame(tmp_path):
    run = copy_run(tmp_path)
    cold = export_analyze(run, None).to_json()
    assert cached_events(run, None) is None  # the export alone saves nothing
    finish_index(run, None, open_index(run, None))
    fresh = RunData(run.run)
    warm = export_analyze(fresh, None)
    assert not fresh._frames  # written without decoding
    assert warm.to_json() == cold
    assert warm.tables()["events"].equals(export_analyze(RunData(run.run, use_cache=False), None).tables()["events"])


def test_a_changed_file_or_a_new_version_builds_again(tmp_path, monkeypatch):
    run = copy_run(tmp_path)
    finish_index(run, None, open_index(run, None))
    old = entry_path(run, None)
    hf = run.host_file(None)
    os.utime(hf.path, (hf.mtime + 10, hf.mtime + 10))
    changed = RunData(open_logdir(str(tmp_path / "logdir")).runs[0])
    assert entry_path(changed, None) != old and open_index(changed, None).partial
    monkeypatch.setattr(trace_cache, "INDEX_VERSION", trace_cache.INDEX_VERSION + 1)
    assert entry_path(run, None) != old and open_index(RunData(run.run), None).partial
    monkeypatch.setattr("tputui.__version__", "9.9.9")
    monkeypatch.setattr(trace_cache, "INDEX_VERSION", trace_cache.INDEX_VERSION - 1)
    assert entry_path(run, None) != old


def test_no_cache_saves_nothing_and_a_damaged_entry_is_rebuilt(tmp_path):
    run = copy_run(tmp_path)
    plain = RunData(run.run, use_cache=False)
    kept = finish_index(plain, None, open_index(plain, None))
    assert kept.complete and not isinstance(kept.start, np.memmap)
    assert entry_path(plain, None) is None
    assert open_index(plain, None) is kept  # kept with the frame instead
    frames = os.path.join(cache_root(), "frames")
    assert not os.path.isdir(frames) or not any(".trace" in n for n in os.listdir(frames))
    finish_index(run, None, open_index(run, None))
    entry = entry_path(run, None)
    os.remove(os.path.join(entry, "L1.start.npy"))
    assert load_index(entry) is None and not os.path.exists(entry)  # dropped, not half-read
    assert open_index(RunData(run.run), None).partial


def test_save_is_atomic_and_keeps_an_existing_entry(tmp_path):
    run = copy_run(tmp_path)
    ix = finish_index(run, None, open_index(run, None))
    entry = entry_path(run, None)
    before = os.stat(os.path.join(entry, "index.json")).st_mtime_ns
    save_index(ix, entry)  # a second writer: the first entry stays, no temp dir is left
    for t in threading.enumerate():  # the decoded frame's own entry is written beside, in a thread
        if t.name == "tputui-cache-write":
            t.join()
    assert os.stat(os.path.join(entry, "index.json")).st_mtime_ns == before
    for t in threading.enumerate():  # the decoded frame's own entry is written beside: let it finish
        if t.name == "tputui-cache-write":
            t.join()
    assert not [n for n in os.listdir(os.path.dirname(entry)) if n.startswith(".tmp-")]
    with pytest.raises(ValueError):
        save_index(open_index(RunData(run.run, use_cache=False), None), str(tmp_path / "x"))


def test_the_frames_lru_prune_covers_saved_indexes(tmp_path):
    run = copy_run(tmp_path)
    finish_index(run, None, open_index(run, None))
    entry = entry_path(run, None)
    frames = os.path.dirname(entry)
    os.utime(entry, (1, 1))  # the oldest entry
    removed = prune(frames, limit=1)
    assert entry in removed and not os.path.exists(entry)


def test_events_of_a_built_index_are_its_events():
    from conftest import xplane

    from tputui.data.xspace import decode

    ev = trace_events(decode(xplane("jax_mlp").read_bytes()))
    back = events_of(TraceIndex(ev))
    assert back.start_ps.tolist() == ev.start_ps.tolist() and back.tid.tolist() == ev.tid.tolist()


@pytest.mark.parametrize("profile", ["jax_mlp", "tf_loop", PROFILE])
def test_saved_index_reads_back_equal_on_every_profile(tmp_path, profile):
    run = copy_run(tmp_path, profile)
    built = finish_index(run, None, open_index(run, None))
    same_index(built, load_index(entry_path(run, None)))


def test_cover_is_written_only_when_it_differs_from_the_ends(tmp_path):
    """cover (a row's running end) equals the events' ends in an exactly nested index, so it is
    not written twice; should it differ, it is written and read back."""
    from conftest import xplane

    from tputui.data.xspace import decode

    ix = TraceIndex(trace_events(decode(xplane("jax_mlp").read_bytes())))
    ix.build_pyramid()
    save_index(ix, str(tmp_path / "same"))
    assert not os.path.exists(tmp_path / "same" / "cover.npy")
    ix.cover = ix.end.copy()
    ix.cover[1] += 7  # as if an event of that row ended later
    ix.levels[0] = ix.level0()
    save_index(ix, str(tmp_path / "differs"))
    back = load_index(str(tmp_path / "differs"))
    same_index(ix, back)
    assert int(back.cover[1]) == int(ix.end[1]) + 7


def test_a_big_index_is_sampled_on_open_and_checked_in_full_when_every_array_is_read(tmp_path, monkeypatch):
    from tputui.data import entry_seal

    monkeypatch.setattr(entry_seal, "ENTRY_FULL_BYTES", 0)  # the fixture's index as a big one
    monkeypatch.setattr(entry_seal, "FILE_FULL_BYTES", 64 << 10)
    monkeypatch.setattr(entry_seal, "EDGE_BYTES", 4 << 10)
    monkeypatch.setattr(entry_seal, "BLOCK_BYTES", 256)
    run = copy_run(tmp_path)
    finish_index(run, None, open_index(run, None))
    entry = entry_path(run, None)
    path = os.path.join(entry, "start.npy")
    size = os.path.getsize(path)
    ranges = entry_seal._ranges(size)
    assert size > 64 << 10 and len(ranges) > 2
    between = ranges[1][1] + 8  # in no sampled block
    assert not any(a <= between < b for a, b in ranges)
    with open(path, "r+b") as f:
        f.seek(between)
        b = f.read(1)
        f.seek(between)
        f.write(bytes([b[0] ^ 0xFF]))
    assert load_index(entry) is not None  # the viewer's open: sampled, not seen
    assert cached_events(RunData(run.run), None) is None and not os.path.exists(entry)  # the export's: seen
    assert open_index(RunData(run.run), None).partial  # built again from the frame
