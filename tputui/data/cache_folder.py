"""The cache folder itself: entries moved into place whole, and the least recently used pruned to
the size cap. Light on imports: the export command and the map's worker pool check and publish
entries before the decoder is loaded."""
from __future__ import annotations

import os
import shutil
import time

DEFAULT_MAX_BYTES = 2 << 30  # TPUTUI_CACHE_MAX_GB overrides; oldest-used entries go first
STALE_TMP_SECONDS = 6 * 3600  # a .tmp- folder this old is left over by a killed process


def max_cache_bytes() -> int:
    try:
        return int(float(os.environ["TPUTUI_CACHE_MAX_GB"]) * (1 << 30))
    except (KeyError, ValueError):
        return DEFAULT_MAX_BYTES


def publish(tmp: str, entry: str) -> None:
    """Move a finished temp folder into place as `entry` (one written by another process first is
    kept, ours dropped), then prune the folder it lives in to the LRU cap."""
    try:
        os.rename(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    prune(os.path.dirname(entry), keep=entry)


def prune(frames_dir: str, keep: str | None = None, limit: int | None = None) -> list[str]:
    """Delete the least recently used entries until the cache fits `limit` bytes."""
    limit = max_cache_bytes() if limit is None else limit
    entries = []
    for name in os.listdir(frames_dir):
        path = os.path.join(frames_dir, name)
        if name.startswith(".tmp-"):  # an entry being built (a riegeli merge's columns can be GBs)
            try:
                if time.time() - os.stat(path).st_mtime > STALE_TMP_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)  # its process was killed
            except OSError:
                pass
            continue
        if not os.path.isdir(path):
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
