"""Decoded frames cached under the user cache dir, keyed by path + size + mtime.

Never written inside the logdir. `--no-cache` (use_cache=False) skips both read and write.
"""
from __future__ import annotations

import hashlib
import os

from tputui.data.logdir import HostFile, LogdirError
from tputui.data.xspace import DecodeError, PlaneSelector, XSpaceFrame, decode_raw


def cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tputui")


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


def load_frame(hf: HostFile, planes: PlaneSelector = None, use_cache: bool = True, progress=None) -> XSpaceFrame:
    data = read_bytes(hf, progress=progress)
    try:
        raw = decode_raw(data, planes)
    except DecodeError as e:
        raise LogdirError(f"{hf.path}: {e}") from None
    return XSpaceFrame(raw)
