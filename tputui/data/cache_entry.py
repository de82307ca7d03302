"""One decoded frame on disk: written durably, read back only when it checks out.

An entry is a folder: one .npy per raw column (memory-mapped on load, so a warm open reads
only what a tool touches), the string tables in strings.json, byte blobs (HLO protos) in
blobs.bin with their sizes in blob_sizes.npy, and manifest.json, written last by
`entry_seal.seal`: every file's size and CRC-32 (every file fsynced before it, the folder
renamed into place after it), so a crash or power loss leaves either no entry or a whole one.
A load checks the manifest (format, files, sizes, checksums: in full for an entry up to
entry_seal.ENTRY_FULL_BYTES, sampled for the big columns of a bigger one unless `full`;
blobs.bin, read whole anyway, always in full), then the content (dtypes, lengths, every row
index in range: `raw.validate`); anything off raises `DamagedEntry` and the caller decodes the
profile again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import zlib
from typing import Any

import numpy as np

from tputui.data import entry_seal
from tputui.data.cache_folder import private_dir, temp_prefix
from tputui.data.entry_seal import MANIFEST, DamagedEntry
from tputui.data.raw import RawXSpace, StatColumns, validate
from tputui.data.runs import HostFile, path_bytes
from tputui.data.xspace import PlaneSelector

# 2: manifest.json, fsync before rename; 3: big columns may be streamed in (riegeli merge);
# 4: checksums in the manifest (entry_seal)
FORMAT_VERSION = 4
_FIELDS = {f.name: f.type for f in dataclasses.fields(RawXSpace)}
_STAT_PARTS = ("owner", "stat", "kind", "value")
__all__ = ["MANIFEST", "DamagedEntry", "FORMAT_VERSION", "save", "load", "new_folder", "column_paths"]


def _write(folder: str, name: str, write) -> None:
    with open(os.path.join(folder, name), "wb") as f:
        write(f)  # fsynced by entry_seal.seal, with the files a merge streamed in


def _fsync_path(path: str) -> None:
    """fsync a file or a folder by its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def new_folder(parent: str) -> str:
    """A folder to build an entry in (`save(..., folder=)` completes it; prune() leaves it alone)."""
    private_dir(parent)
    return tempfile.mkdtemp(dir=parent, prefix=temp_prefix())


def column_paths(folder: str) -> dict[str, str]:
    """Where the event and event-stat columns of an entry built in `folder` go (riegeli_columns
    names: metadata_id, ..., line, es.owner, ...): a merge streams them in before `save`."""
    paths = {k: os.path.join(folder, f"event_{k}.npy")
             for k in ("metadata_id", "offset_ps", "num_occurrences", "duration_ps")}
    paths["line"] = os.path.join(folder, "event_line.npy")
    paths.update({f"es.{p}": os.path.join(folder, f"event_stats.{p}.npy") for p in _STAT_PARTS})
    return paths


def save(raw: RawXSpace, path: str, folder: str | None = None) -> None:
    """Write `raw` as the entry `path`, durably and atomically (an entry already there wins).
    `folder` (from new_folder): where some columns were already written (they are kept, not
    written again, and fsynced like the rest); the folder is used up either way."""
    parent = os.path.dirname(path)
    tmp = folder or new_folder(parent)
    try:
        texts = {}
        present = set(os.listdir(tmp))
        for name, typ in _FIELDS.items():
            value = getattr(raw, name)
            if typ == "np.ndarray" and f"{name}.npy" not in present:
                _write(tmp, f"{name}.npy", lambda f, v=value: np.save(f, v))
            elif typ == "StatColumns":
                for part in _STAT_PARTS:
                    column = getattr(value, part)
                    if f"{name}.{part}.npy" not in present:
                        _write(tmp, f"{name}.{part}.npy", lambda f, v=column: np.save(f, v))
            elif typ == "list[str]":
                texts[name] = value
        _write(tmp, "blobs.bin", lambda f: f.writelines(raw.blobs))
        sizes = np.array([len(b) for b in raw.blobs], np.int64)
        _write(tmp, "blob_sizes.npy", lambda f: np.save(f, sizes))
        _write(tmp, "strings.json", lambda f: f.write(json.dumps(texts).encode()))
        entry_seal.seal(tmp, {"format": FORMAT_VERSION})  # last: marks it whole
        try:
            os.rename(tmp, path)
        except OSError:  # another process wrote the same entry first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
            return
        _fsync_path(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load(path: str, full: bool = False) -> RawXSpace:
    """Read the entry `path` (numeric columns memory-mapped); DamagedEntry unless it checks out.
    `full`: every byte checked, however big the entry (a caller about to read it all)."""
    try:
        raw = _load_checked(path, full)
        validate(raw)
    except DamagedEntry:
        raise
    except Exception as e:  # noqa: BLE001 - any failure to read our own cache means: decode again
        raise DamagedEntry(f"{path}: {type(e).__name__}: {e}") from None
    return raw


def _load_checked(path: str, full: bool = False) -> RawXSpace:
    manifest = entry_seal.check(path, full=full, skip=frozenset({"blobs.bin"}))
    if manifest["meta"].get("format") != FORMAT_VERSION:
        raise DamagedEntry(f"{path}: another cache format")
    files = {name: rec[0] for name, rec in manifest["files"].items()}
    with open(os.path.join(path, "strings.json"), encoding="utf-8") as f:
        texts = json.load(f)
    if not isinstance(texts, dict):
        raise DamagedEntry(f"{path}: strings.json is not an object")
    sizes = np.load(os.path.join(path, "blob_sizes.npy"))
    if sizes.dtype != np.int64 or sizes.ndim != 1 or (len(sizes) and sizes.min() < 0) \
            or int(sizes.sum()) != files["blobs.bin"]:
        raise DamagedEntry(f"{path}: blob sizes do not add up to blobs.bin")
    blobs, crc = [], 0
    with open(os.path.join(path, "blobs.bin"), "rb") as f:
        for n in sizes.tolist():
            blobs.append(f.read(n))
            crc = zlib.crc32(blobs[-1], crc)
    entry_seal.expect_crc(manifest, "blobs.bin", sum(map(len, blobs)), crc)  # read whole anyway: checked in full
    kw: dict[str, Any] = {"blobs": blobs}
    for name, typ in _FIELDS.items():
        if typ == "np.ndarray":
            kw[name] = np.load(os.path.join(path, f"{name}.npy"), mmap_mode="r")
        elif typ == "StatColumns":
            kw[name] = StatColumns(*(np.load(os.path.join(path, f"{name}.{p}.npy"), mmap_mode="r")
                                     for p in _STAT_PARTS))
        elif typ == "list[str]":
            kw[name] = texts[name]
    return RawXSpace(**kw)


def cache_key(hf: HostFile, planes: PlaneSelector) -> str | None:
    """The cache key of a host file's frame (its planes' selection): path, size, mtime and this
    format's version. Here, beside the format, so cache.py and decode_notes.py both read it."""
    if callable(planes):
        return None  # an arbitrary predicate has no stable key
    sel = "all" if planes is None else "|".join(sorted(planes))
    ident = f"v{FORMAT_VERSION}\0{hf.path}\0{hf.size}\0{hf.mtime!r}\0{sel}"
    return hashlib.sha1(path_bytes(ident)).hexdigest()
