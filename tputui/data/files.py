"""Writing files so that readers never see half of one."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from typing import IO

from tputui.data.cache_folder import private_dir


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "wb", **kwargs) -> Iterator[IO]:
    """A temp file beside `path`: it replaces `path` (after an fsync) when the block ends, and is
    removed when the block (or the open) fails. Unique per process and thread, so concurrent
    writers don't collide.

    Beside `path`, not in our cache folder: only a rename within one filesystem is atomic, and the
    cache may be on another. A writer killed outright (kill -9, out of memory) cannot remove its
    part file, so each write first removes the parts of the same `path` that this machine's dead
    processes left (prune_dead_parts)."""
    prune_dead_parts(path)
    tmp = part_name(path, os.getpid(), threading.get_ident())
    try:
        with open(tmp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename: a power loss leaves old or new, never half
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fsync_path(path: str) -> None:
    """fsync a file or a folder by its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _host() -> str:
    return socket.gethostname().replace("/", "_") or "localhost"


def part_name(path: str, pid: int, ident: int) -> str:
    """`FILE.part-<pid>-<thread>@<host>`: the host, because on a shared filesystem (NFS) another
    machine's pid says nothing about this one's processes."""
    return f"{path}.part-{pid}-{ident}@{_host()}"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of ours may be writing it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


def prune_dead_parts(path: str) -> list[str]:
    """Remove the part files of `path` left by processes of this machine that no longer run
    (names without a host, from earlier versions, count as this machine's). Returns them."""
    folder, base = os.path.split(path)
    pattern = re.compile(re.escape(base) + r"\.part-(\d+)-\d+(?:@(.+))?")
    removed: list[str] = []
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return removed
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or (m[2] is not None and m[2] != _host()) or _pid_alive(int(m[1])):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))
            removed.append(name)
    return removed


@contextlib.contextmanager
def atomic_dir(path: str, prefix: str = ".tmp-") -> Iterator[str]:
    """A temp dir beside `path` to fill: renamed to `path` when the block ends (when another
    writer got there first, theirs is kept and ours dropped), removed when the block fails.
    Its files and itself are fsynced before the rename, the parent after: a crash leaves the
    old state or the whole new folder, never a folder of half-written files."""
    parent = os.path.dirname(path)
    private_dir(parent)  # only cache entries are written this way
    tmp = tempfile.mkdtemp(dir=parent, prefix=prefix)
    try:
        yield tmp
        for e in os.scandir(tmp):
            if e.is_file(follow_symlinks=False):
                fsync_path(e.path)
        fsync_path(tmp)
        try:
            os.rename(tmp, path)
        except OSError:  # `path` exists: an entry is written once
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            fsync_path(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
