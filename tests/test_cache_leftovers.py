"""Leftovers in the cache (issue #33 item 8): a temp folder whose writer was killed is pruned at
the next prune, however recent; folders being written count against the cache cap; the trace
index is fsynced before it is renamed into place."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import PROFILES

from tputui.data import cache_entry
from tputui.data.cache_folder import prune

MB = 1 << 20


def test_a_killed_writers_temp_folder_is_pruned_at_once(tmp_path):
    frames = tmp_path / "frames"
    code = ("import os, signal, sys\nfrom tputui.data import cache_entry\n"
            "folder = cache_entry.new_folder(sys.argv[1])\n"
            "open(os.path.join(folder, 'event_offset_ps.npy'), 'wb').write(bytes(1 << 20))\n"
            "print(folder, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    p = subprocess.run([sys.executable, "-c", code, str(frames)], capture_output=True, text=True, timeout=120)
    assert p.returncode == -9
    left = p.stdout.strip()
    assert os.path.isdir(left)  # a merge killed mid-way leaves its columns
    mine = cache_entry.new_folder(str(frames))  # this process is alive: its folder stays
    prune(str(frames))
    assert not os.path.exists(left) and os.path.isdir(mine)


def test_folders_being_written_count_against_the_cap(tmp_path):
    frames = tmp_path / "frames"
    old = frames / "0123abcd"
    old.mkdir(parents=True)
    (old / "manifest.json").write_bytes(bytes(MB))
    os.utime(old, (1, 1))
    building = cache_entry.new_folder(str(frames))
    with open(os.path.join(building, "event_offset_ps.npy"), "wb") as f:
        f.write(bytes(MB))
    assert prune(str(frames), limit=3 * MB // 2) == [str(old)]  # 2 MB in all: the old entry makes room
    assert os.path.isdir(building)


def test_the_trace_index_is_fsynced_before_it_is_in_place(monkeypatch):
    from tputui.analysis.trace_cache import entry_path, finish_index, open_index
    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData

    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    run = RunData(open_logdir(str(PROFILES / "jax_mlp")).runs[0])
    ix = open_index(run, None)
    monkeypatch.setattr(os, "fsync", fsync)
    finish_index(run, None, ix)
    monkeypatch.setattr(os, "fsync", real)  # (undo() would also undo the isolated cache dir)
    entry = entry_path(run, None)
    assert entry and os.path.isdir(entry)
    files = set(os.listdir(entry))
    in_tmp = [s for s in synced if os.path.basename(os.path.dirname(s)).startswith(".tmp-")]
    assert {os.path.basename(s) for s in in_tmp} >= files  # every file, before the rename
    assert os.path.dirname(entry) in synced  # the rename itself
