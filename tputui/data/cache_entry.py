"""One decoded frame on disk: written durably, read back only when it checks out.

An entry is a folder: one .npy per raw column (memory-mapped on load, so a warm open reads
only what a tool touches), the string tables in strings.json, byte blobs (HLO protos) in
blobs.bin with their sizes in blob_sizes.npy, and manifest.json, written last, naming every
file with its size. Every file is fsynced before the folder is renamed into place, so a crash
or power loss leaves either no entry or a whole one. A load checks the manifest (format,
files, sizes), then the content (dtypes, lengths, every row index in range: `raw.validate`);
anything off raises `DamagedEntry` and the caller decodes the profile again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from typing import Any

import numpy as np

from tputui.data.cache_folder import temp_prefix
from tputui.data.raw import RawXSpace, StatColumns, validate
from tputui.data.runs import HostFile, path_bytes
from tputui.data.xspace import PlaneSelector

FORMAT_VERSION = 3  # 2: manifest.json, fsync before rename; 3: big columns may be streamed in (riegeli merge)
MANIFEST = "manifest.json"
_FIELDS = {f.name: f.type for f in dataclasses.fields(RawXSpace)}
_STAT_PARTS = ("owner", "stat", "kind", "value")


class DamagedEntry(Exception):
    """A cache entry that is incomplete, of another format, or does not hold together."""


def _write(folder: str, name: str, write) -> None:
    with open(os.path.join(folder, name), "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())


def _fsync_path(path: str) -> None:
    """fsync a file or a folder by its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def new_folder(parent: str) -> str:
    """A folder to build an entry in (`save(..., folder=)` completes it; prune() leaves it alone)."""
    os.makedirs(parent, exist_ok=True)
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
        for name in sorted(present):
            _fsync_path(os.path.join(tmp, name))
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
        files = {e.name: e.stat().st_size for e in os.scandir(tmp)}
        manifest = {"format": FORMAT_VERSION, "files": files}
        _write(tmp, MANIFEST, lambda f: f.write(json.dumps(manifest).encode()))  # last: marks it whole
        _fsync_path(tmp)
        try:
            os.rename(tmp, path)
        except OSError:  # another process wrote the same entry first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
            return
        _fsync_path(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load(path: str) -> RawXSpace:
    """Read the entry `path` (numeric columns memory-mapped); DamagedEntry unless it checks out."""
    try:
        raw = _load_checked(path)
        validate(raw)
    except DamagedEntry:
        raise
    except Exception as e:  # noqa: BLE001 - any failure to read our own cache means: decode again
        raise DamagedEntry(f"{path}: {type(e).__name__}: {e}") from None
    return raw


def _load_checked(path: str) -> RawXSpace:
    with open(os.path.join(path, MANIFEST), "rb") as f:
        manifest = json.loads(f.read())
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise DamagedEntry(f"{path}: another cache format")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise DamagedEntry(f"{path}: manifest without files")
    present = {e.name: e.stat().st_size for e in os.scandir(path) if e.name != MANIFEST}
    if present != files:
        raise DamagedEntry(f"{path}: files or sizes differ from the manifest")
    with open(os.path.join(path, "strings.json"), encoding="utf-8") as f:
        texts = json.load(f)
    if not isinstance(texts, dict):
        raise DamagedEntry(f"{path}: strings.json is not an object")
    sizes = np.load(os.path.join(path, "blob_sizes.npy"))
    if sizes.dtype != np.int64 or sizes.ndim != 1 or (len(sizes) and sizes.min() < 0) \
            or int(sizes.sum()) != files["blobs.bin"]:
        raise DamagedEntry(f"{path}: blob sizes do not add up to blobs.bin")
    blobs = []
    with open(os.path.join(path, "blobs.bin"), "rb") as f:
        for n in sizes.tolist():
            blobs.append(f.read(n))
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
