"""The decode cache: same frame warm as cold, keyed by size+mtime, never in the logdir."""
from __future__ import annotations

import os
import shutil
import threading

import numpy as np
from conftest import PROFILES

from tputui.data.cache import cache_root, load_frame
from tputui.data.logdir import open_logdir


def wait_for_cache_writes():
    for t in threading.enumerate():
        if t.name == "tputui-cache-write":
            t.join()


def snapshot_tree(path):
    return sorted((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*"))


def test_warm_frame_equals_cold_and_logdir_untouched(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(PROFILES / "tpu_v6e_inference", logdir)
    before = snapshot_tree(logdir)
    hf = open_logdir(str(logdir)).runs[0].hosts[0]
    cold = load_frame(hf)
    wait_for_cache_writes()
    entries = os.listdir(os.path.join(cache_root(), "frames"))
    assert len(entries) == 1
    warm = load_frame(hf)
    assert isinstance(warm.raw.event_offset_ps, np.memmap)  # really read from the cache
    assert warm.events.equals(cold.events)
    assert warm.event_metadata.equals(cold.event_metadata)
    assert warm.stat_values("metadata", "flops").equals(cold.stat_values("metadata", "flops"))
    assert warm.raw.blobs == cold.raw.blobs and len(warm.raw.blobs) > 0  # HLO protos survive
    assert snapshot_tree(logdir) == before


def test_changed_file_is_decoded_again(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(PROFILES / "jax_mlp", logdir)
    hf = open_logdir(str(logdir)).runs[0].hosts[0]
    original = load_frame(hf).num_events
    wait_for_cache_writes()
    other = next((PROFILES / "jax_two_runs").rglob("*.xplane.pb"))
    shutil.copy(other, hf.path)  # new size and mtime -> a new key
    hf2 = open_logdir(str(logdir)).runs[0].hosts[0]
    expected = load_frame(hf2, use_cache=False).num_events
    assert expected != original
    assert load_frame(hf2).num_events == expected
    wait_for_cache_writes()
    assert len(os.listdir(os.path.join(cache_root(), "frames"))) == 2


def test_no_cache_writes_nothing():
    hf = open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0]
    load_frame(hf, use_cache=False)
    wait_for_cache_writes()
    assert not os.path.exists(os.path.join(cache_root(), "frames"))


def test_prune_drops_least_recently_used_entries(tmp_path):
    from tputui.data.cache import prune

    frames = tmp_path / "frames"
    for i, name in enumerate(["old", "mid", "new"]):
        d = frames / name
        d.mkdir(parents=True)
        (d / "x.npy").write_bytes(b"\0" * 1000)
        os.utime(d, (1000 + i, 1000 + i))
    assert prune(str(frames), keep=str(frames / "old"), limit=2500) == [str(frames / "mid")]
    assert sorted(os.listdir(frames)) == ["new", "old"]
    assert prune(str(frames), limit=5000) == []


def test_reading_an_entry_marks_it_used(tmp_path):
    hf = open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0]
    load_frame(hf)
    wait_for_cache_writes()
    frames = os.path.join(cache_root(), "frames")
    entry = os.path.join(frames, os.listdir(frames)[0])
    os.utime(entry, (1, 1))
    load_frame(hf)
    assert os.stat(entry).st_mtime > 1
