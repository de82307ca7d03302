"""Issue 32's damage matrix: every kind of cache entry damaged every way a disk, a killed writer
or a copy damages files (truncated to 0 or to half, 4 KB zeroed mid-file, bytes flipped, bytes
appended); the same exports run twice more must print exactly what the clean run printed, exit 0.

Per kind, the entries above it (which would answer before it is read) are removed before each
run, so the damaged entry is the one read. TPUTUI_DAMAGE_REPORT=FILE appends one JSON line per
case (kind, file, damage, per run: "ok" / "wrong" / "failed") for the before / after table.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import threading

import pytest
from conftest import PROFILES

from tputui.analysis import trace_cache
from tputui.cli import main
from tputui.data import entry_seal
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.storage import cache_root

LOGDIR = str(PROFILES / "jax_mlp")
MODULE = "jit_train_step(32)"
OVERVIEW = ("export", LOGDIR, "--tool", "overview_page", "--format", "json")
FRAMEWORK = ("export", LOGDIR, "--tool", "framework_op_stats", "--format", "csv")
TRACE = ("export", LOGDIR, "--tool", "trace_viewer", "--format", "json")
GRAPH = ("export", LOGDIR, "--tool", "graph_viewer", "--module", MODULE, "--format", "text")


def entry_kind(name: str) -> str | None:
    if name.startswith(".tmp-"):
        return None
    if name.endswith(".export"):
        return "export"
    if name.endswith(".opstats"):
        return "op_stats"
    if ".trace" in name:
        return "trace"
    return "frame"


# kind -> (the exports that read it, the files of its entry damaged (patterns), kinds answering before it)
KINDS = {
    "export": ((OVERVIEW, TRACE), ("out.zst", "notes.json", "manifest.json"), ()),
    "frame": ((OVERVIEW, GRAPH), ("em_id.npy", "event_line.npy", "event_duration_ps.npy", "blobs.bin", "manifest.json"),
              ("export", "op_stats", "trace")),
    "op_stats": ((OVERVIEW, FRAMEWORK), ("tree.json", "blobs.bin", "manifest.json"), ("export",)),
    "trace": ((TRACE,), ("L1.start.npy", "L1.events.npy", "start.npy", "index.json", "manifest.json"), ("export",)),
}


def _zero_4k(path: str) -> None:
    n = os.path.getsize(path)
    at = max(0, n // 2 - 2048)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(bytes(min(4096, n - at)))


def _flip(path: str) -> None:
    n = os.path.getsize(path)
    with open(path, "r+b") as f:
        for at in {n // 3, n // 2, (2 * n) // 3}:
            f.seek(at)
            b = f.read(1)
            if b:
                f.seek(at)
                f.write(bytes([b[0] ^ 0xFF]))


DAMAGE = {
    "truncated to 0": lambda p: os.truncate(p, 0),
    "truncated to half": lambda p: os.truncate(p, os.path.getsize(p) // 2),
    "4 KB zeroed": _zero_4k,
    "bytes flipped": _flip,
    "bytes appended": lambda p: open(p, "ab").write(b"\x01tputui" * 512),
}


def frames_dir() -> str:
    return os.path.join(cache_root(), "frames")


def entries(kind: str) -> list[str]:
    d = frames_dir()
    return sorted(os.path.join(d, n) for n in os.listdir(d) if entry_kind(n) == kind) if os.path.isdir(d) else []


def wait_for_writes() -> None:
    for t in threading.enumerate():
        if t.name.startswith("tputui-cache-write") or t.name == "tputui-export-cache":
            t.join()


def run(capsysbinary, argv) -> tuple[str, int | None, str, str]:
    capsysbinary.readouterr()
    try:
        code = main(list(argv))
    except BaseException as e:  # noqa: BLE001 - a traceback is a failure outcome, recorded
        out, err = capsysbinary.readouterr()
        return "raised", None, out, f"{type(e).__name__}: {e}"
    finally:
        wait_for_writes()
    out, err = capsysbinary.readouterr()
    return "returned", code, out, err


def build_trace_index() -> None:
    rd = RunData(open_logdir(LOGDIR).runs[0])
    first = trace_cache.open_index(rd, None)
    trace_cache.finish_index(rd, None, first)


def cases():
    for kind, (_, files, _) in KINDS.items():
        for pattern in files:
            for damage in DAMAGE:
                yield pytest.param(kind, pattern, damage, id=f"{kind}-{pattern}-{damage}")


def damage_and_rerun(capsysbinary, kind: str, pattern: str, damage: str) -> list[str]:
    """A clean run, the damage, then the exports twice more: each later run "ok", "wrong" or "failed"."""
    exports, _, above = KINDS[kind]
    clean = [run(capsysbinary, argv) for argv in exports]
    assert all(c[:2] == ("returned", 0) for c in clean), clean
    if kind == "trace":
        build_trace_index()
        wait_for_writes()
    damaged = entries(kind)
    assert damaged
    for entry in damaged:  # the export kind has one entry per export
        names = [n for n in os.listdir(entry) if fnmatch.fnmatch(n, pattern)]
        assert names, (entry, os.listdir(entry))
        for name in names:
            DAMAGE[damage](os.path.join(entry, name))
    outcomes = []
    for _ in range(2):
        for k in above:
            for e in entries(k):
                shutil.rmtree(e)
        for argv, want in zip(exports, clean):
            got = run(capsysbinary, argv)
            if got[:2] != ("returned", 0):
                outcomes.append("failed")
            elif got[2:] != want[2:]:
                outcomes.append("wrong")
            else:
                outcomes.append("ok")
    return outcomes


@pytest.mark.parametrize("kind,pattern,damage", list(cases()))
def test_a_damaged_entry_never_answers(capsysbinary, kind, pattern, damage):
    outcomes = damage_and_rerun(capsysbinary, kind, pattern, damage)
    report = os.environ.get("TPUTUI_DAMAGE_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(json.dumps({"kind": kind, "file": pattern, "damage": damage, "runs": outcomes}) + "\n")
    assert outcomes == ["ok"] * len(outcomes)
    # Replaced, not only avoided: the entry read again is whole (the export of a trace does not
    # save the trace viewer's index: the next trace viewer open does).
    rebuilt = entries(kind)
    assert rebuilt or kind == "trace"
    for entry in rebuilt:
        entry_seal.check(entry, full=True)


@pytest.mark.parametrize("kind,pattern,damage", [
    ("export", "out.zst", "bytes flipped"), ("frame", "blobs.bin", "bytes flipped"),
    ("trace", "start.npy", "bytes flipped")])
# (op_stats is not here: since the op stats grew the step grouping and the tool facts, the three
# bytes flipped land in fields jax_mlp's overview does not show, so the harness cannot show it.)
def test_without_the_checksums_the_same_damage_is_answered(capsysbinary, monkeypatch, kind, pattern, damage):
    """The harness itself: with the checksums not compared (sizes still are), these damages give
    wrong output or fail, so the matrix above tests the checks and reads the entries it damages."""
    monkeypatch.setattr(entry_seal, "_crcs", lambda fd, size, sampled: (-2, -2))
    monkeypatch.setattr(entry_seal, "seal", _seal_without_crcs)
    monkeypatch.setattr(entry_seal, "expect_crc", lambda *a: None)
    outcomes = damage_and_rerun(capsysbinary, kind, pattern, damage)
    assert set(outcomes) - {"ok"}, outcomes


def _seal_without_crcs(folder, meta=None):
    files = {e.name: [e.stat().st_size, -2, -2] for e in os.scandir(folder) if e.name != entry_seal.MANIFEST}
    with open(os.path.join(folder, entry_seal.MANIFEST), "w") as f:
        json.dump({"meta": meta or {}, "files": files}, f)
