"""Writing files so that readers never see half of one."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from typing import IO


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "wb", **kwargs) -> Iterator[IO]:
    """A temp file beside `path`: it replaces `path` (after an fsync) when the block ends, and is
    removed when the block (or the open) fails. Unique per process and thread, so concurrent
    writers don't collide."""
    tmp = f"{path}.part-{os.getpid()}-{threading.get_ident()}"
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


@contextlib.contextmanager
def atomic_dir(path: str, prefix: str = ".tmp-") -> Iterator[str]:
    """A temp dir beside `path` to fill: renamed to `path` when the block ends (when another
    writer got there first, theirs is kept and ours dropped), removed when the block fails.
    Its files and itself are fsynced before the rename, the parent after: a crash leaves the
    old state or the whole new folder, never a folder of half-written files."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
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
