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
    from tputui.data.cache_folder import prune

    frames = tmp_path / "frames"
    for i, name in enumerate(["old", "mid", "new"]):
        d = frames / name
        d.mkdir(parents=True)
        (d / "x.npy").write_bytes(b"\0" * 1000)
        os.utime(d, (1000 + i, 1000 + i))
    assert prune(str(frames), keep=str(frames / "old"), limit=2500) == [str(frames / "mid")]
    assert sorted(os.listdir(frames)) == ["new", "old"]
    assert prune(str(frames), limit=5000) == []


def test_prune_keeps_the_kept_entrys_host(tmp_path):
    """A giant host's trace index bigger than the cap does not push out that host's op stats."""
    from tputui.data.cache_folder import prune

    frames = tmp_path / "frames"
    for i, name in enumerate(["abc.opstats", "other", "abc.trace3-x"]):
        d = frames / name
        d.mkdir(parents=True)
        (d / "x.npy").write_bytes(b"\0" * (5000 if name.startswith("abc.trace") else 1000))
        os.utime(d, (1000 + i, 1000 + i))
    assert prune(str(frames), keep=str(frames / "abc.trace3-x"), limit=2500) == [str(frames / "other")]
    assert sorted(os.listdir(frames)) == ["abc.opstats", "abc.trace3-x"]


def test_reading_an_entry_marks_it_used(tmp_path):
    hf = open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0]
    load_frame(hf)
    wait_for_cache_writes()
    frames = os.path.join(cache_root(), "frames")
    entry = os.path.join(frames, os.listdir(frames)[0])
    os.utime(entry, (1, 1))
    load_frame(hf)
    assert os.stat(entry).st_mtime > 1


def test_prefetch_and_frame_share_one_decode(tmp_path, monkeypatch):
    """RunData.prefetch() decodes in a thread; a frame() call meanwhile waits for that decode
    instead of starting its own, and gets the same frame object."""
    from tputui.data.run_data import RunData

    calls = []
    gate = threading.Event()
    from tputui.data import cache as cache_module

    real = cache_module.load_frame  # RunData imports it when it first decodes

    def slow_load(*a, **k):
        calls.append(threading.current_thread().name)
        gate.wait(10)
        return real(*a, **k)

    monkeypatch.setattr(cache_module, "load_frame", slow_load)
    run = RunData(open_logdir(str(PROFILES / "tf_keras")).run(None))
    run.prefetch()
    for _ in range(200):  # until the prefetch thread is inside load_frame
        if calls:
            break
        threading.Event().wait(0.01)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(run.frame()))
    waiter.start()
    gate.set()
    waiter.join(30)
    assert calls == ["tputui-prefetch"] and got and got[0] is run.frame()


def test_prefetch_of_a_broken_file_leaves_the_error_to_frame(tmp_path):
    from tputui.data.run_data import RunData
    from tputui.errors import UserError

    run_dir = tmp_path / "plugins" / "profile" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "h.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f")  # a truncated plane
    run = RunData(open_logdir(str(tmp_path)).run(None), use_cache=False)
    run.prefetch()
    try:
        run.frame()
    except UserError as e:
        assert "h.xplane.pb" in str(e)
    else:
        raise AssertionError("no error for a truncated file")


def test_the_cache_writer_is_waited_for_even_when_a_daemon_thread_decoded(tmp_path, monkeypatch):
    """The export's prefetch decodes on a daemon thread; the entry's writer it starts must not
    inherit that (a daemon is not waited for at exit: the entry was lost when the process ended
    first)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    hf = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0].hosts[0]
    seen: list[bool] = []

    def decode() -> None:
        load_frame(hf)
        seen.extend(t.daemon for t in threading.enumerate() if t.name == "tputui-cache-write")

    t = threading.Thread(target=decode, daemon=True)
    t.start()
    t.join()
    assert seen and not any(seen)  # (an earlier test's writer may still run too)
    for w in threading.enumerate():
        if w.name == "tputui-cache-write":
            w.join()
