"""Every cache entry checks itself: a manifest of its files' sizes and checksums, written last.

`seal(folder)` fsyncs each file of a finished entry folder, then writes `manifest.json` naming
every file with its size and CRC-32 (zlib's: stdlib, ~2.3 GB/s here), then fsyncs the folder.
`check(folder)` raises DamagedEntry unless the folder holds exactly those files at those sizes
and their bytes check out. Any damage (a full disk, a writer killed on a filesystem without
atomic rename, a copy between machines, a hand edit) then means "remove it and compute again",
never an answer and never an error that stays.

How much is read on open: an entry of up to ENTRY_FULL_BYTES (every op-stats entry, export
entry and fixture, a host file of up to ~25 MB) is checked in full, <= ~30 ms. In a bigger
entry (the mapped columns of a 1-3 GB host: GBs, where a full check would cost seconds on
every warm open that otherwise reads only what a tool touches), files up to FILE_FULL_BYTES
are checked in full and bigger ones by their sizes and the CRC of sampled blocks (the first and
last 64 KiB, which hold the .npy header, and 64 blocks of 4 KiB spread evenly: ~0.4 MiB read
per file); `check(..., full=True)` checks them in full where a caller reads them all anyway
(the op-stats map's frame, the trace export's index; blobs and export output are read whole
and always checked in full). A bigger entry's damage between the samples can thus reach a view
that reads only part of it (the trace viewer, a frame tool), never a derived entry.
"""
from __future__ import annotations

import json
import os
import zlib
from typing import Any

MANIFEST = "manifest.json"
ENTRY_FULL_BYTES = 64 << 20
FILE_FULL_BYTES = 4 << 20
EDGE_BYTES = 64 << 10
BLOCK_BYTES = 4 << 10
BLOCKS = 64
_STEP = 1 << 20  # files are read for their CRC in pieces of this size (a buffer that stays in cache)


class DamagedEntry(Exception):
    """A cache entry that is incomplete, of another format, or whose bytes do not check out."""


def _ranges(size: int) -> list[tuple[int, int]]:
    """The byte ranges the sampled CRC covers (the whole file when it is small)."""
    if size <= FILE_FULL_BYTES:
        return [(0, size)]
    inner = size - 2 * EDGE_BYTES
    step = inner // BLOCKS
    return ([(0, EDGE_BYTES)] + [(EDGE_BYTES + i * step, EDGE_BYTES + i * step + BLOCK_BYTES) for i in range(BLOCKS)]
            + [(size - EDGE_BYTES, size)])


def _crcs(fd: int, size: int, sampled: bool) -> tuple[int, int | None]:
    """(CRC-32 of the whole file or -1 when not computed, CRC-32 of its sampled ranges). Read
    through one reused buffer, not mapped: checking a GB column costs no GB of resident pages
    (a giant host's map keeps its memory to a piece)."""
    buf = bytearray(min(size, _STEP))
    view = memoryview(buf)
    sample = 0
    for a, b in _ranges(size):
        for at in range(a, b, _STEP):
            n = os.preadv(fd, [view[:min(_STEP, b - at)]], at)
            sample = zlib.crc32(view[:n], sample)
    if sampled:
        return -1, sample
    if size <= FILE_FULL_BYTES:
        return sample, sample  # the one range was the whole file
    whole = 0
    for at in range(0, size, _STEP):
        n = os.preadv(fd, [view[:min(_STEP, size - at)]], at)
        whole = zlib.crc32(view[:n], whole)
    return whole, sample


def file_record(path: str, sync: bool = True) -> list[int]:
    """[size, CRC-32 of the file, CRC-32 of its sampled ranges] (fsynced first when `sync`)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if sync:
            os.fsync(fd)
        size = os.fstat(fd).st_size
        whole, sample = _crcs(fd, size, sampled=False)
        return [size, whole, sample if sample is not None else whole]
    finally:
        os.close(fd)


def seal(folder: str, meta: dict[str, Any] | None = None) -> None:
    """Write the manifest of the finished entry `folder` (every file fsynced first; the
    manifest last, then the folder itself): what `check` holds the entry to."""
    files = {e.name: file_record(e.path) for e in sorted(os.scandir(folder), key=lambda e: e.name)
             if e.is_file() and e.name != MANIFEST}
    doc = {"meta": meta or {}, "files": files}
    with open(os.path.join(folder, MANIFEST), "wb") as f:
        f.write(json.dumps(doc).encode())
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_manifest(folder: str) -> dict[str, Any]:
    try:
        with open(os.path.join(folder, MANIFEST), "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError) as e:
        raise DamagedEntry(f"{folder}: no readable manifest ({type(e).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict) or not isinstance(doc.get("meta"), dict):
        raise DamagedEntry(f"{folder}: not a manifest")
    return doc


def check(folder: str, full: bool = False, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The entry's manifest ({"meta": ..., "files": ...}), once its files check out (see the
    module doc for how much is read); DamagedEntry otherwise. `skip`: files whose bytes the
    caller reads whole anyway and checks with `expect_crc`; their sizes are checked here."""
    doc = read_manifest(folder)
    files: dict[str, Any] = doc["files"]
    present = {e.name: e.stat().st_size for e in os.scandir(folder) if e.name != MANIFEST}
    if set(present) != set(files):
        raise DamagedEntry(f"{folder}: other files than the manifest names")
    total = 0
    for name, rec in files.items():
        if not (isinstance(rec, list) and len(rec) == 3 and all(type(x) is int for x in rec)):
            raise DamagedEntry(f"{folder}: manifest entry of {name} is not [size, crc, sample crc]")
        if present[name] != rec[0]:
            raise DamagedEntry(f"{folder}/{name}: {present[name]} bytes, the manifest says {rec[0]}")
        total += rec[0]
    full = full or total <= ENTRY_FULL_BYTES
    for name, (size, whole, sample) in files.items():
        if name in skip:
            continue
        fd = os.open(os.path.join(folder, name), os.O_RDONLY)
        try:
            sampled = not full and size > FILE_FULL_BYTES
            got_whole, got_sample = _crcs(fd, size, sampled)
        finally:
            os.close(fd)
        if (got_sample != sample) if sampled else (got_whole != whole):
            raise DamagedEntry(f"{folder}/{name}: checksum differs")
    return doc


def expect_crc(manifest: dict[str, Any], name: str, size: int, crc: int) -> None:
    """DamagedEntry unless a skipped file's bytes, as the caller read them (`size` bytes of
    CRC-32 `crc`, e.g. zlib.crc32 chained over its pieces), are what was sealed."""
    want_size, whole, _ = manifest["files"][name]
    if size != want_size or crc != whole:
        raise DamagedEntry(f"{name}: checksum differs")
