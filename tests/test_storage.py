"""Storage: listing that survives symlink loops, reads checked before they cost memory.

Hang guards are subprocess timeouts (a regression fails instead of hanging the suite), not
timing asserts; memory is measured in a child process as the growth of its peak RSS.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import PROFILES, ROOT

from tputui.data import storage
from tputui.data.logdir import LogdirError, open_logdir
from tputui.data.runs import HostFile

RUN = "2026_11_22_12_58_33"


def mlp_logdir(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(PROFILES / "jax_mlp", logdir)
    return logdir


def cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "tputui.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


# --- listing ---------------------------------------------------------------------------------

def test_two_links_to_the_logdir_itself_list_the_run_once(tmp_path):
    """`ln -s . a; ln -s . b` made discovery walk ~2^40 paths; now each folder is visited once."""
    logdir = mlp_logdir(tmp_path)
    (logdir / "a").symlink_to(".")
    (logdir / "b").symlink_to(".")
    (logdir / "plugins" / "profile" / RUN / "up").symlink_to("../../..")  # a loop deeper down too
    proc = cli("export", str(logdir), "--list", "--no-cache")  # the timeout is the hang guard
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert [(r["run"], r["hosts"]) for r in runs] == [(RUN, ["vm"])]
    assert runs[0]["path"] == str(logdir / "plugins" / "profile" / RUN)  # the direct path, not via a link


def test_listing_visits_each_real_folder_once(tmp_path, monkeypatch):
    logdir = mlp_logdir(tmp_path)
    for name in "abc":
        (logdir / name).symlink_to(".")
    folders = [p for p in logdir.rglob("*") if p.is_dir() and not p.is_symlink()] + [logdir]
    visited = []
    real_scandir = os.scandir
    monkeypatch.setattr(storage.os, "scandir", lambda p: visited.append(p) or real_scandir(p))
    files = storage.list_profiles(str(logdir))
    monkeypatch.undo()
    assert [os.path.basename(f[0]) for f in files] == ["vm.xplane.pb"]
    assert sorted(visited) == sorted(map(str, folders))  # every real folder once; the links lead to seen ones


def test_links_to_folders_outside_the_logdir_are_followed(tmp_path):
    outside = mlp_logdir(tmp_path)
    logdir = tmp_path / "view"
    logdir.mkdir()
    (logdir / "mlp").symlink_to(outside)
    (logdir / "again").symlink_to(outside)  # the same target twice: listed once
    (logdir / "dangling").symlink_to(tmp_path / "missing")
    runs = open_logdir(str(logdir)).runs
    assert len(runs) == 1 and runs[0].name in (f"mlp/{RUN}", f"again/{RUN}")
    assert [h.host for h in runs[0].hosts] == ["vm"]


# --- reads -----------------------------------------------------------------------------------

def host(tmp_path, name="h.xplane.pb", size=None, content=b""):
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True, exist_ok=True)
    path = run / name
    with open(path, "wb") as f:
        f.write(content)
        if size is not None:
            f.truncate(size)  # sparse: costs no disk
    return open_logdir(str(tmp_path)).runs[0].hosts[0]


def one_line(excinfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text
    return text


def test_xplane_pb_over_2_gib_is_refused_from_its_size(tmp_path):
    hf = host(tmp_path, size=3 << 30)
    with pytest.raises(LogdirError) as e:
        storage.read(hf)
    assert one_line(e) == (f"{hf.path}: 3.0 GiB is more than an .xplane.pb can hold (2 GiB); "
                           "profiles that big are written as .xplane.riegeli")


@pytest.mark.parametrize("content,size,why", [
    (b"", None, "empty file (0 bytes; the capture wrote nothing)"),
    (b"", 1 << 30, "truncated or corrupt XSpace: it starts with zero bytes (a sparse or damaged file)"),
    (b"\x1f\x8b\x08\x00", None, "gzip-compressed (gunzip it first)"),
    (b"\x83\xaf\x70\xd1\x0d\x88\x4a\x3f", None, "a Riegeli file named .xplane.pb (rename it to *.xplane.riegeli)"),
    (b"\xff" * 12, None, "truncated or corrupt XSpace: its first bytes cannot start a protobuf message"),
    (b"\x0f\x01", None, "truncated or corrupt XSpace: its first bytes cannot start a protobuf message"),  # wire 7
])
def test_first_bytes_are_checked(tmp_path, content, size, why):
    hf = host(tmp_path, content=content, size=size)
    with pytest.raises(LogdirError) as e:
        storage.read(hf)
    assert one_line(e) == f"{hf.path}: {why}"


def test_local_read_is_a_memory_map_with_the_same_bytes():
    hf = open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0]
    data = storage.read(hf)
    assert not isinstance(data, bytes) and len(data) == hf.size
    with open(hf.path, "rb") as f:
        assert data[:] == f.read()


def test_a_file_removed_after_listing_is_one_line(tmp_path):
    hf = host(tmp_path, content=b"\x22\x01h")
    os.unlink(hf.path)
    with pytest.raises(LogdirError) as e:
        storage.read(hf)
    assert one_line(e) == f"{hf.path}: no longer exists (removed since the logdir was opened)"


def test_riegeli_files_must_start_with_the_signature(tmp_path):
    hf = HostFile("h", str(tmp_path / "h.xplane.riegeli"), 4, 0.0, "riegeli")
    (tmp_path / "h.xplane.riegeli").write_bytes(b"\x0a\x00\x00\x00")
    with pytest.raises(LogdirError, match="not a Riegeli file"):
        storage.read(hf)


# Peak RSS growth of a child that imports everything first, then asks for a frame.
MEMORY_PROBE = r"""
import json, resource, sys
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.errors import UserError
import tputui.data.xspace, tputui.data.wire
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    RunData(open_logdir(sys.argv[1]).runs[0], use_cache=False).frame()
    error = None
except UserError as e:
    error = str(e)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_mb": grown / 1024, "error": error}))
"""


def probe(logdir) -> dict:
    proc = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(logdir)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("head,size,error", [
    (b"", 3 << 30, "more than an .xplane.pb can hold"),  # refused from its size
    (b"", (2 << 30) - 1, "starts with zero bytes"),  # just under the limit: refused from its first bytes
    # A plane that claims 1.9 GB, then zeros: the decoder reads from the map and stops at the
    # first bad key instead of the whole file being read into memory first.
    (b"\x0a\x80\x80\x80\x80\x07", 1900 << 20, "field number 0 at byte 6"),
])
def test_a_huge_bad_file_costs_under_100_mb(tmp_path, head, size, error):
    host(tmp_path, content=head, size=size)
    out = probe(tmp_path)
    assert error in out["error"]
    assert out["grown_mb"] < 100  # the bound; it was the file's size (3.1 GB) before


def test_a_file_system_that_cannot_map_is_read_instead(monkeypatch):
    """Some FUSE mounts refuse mmap (ENODEV): the bytes are read, with the same result."""
    hf = open_logdir(str(PROFILES / "jax_mlp")).runs[0].hosts[0]

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")

    monkeypatch.setattr(storage.mmap, "mmap", refuse)
    data = storage.read(hf)
    assert isinstance(data, bytes) and len(data) == hf.size
