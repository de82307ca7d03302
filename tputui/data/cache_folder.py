"""The cache folder itself: entries moved into place whole, and the least recently used pruned to
the size cap. Light on imports: the export command and the map's worker pool check and publish
entries before the decoder is loaded."""
from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import time
import zlib

from tputui.data.cache_dir import cache_root

DEFAULT_MAX_BYTES = 2 << 30  # TPUTUI_CACHE_MAX_GB overrides; oldest-used entries go first
STALE_TMP_SECONDS = 6 * 3600  # a .tmp- folder this old is left over by a killed process
# A temp folder is named after its writer: .tmp-[kind-]<pid>-<machine>-<random>. The machine (a
# hash of the host name) because a cache dir may be shared over NFS: a pid means something only
# on the machine that wrote it.
_MACHINE = f"{zlib.crc32(socket.gethostname().encode()):08x}"
_WRITER = re.compile(r"\.tmp-(?:[a-z]+-)?(\d+)-([0-9a-f]{8})-")


def temp_prefix(kind: str = "") -> str:
    """The name prefix of a temp folder this process builds an entry in (see prune)."""
    return f".tmp-{kind + '-' if kind else ''}{os.getpid()}-{_MACHINE}-"


def _writer_gone(name: str) -> bool:
    """Whether the process that named this temp folder has ended (it was killed mid-write)."""
    m = _WRITER.match(name)
    if not m or m.group(2) != _MACHINE:
        return False  # an older name, or another machine's: only its age tells
    pid = int(m.group(1))
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive (another user's) or unknown
        return False
    return False  # alive, or its pid taken by another process: its age will tell


def private_dir(path: str) -> str:
    """`path`, created with any missing parents as mode 0700: the cache holds what the user's
    profiles say (names, code, HLO) and what tputui reads back, for no one else to read or plant.
    Our cache root, when an older build made it readable by others, is closed too."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    root = cache_root()
    if os.path.abspath(path).startswith(os.path.abspath(root)):
        try:
            st = os.stat(root)
            if st.st_mode & 0o077 and st.st_uid == os.getuid():
                os.chmod(root, stat.S_IMODE(st.st_mode) & 0o700)
        except OSError:
            pass
    return path


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
    building = 0  # bytes of entries being built: they count against the cap, and are not pruned
    for name in os.listdir(frames_dir):
        path = os.path.join(frames_dir, name)
        if name.startswith(".tmp-"):  # an entry being built (a riegeli merge's columns can be GBs)
            try:
                if _writer_gone(name) or time.time() - os.stat(path).st_mtime > STALE_TMP_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)  # its process was killed
                elif os.path.isdir(path):
                    building += _folder_bytes(path)
            except OSError:
                pass
            continue
        if not os.path.isdir(path):
            continue
        try:
            entries.append((os.stat(path).st_mtime, path, _folder_bytes(path)))
        except OSError:
            continue  # removed meanwhile (another process pruning)
    total = building + sum(size for _, _, size in entries)
    removed = []
    # The kept entry's host keeps its other entries too (its op stats beside a trace index bigger
    # than the cap: the host's overview stays warm).
    own = os.path.basename(keep).split(".")[0] + "." if keep else None
    for _, path, size in sorted(entries):
        if total <= limit:
            break
        if path == keep or (own and os.path.basename(path).startswith(own)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        total -= size
        removed.append(path)
    return removed


def _folder_bytes(path: str) -> int:
    return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
