"""Decoded frames cached under the user cache dir, keyed by path + size + mtime.

`$XDG_CACHE_HOME/tputui/frames/<key>/`: one .npy per raw column (memory-mapped on load,
so a warm open reads only what a tool touches), the string tables in strings.json and
byte blobs (HLO protos) in blobs.bin. Never written inside the logdir; `--no-cache`
(use_cache=False) skips both reading and writing. Entries are written to a temp dir and
renamed, so a crash never leaves a half entry behind.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import threading

import numpy as np

from tputui.data.logdir import HostFile, LogdirError
from tputui.data.raw import RawXSpace, StatColumns
from tputui.data.xspace import DecodeError, PlaneSelector, XSpaceFrame, decode_raw

FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 2 << 30  # TPUTUI_CACHE_MAX_GB overrides; oldest-used entries go first
_FIELDS = {f.name: f.type for f in dataclasses.fields(RawXSpace)}
_STAT_PARTS = ("owner", "stat", "kind", "value")


def cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tputui")


def cache_key(hf: HostFile, planes: PlaneSelector) -> str | None:
    if callable(planes):
        return None  # an arbitrary predicate has no stable key
    sel = "all" if planes is None else "|".join(sorted(planes))
    ident = f"v{FORMAT_VERSION}\0{hf.path}\0{hf.size}\0{hf.mtime!r}\0{sel}"
    return hashlib.sha1(ident.encode()).hexdigest()


def read_bytes(hf: HostFile, progress=None) -> bytes:
    if hf.path.startswith("gs://"):
        from tputui.data import gcs

        return gcs.read_bytes(hf, progress=progress)
    try:
        with open(hf.path, "rb") as f:
            return f.read()
    except PermissionError:
        raise LogdirError(f"{hf.path}: permission denied") from None
    except IsADirectoryError:
        raise LogdirError(f"{hf.path}: is a directory, not a profile file") from None
    except OSError as e:
        raise LogdirError(f"{hf.path}: cannot read ({e.strerror or e})") from None


def save_raw(raw: RawXSpace, path: str) -> None:
    """Write `raw` as a cache entry at `path` (atomically)."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-")
    try:
        texts = {}
        for name, typ in _FIELDS.items():
            value = getattr(raw, name)
            if typ == "np.ndarray":
                np.save(os.path.join(tmp, f"{name}.npy"), value)
            elif typ == "StatColumns":
                for part in _STAT_PARTS:
                    np.save(os.path.join(tmp, f"{name}.{part}.npy"), getattr(value, part))
            elif typ == "list[str]":
                texts[name] = value
        with open(os.path.join(tmp, "blobs.bin"), "wb") as f:
            for b in raw.blobs:
                f.write(b)
        np.save(os.path.join(tmp, "blob_sizes.npy"), np.array([len(b) for b in raw.blobs], np.int64))
        with open(os.path.join(tmp, "strings.json"), "w", encoding="utf-8") as f:
            json.dump(texts, f)
        try:
            os.rename(tmp, path)
        except OSError:  # another process wrote the same entry first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_raw(path: str) -> RawXSpace:
    """Read a cache entry (numeric columns memory-mapped)."""
    with open(os.path.join(path, "strings.json"), encoding="utf-8") as f:
        texts = json.load(f)
    sizes = np.load(os.path.join(path, "blob_sizes.npy"))
    blobs = []
    with open(os.path.join(path, "blobs.bin"), "rb") as f:
        for n in sizes.tolist():
            blobs.append(f.read(n))
    kw = {"blobs": blobs}
    for name, typ in _FIELDS.items():
        if typ == "np.ndarray":
            kw[name] = np.load(os.path.join(path, f"{name}.npy"), mmap_mode="r")
        elif typ == "StatColumns":
            kw[name] = StatColumns(*(np.load(os.path.join(path, f"{name}.{p}.npy"), mmap_mode="r")
                                     for p in _STAT_PARTS))
        elif typ == "list[str]":
            kw[name] = texts[name]
    return RawXSpace(**kw)


def load_frame(hf: HostFile, planes: PlaneSelector = None, use_cache: bool = True, progress=None) -> XSpaceFrame:
    """The decoded frame of one host file, from the cache when it is fresh."""
    key = cache_key(hf, planes) if use_cache else None
    entry = os.path.join(cache_root(), "frames", key) if key else None
    if entry and os.path.isdir(entry):
        try:
            frame = XSpaceFrame(load_raw(entry))
            os.utime(entry)  # marks it recently used for pruning
            return frame
        except (OSError, ValueError, KeyError):  # a damaged entry: decode again
            shutil.rmtree(entry, ignore_errors=True)
    if hf.format == "riegeli":
        from tputui.data.riegeli_xspace import read_riegeli

        raw, skipped = read_riegeli(hf, planes, progress)
        entry = None if skipped else entry  # a damaged file is read (and warned about) each time
    else:
        data = read_bytes(hf, progress=progress)
        if progress:
            progress(f"decoding {hf.host} ({len(data) / 1e6:.1f} MB)")
        try:
            raw = decode_raw(data, planes)
        except DecodeError as e:
            raise LogdirError(f"{hf.path}: {e}") from None
        del data
    if entry:
        # Writing ~35 bytes per event costs more than decoding them: do it beside the caller.
        # Not a daemon thread, so a short-lived CLI process still finishes the entry.
        threading.Thread(target=_save_quietly, args=(raw, entry), name="tputui-cache-write").start()
    return XSpaceFrame(raw)


def _save_quietly(raw: RawXSpace, entry: str) -> None:
    try:
        save_raw(raw, entry)
        prune(os.path.dirname(entry), keep=entry)
    except OSError:
        pass  # a read-only or full cache dir must not stop the user from reading a profile


def max_cache_bytes() -> int:
    try:
        return int(float(os.environ["TPUTUI_CACHE_MAX_GB"]) * (1 << 30))
    except (KeyError, ValueError):
        return DEFAULT_MAX_BYTES


def prune(frames_dir: str, keep: str | None = None, limit: int | None = None) -> list[str]:
    """Delete the least recently used entries until the cache fits `limit` bytes."""
    limit = max_cache_bytes() if limit is None else limit
    entries = []
    for name in os.listdir(frames_dir):
        path = os.path.join(frames_dir, name)
        if name.startswith(".tmp-") or not os.path.isdir(path):
            continue
        size = sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
        entries.append((os.stat(path).st_mtime, path, size))
    total = sum(size for _, _, size in entries)
    removed = []
    for _, path, size in sorted(entries):
        if total <= limit:
            break
        if path == keep:
            continue
        shutil.rmtree(path, ignore_errors=True)
        total -= size
        removed.append(path)
    return removed
