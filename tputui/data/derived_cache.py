"""Small results derived from one host file (e.g. op stats), cached beside the decoded frames.

`$XDG_CACHE_HOME/tputui/frames/<key>.<kind>/`, keyed like the frame cache (path, size, mtime or
GCS generation) plus the kind, its format version, tputui's version and a stamp of its code
(data/code_stamp.py), so a changed file, a new format or changed code recomputes. Entries live in
the frames folder, so the same LRU cap prunes them. The value is stored as data only (`plain_tree`:
JSON for the tree, .npy without pickle for arrays, Arrow IPC for polars frames, in tree.json and
blobs.bin): reading an entry runs no code
that whoever can write the cache folder put there. Written to a temp dir, sealed with its
checksums (`entry_seal`, checked in full on every load: these entries are small) and renamed: a
reader never sees half an entry, and one that does not check out is removed and recomputed.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from typing import Any

from tputui import __version__
from tputui.data import entry_seal
from tputui.data.cache_folder import private_dir, publish, temp_prefix
from tputui.data.code_stamp import code_stamp
from tputui.data.runs import HostFile, path_bytes
from tputui.data.storage import cache_root

log = logging.getLogger("tputui")
_TREE, _BLOBS = "tree.json", "blobs.bin"
_FORMAT = 2  # 1: a pickle; 2: a plain tree with checksums


def entry_path(hf: HostFile, kind: str, version: int) -> str:
    ident = f"{kind}\0v{version}\0f{_FORMAT}\0{__version__}\0{code_stamp()}\0{hf.path}\0{hf.size}\0{hf.mtime!r}"
    return os.path.join(cache_root(), "frames", f"{hashlib.sha1(path_bytes(ident)).hexdigest()}.{kind}")


def has(hf: HostFile, kind: str, version: int) -> bool:
    """Whether an entry is there (its manifest exists; nothing is checked)."""
    return os.path.isfile(os.path.join(entry_path(hf, kind, version), entry_seal.MANIFEST))


def load(hf: HostFile, kind: str, version: int) -> Any | None:
    """The cached value, or None when there is none (or it does not check out: it is then removed)."""
    entry = entry_path(hf, kind, version)
    if not os.path.isdir(entry):
        return None
    # Here, not at the top: map_pool imports this module before numpy and Polars load (see there).
    from tputui.data import plain_tree

    try:
        entry_seal.check(entry, full=True)
        with open(os.path.join(entry, _TREE), "rb") as f:
            doc = f.read()
        with open(os.path.join(entry, _BLOBS), "rb") as f:
            data = memoryview(f.read())
        sizes = plain_tree.blob_sizes(doc)
        if sum(sizes) != len(data):
            raise entry_seal.DamagedEntry(f"{entry}: blob sizes do not add up")
        blobs, at = [], 0
        for n in sizes:
            blobs.append(data[at:at + n])
            at += n
        value = plain_tree.decode(doc, blobs)
    except Exception as e:  # noqa: BLE001 - damaged, or written by an incompatible build: recompute
        log.debug(f"{entry}: unreadable cache entry removed ({type(e).__name__}: {e})")
        shutil.rmtree(entry, ignore_errors=True)
        return None
    try:
        os.utime(entry)  # recently used, for pruning
    except OSError:
        pass
    return value


def store(hf: HostFile, kind: str, version: int, value: Any) -> None:
    """Write the value atomically; a read-only or full cache dir is silently skipped (a value
    the plain format cannot hold is skipped with a debug line: it is computed again next time)."""
    from tputui.data import plain_tree  # see load()

    try:
        doc, blobs = plain_tree.encode(value)
    except TypeError as e:
        log.debug(f"{kind}: not cached ({e})")
        return
    entry = entry_path(hf, kind, version)
    parent = os.path.dirname(entry)
    try:
        private_dir(parent)
        tmp = tempfile.mkdtemp(dir=parent, prefix=temp_prefix())
    except OSError:
        return
    try:
        with open(os.path.join(tmp, _TREE), "wb") as f:
            f.write(doc)
        with open(os.path.join(tmp, _BLOBS), "wb") as f:
            f.writelines(blobs)
        entry_seal.seal(tmp, {"format": _FORMAT, "kind": kind, "version": version})
        publish(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
