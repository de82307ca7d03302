"""Small results derived from one host file (e.g. op stats), cached beside the decoded frames.

`$XDG_CACHE_HOME/tputui/frames/<key>.<kind>/data.pkl`, keyed like the frame cache (path, size,
mtime or GCS generation) plus the kind, its format version and tputui's version, so a changed
file, a new format or a new tputui recomputes. Entries live in the frames folder, so the same LRU
cap prunes them. Written to a temp dir, fsynced and renamed: a reader never sees half an entry,
and an unreadable entry is removed and recomputed. Only tputui writes these files (pickle), in
the user's own cache dir.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
from typing import Any

from tputui import __version__
from tputui.data.cache_folder import publish, temp_prefix
from tputui.data.runs import HostFile, path_bytes
from tputui.data.storage import cache_root

_FILE = "data.pkl"


def entry_path(hf: HostFile, kind: str, version: int) -> str:
    ident = f"{kind}\0v{version}\0{__version__}\0{hf.path}\0{hf.size}\0{hf.mtime!r}"
    return os.path.join(cache_root(), "frames", f"{hashlib.sha1(path_bytes(ident)).hexdigest()}.{kind}")


def has(hf: HostFile, kind: str, version: int) -> bool:
    """Whether an entry is there (its file exists; nothing is read)."""
    return os.path.isfile(os.path.join(entry_path(hf, kind, version), _FILE))


def load(hf: HostFile, kind: str, version: int) -> Any | None:
    """The cached value, or None when there is none (or it cannot be read: it is then removed)."""
    entry = entry_path(hf, kind, version)
    path = os.path.join(entry, _FILE)
    try:
        with open(path, "rb") as f:
            value = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 (damaged or from an incompatible build: recompute)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    try:
        os.utime(entry)  # recently used, for pruning
    except OSError:
        pass
    return value


def store(hf: HostFile, kind: str, version: int, value: Any) -> None:
    """Write the value atomically; a read-only or full cache dir is silently skipped."""
    entry = entry_path(hf, kind, version)
    parent = os.path.dirname(entry)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=temp_prefix())
    except OSError:
        return
    try:
        with open(os.path.join(tmp, _FILE), "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        publish(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
