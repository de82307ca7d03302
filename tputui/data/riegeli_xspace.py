"""One host's `.xplane.riegeli` file -> one RawXSpace, the way XProf reads it.

Each record is one serialized XSpace (XLA's profiler writes a long profile chunk by chunk);
records are decoded one at a time, a thread reading (and hash-checking) the next one meanwhile,
and merged (xspace_merge.py) through files in `folder` when one is given (cache.py passes the
cache entry being built), so memory follows the largest record, not the file. Damaged regions are skipped
with a warning on the `tputui` logger, as XProf's reader skips them; a file with no readable
record is a one-line error.
"""
from __future__ import annotations

import logging
import mmap
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

from tputui.data.logdir import HostFile
from tputui.data.raw import RawXSpace
from tputui.data.riegeli import RecordReader, RiegeliError
from tputui.data.xspace import DecodeError, PlaneSelector, decode_raw
from tputui.data.xspace_merge import XSpaceMerger

log = logging.getLogger("tputui")
T = TypeVar("T")


class _BufferFile:
    """seek/read over the buffer storage.read() gives (an mmap of a local file, or the bytes of
    a gs:// object). Pages of an mmap are released once read, so memory follows the largest
    chunk, not the file."""

    def __init__(self, buf):
        self.buf, self.pos, self.done = buf, 0, 0

    def seek(self, pos: int) -> None:
        self.pos = pos

    def read(self, n: int) -> bytes:
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += len(out)
        self._release(self.pos)
        return out

    def view(self, start: int, end: int) -> memoryview:
        """The bytes [start, end) without a copy (what RecordReader reads chunks through)."""
        self._release(start)
        return memoryview(self.buf)[start:end]

    def _release(self, upto: int) -> None:
        madvise = getattr(self.buf, "madvise", None)
        start = self.done - self.done % mmap.PAGESIZE
        end = upto - upto % mmap.PAGESIZE
        if madvise is None or end - start < (8 << 20):  # in 8 MB steps
            return
        try:
            madvise(mmap.MADV_DONTNEED, start, end - start)
        except (OSError, ValueError):
            return
        self.done = end


def read_riegeli(data, hf: HostFile, planes: PlaneSelector = None, progress=None,
                 folder: str | None = None) -> tuple[RawXSpace, list[str]]:
    """(merged columns, warnings about skipped regions) of one riegeli host file's content.
    `folder`: where the merge spills and writes the event columns (see XSpaceMerger)."""
    return read_stream(_BufferFile(data), len(data), hf.path, planes, progress, label=hf.host, folder=folder)


def ahead(items: Iterator[T], name: str) -> Iterator[T]:
    """`items`, produced by a thread one item ahead of the caller: the next record is read,
    hashed and decompressed (C code that lets go of the GIL) while this one is decoded."""
    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    end = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for x in items:
                if not put((x, None)):
                    return
            put((end, None))
        except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
            put((end, e))

    t = threading.Thread(target=produce, name=name, daemon=True)
    t.start()
    try:
        while True:
            x, err = q.get()
            if x is end:
                if err is not None:
                    raise err
                return
            yield x
    finally:
        stop.set()
        t.join()


def read_stream(f, size: int, name: str, planes: PlaneSelector = None, progress=None,
                label: str = "", folder: str | None = None) -> tuple[RawXSpace, list[str]]:
    reader = RecordReader(f, name, size, warn=log.warning)
    merger = XSpaceMerger(folder)
    try:
        for i, record in enumerate(ahead(reader.records(), "tputui-riegeli-read")):
            if progress:
                progress(f"decoding {label or name} record {i + 1} ({len(record) / 1e6:.1f} MB)")
            try:
                merger.add(decode_raw(record, planes))
            except DecodeError as e:  # the hash matched, yet it is not an XSpace
                msg = f"{name}: skipped record {i + 1}, not an XSpace ({e})"
                reader.skipped.append(msg)
                log.warning(msg)
            del record
        if merger.records == 0:
            why = "; ".join(reader.skipped) if reader.skipped else "it holds no records"
            raise RiegeliError(f"{name}: no readable XSpace record ({why})")
        return merger.finish(), reader.skipped
    except BaseException:
        merger.close()
        raise
