"""atomic_open / atomic_dir: a reader sees the old file (entry) or the new one, never half of one, and no temp remains."""
from __future__ import annotations

import pathlib
import threading

import pytest

from tputui.data.files import atomic_open


def test_replaces_on_success_and_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_open(str(target)) as f:
            f.write(b"half")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]
    with atomic_open(str(target), "w", encoding="utf-8") as f:
        f.write("new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_open_failure_leaves_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_open(str(tmp_path / "missing" / "out.bin")):
            pass
    assert list(tmp_path.iterdir()) == []


def test_the_data_is_fsynced_before_the_rename(tmp_path, monkeypatch):
    import os

    from tputui.data import files

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    me = threading.get_ident()  # not a cache-write thread an earlier test left running

    def fsync(fd):
        if threading.get_ident() == me:
            events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", lambda a, b: (threading.get_ident() == me and events.append(("replace", a)))
                        or real_replace(a, b))
    target = tmp_path / "out.bin"
    with atomic_open(str(target)) as f:
        f.write(b"new")
    monkeypatch.undo()
    assert [kind for kind, _ in events] == ["fsync", "replace"] and events[0][1] == events[1][1]  # the temp file
    assert target.read_bytes() == b"new"


def test_atomic_dir_renames_on_success_keeps_an_existing_one_and_cleans_up(tmp_path):
    from tputui.data.files import atomic_dir

    target = tmp_path / "entries" / "one"
    with atomic_dir(str(target)) as d:
        (pathlib.Path(d) / "a").write_text("first")
        assert not target.exists()  # nobody sees the entry half written
    assert (target / "a").read_text() == "first"
    with atomic_dir(str(target)) as d:  # a second writer: the first entry stays
        (pathlib.Path(d) / "a").write_text("second")
    assert (target / "a").read_text() == "first"
    with pytest.raises(RuntimeError), atomic_dir(str(tmp_path / "entries" / "two")):
        raise RuntimeError("failed half way")
    assert sorted(p.name for p in (tmp_path / "entries").iterdir()) == ["one"]  # no temp dir left
