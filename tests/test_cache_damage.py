"""A damaged cache entry is rebuilt on the next run (it failed on every run, or gave wrong
answers, before), and entries are written durably: every file fsynced, the manifest last."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
from conftest import PROFILES

from tputui.data import cache_entry, entry_seal
from tputui.data.cache import cache_root, load_frame
from tputui.data.logdir import open_logdir
from tputui.data.raw import validate


def wait_for_cache_writes():
    for t in threading.enumerate():
        if t.name == "tputui-cache-write":
            t.join()


@pytest.fixture
def cached():
    """(host file, its cache entry folder, the frame decoded straight from the file)."""
    return make_cached()


def make_cached():
    hf = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0].hosts[0]
    load_frame(hf)
    wait_for_cache_writes()
    frames = os.path.join(cache_root(), "frames")
    (name,) = os.listdir(frames)
    return hf, os.path.join(frames, name), load_frame(hf, use_cache=False)


def same_frame(a, b) -> bool:
    return (a.events.equals(b.events) and a.event_metadata.equals(b.event_metadata)
            and a.planes.equals(b.planes) and a.raw.blobs == b.raw.blobs and a.raw.strings == b.raw.strings
            and a.stat_values("metadata", "flops").equals(b.stat_values("metadata", "flops")))


def save_npy(entry, name, array):
    np.save(os.path.join(entry, name), array)


def edit_json(entry, name, change):
    path = os.path.join(entry, name)
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def refresh_manifest(entry):
    """A hand edit that also fixes up the sizes in the manifest: only the content checks are left."""
    edit_json(entry, cache_entry.MANIFEST, lambda m: m.update(files={
        e.name: entry_seal.file_record(e.path) for e in os.scandir(entry) if e.name != cache_entry.MANIFEST}))


def truncate(entry, name, size=0):
    os.truncate(os.path.join(entry, name), size)


DAMAGE = {
    # What a crash or power loss without fsync leaves: a 0-byte column (raised EOFError forever).
    "empty column": lambda e: truncate(e, "event_line.npy"),
    "no manifest": lambda e: os.unlink(os.path.join(e, cache_entry.MANIFEST)),
    "manifest not json": lambda e: open(os.path.join(e, cache_entry.MANIFEST), "w").write("{"),
    "old format": lambda e: edit_json(e, cache_entry.MANIFEST, lambda m: m["meta"].update(format=1)),
    "missing column": lambda e: os.unlink(os.path.join(e, "line_id.npy")),
    "truncated blobs.bin": lambda e: truncate(e, "blobs.bin", 100),  # silently wrong answers before
    "strings not an object": lambda e: open(os.path.join(e, "strings.json"), "w").write("[1, 2]"),
}
# The same-size edits a manifest cannot see, and edits that fix up the manifest too.
CONTENT_DAMAGE = {
    "wrong json types": lambda e: edit_json(e, "strings.json", lambda t: t.update(em_name=[1] * len(t["em_name"]))),
    "short plane_name": lambda e: edit_json(e, "strings.json", lambda t: t["plane_name"].pop()),  # wrong answers
    "event_line out of range": lambda e: save_npy(e, "event_line.npy", np.full(
        len(np.load(os.path.join(e, "event_line.npy"))), 10**6, np.int32)),
    "negative plane index": lambda e: save_npy(e, "line_plane.npy", -np.ones(
        len(np.load(os.path.join(e, "line_plane.npy"))), np.int32)),
    "short event column": lambda e: save_npy(e, "event_duration_ps.npy", np.load(
        os.path.join(e, "event_duration_ps.npy"))[:-1]),
    "wrong dtype": lambda e: save_npy(e, "line_id.npy", np.load(os.path.join(e, "line_id.npy")).astype(np.int32)),
    "huge blob size": lambda e: save_npy(e, "blob_sizes.npy", np.full(
        len(np.load(os.path.join(e, "blob_sizes.npy"))), 1 << 60, np.int64)),
    "string index out of range": lambda e: save_npy(e, "event_stats.kind.npy", np.full(
        len(np.load(os.path.join(e, "event_stats.kind.npy"))), 4, np.uint8)),
    "object array": lambda e: save_npy(e, "line_timestamp_ns.npy", np.array([object()], dtype=object)),
}


@pytest.mark.parametrize("damage", list(DAMAGE) + list(CONTENT_DAMAGE))
def test_a_damaged_entry_is_rebuilt_on_the_next_run(cached, damage):
    hf, entry, fresh = cached
    (DAMAGE.get(damage) or CONTENT_DAMAGE[damage])(entry)
    if damage in CONTENT_DAMAGE:
        refresh_manifest(entry)
    with pytest.raises(cache_entry.DamagedEntry):
        cache_entry.load(entry)
    frame = load_frame(hf)  # no error: the profile is decoded again
    assert same_frame(frame, fresh)
    wait_for_cache_writes()
    rebuilt = cache_entry.load(entry)  # a whole entry again, read from disk
    validate(rebuilt)
    assert isinstance(rebuilt.event_line, np.memmap)
    assert same_frame(load_frame(hf), fresh)


def test_both_decoders_output_passes_validation():
    from tputui.data import wire
    from tputui.data.raw import decode_with_protobuf

    for path in sorted(PROFILES.rglob("*.xplane.pb")):
        data = path.read_bytes()
        validate(wire.decode(data))
        validate(decode_with_protobuf(data))


def test_every_file_is_fsynced_before_the_rename_and_the_manifest_is_last(cached, tmp_path, monkeypatch):
    hf, _, fresh = cached
    events = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def rename(src, dst):
        events.append(("rename", src))
        real_rename(src, dst)

    monkeypatch.setattr(cache_entry.os, "fsync", fsync)
    monkeypatch.setattr(cache_entry.os, "rename", rename)
    target = tmp_path / "frames" / "entry"
    cache_entry.save(fresh.raw, str(target))
    monkeypatch.undo()
    names = sorted(os.listdir(target))
    (rename_at,) = [i for i, e in enumerate(events) if e[0] == "rename"]
    tmp = events[rename_at][1]
    synced = [os.path.relpath(p, tmp) for kind, p in events[:rename_at] if kind == "fsync"]
    assert sorted(s for s in synced if s != ".") == names  # every file, before the rename
    assert synced[-2:] == [cache_entry.MANIFEST, "."]  # the manifest last, then the folder itself
    assert events[rename_at + 1:] == [("fsync", str(target.parent))]  # and the rename made durable
    assert same_frame(cache_entry_frame(str(target)), fresh)


def cache_entry_frame(path):
    from tputui.data.xspace import XSpaceFrame

    return XSpaceFrame(cache_entry.load(path))


def test_a_big_entry_samples_its_big_columns_and_a_full_check_reads_them_all(monkeypatch):
    """Above ENTRY_FULL_BYTES an open checks big files by sampled blocks (damage in a sample is
    caught, damage between samples only by the full check that the op-stats map asks for)."""
    monkeypatch.setattr(entry_seal, "ENTRY_FULL_BYTES", 0)  # the fixture's entry as a big one
    monkeypatch.setattr(entry_seal, "FILE_FULL_BYTES", 200 << 10)
    monkeypatch.setattr(entry_seal, "EDGE_BYTES", 4 << 10)
    hf, entry, fresh = make_cached()
    big = max(os.scandir(entry), key=lambda e: e.stat().st_size)
    assert big.stat().st_size > 200 << 10 and big.name.endswith(".npy")
    ranges = entry_seal._ranges(big.stat().st_size)
    between = ranges[1][1] + 8  # a byte in no sampled range
    assert not any(a <= between < b for a, b in ranges)
    with open(big.path, "r+b") as f:
        f.seek(between)
        b = f.read(1)
        f.seek(between)
        f.write(bytes([b[0] ^ 0xFF]))
    cache_entry.load(entry)  # sampled: not seen (the cost of a cheap open)
    with pytest.raises(cache_entry.DamagedEntry):
        cache_entry.load(entry, full=True)
    frame = load_frame(hf, full_check=True)  # what the op-stats map asks for: decoded again
    assert same_frame(frame, fresh)
    wait_for_cache_writes()
    at = ranges[5][0] + 1  # a byte in a sampled block
    with open(os.path.join(entry, big.name), "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(cache_entry.DamagedEntry):
        cache_entry.load(entry)
    assert same_frame(load_frame(hf), fresh)


def test_the_op_stats_map_asks_for_the_full_check(monkeypatch):
    """In a worker (map_host_file) and in this process (a one-host run's frame, kept for the
    other tools), the map's frame comes from a fully checked cache entry."""
    from tputui.analysis import host_map
    from tputui.data import cache, run_data

    seen = []
    real = cache.load_frame

    def spy(hf, *a, **kw):
        seen.append(kw.get("full_check"))
        return real(hf, *a, **kw)

    monkeypatch.setattr(host_map, "load_frame", spy)
    monkeypatch.setattr(cache, "load_frame", spy)  # RunData imports it when it first decodes
    logdir = open_logdir(str(PROFILES / "tpu_v6e_inference"))
    host_map.map_host_file(logdir.runs[0].hosts[0])
    assert seen == [True]
    host_map.host_op_stats(run_data.RunData(logdir.runs[0], jobs=1))
    assert seen == [True, True]


def test_checking_a_big_column_in_full_keeps_memory_to_a_buffer(tmp_path):
    """A giant host's map keeps its memory to a piece: the full check of a 512 MB column (sparse
    here) reads it through one small buffer, never maps it whole (peak RSS of the process)."""
    import subprocess
    import sys

    code = ("import resource, sys; from tputui.data import entry_seal; "
            "entry_seal.seal(sys.argv[1]); entry_seal.check(sys.argv[1], full=True); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")

    def peak_kb(size: int) -> int:
        folder = tmp_path / f"entry{size}"
        folder.mkdir()
        with open(folder / "event_offset_ps.npy", "wb") as f:
            f.truncate(size)
        out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    # Against the same check of a 1 MB column: the process's own imports are not the check's.
    grew = peak_kb(512 << 20) - peak_kb(1 << 20)
    assert grew < 32 * 1024, f"peak RSS {grew / 1024:.0f} MB more for a 512 MB column"
