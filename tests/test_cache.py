"""The decode cache: same frame warm as cold, keyed by size+mtime, never in the logdir."""
from __future__ import annotations

import json
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


def test_a_one_shot_command_leaves_its_entry_to_a_detached_writer(tmp_path, monkeypatch):
    """`tputui export` (the console entry) hands the frame's cache entry to a forked writer: the
    command's output is whole, the writer finishes the entry after it, and the next command
    reads that entry and prints the same bytes."""
    import subprocess
    import sys

    from tputui.data.cache import WRITERS_LOCK, wait_for_writers

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    logdir = str(PROFILES / "tf_keras")
    run = ("import sys; from tputui.cli import entry; "
           f"sys.argv = ['tputui', 'export', {logdir!r}, '--tool', 'framework_op_stats']; sys.exit(entry())")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    frames = os.path.join(cache_root(), "frames")
    assert os.path.exists(os.path.join(frames, WRITERS_LOCK))  # a detached writer ran
    assert wait_for_writers(timeout=60)
    entries = [e for e in os.listdir(frames) if not e.startswith(".") and "." not in e]  # not .opstats
    assert entries and all(os.path.isfile(os.path.join(frames, e, "manifest.json")) for e in entries)
    second = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0 and second.stdout == first.stdout and json.loads(first.stdout)
