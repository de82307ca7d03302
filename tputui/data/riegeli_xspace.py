"""One host's `.xplane.riegeli` file -> one RawXSpace, the way XProf reads it.

Each record is one serialized XSpace (XLA's profiler writes a long profile chunk by chunk).
The records are read twice: first each is counted (where its lines go in the merged columns),
then each is decoded and its columns written there (xspace_merge.py), into files in `folder`
when one is given (cache.py passes the cache entry being built), so memory follows the largest
record, not the file. A thread works one record ahead: the first time it reads the next record
and checks its hashes while this one is counted, the second time it reads and decodes the next
records while this one is merged. Damaged regions are skipped with a warning on the `tputui`
logger, as XProf's reader skips them; a file with no readable record is a one-line error.
"""
from __future__ import annotations

import contextlib
import logging
import mmap
import os
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

from tputui.data import riegeli_parts, xspace
from tputui.data.cache_entry import column_paths
from tputui.data.logdir import HostFile
from tputui.data.progress import Step
from tputui.data.raw import RawXSpace
from tputui.data.riegeli import RecordReader, RiegeliError
from tputui.data.riegeli_columns import FileColumns, MemoryColumns
from tputui.data.riegeli_layout import Layout, RecordLines, TimesOutOfRange, count_record
from tputui.data.storage import is_remote
from tputui.data.xspace import DecodeError, PlaneSelector, decode_raw
from tputui.data.xspace_merge import LayoutMismatch, XSpaceMerger

log = logging.getLogger("tputui")
POOL_BYTES = 768 << 20  # decoder columns kept between records (_pooled_columns)
# ... when a record is decoded in parts (riegeli_parts.py): its GB of bytes are held meanwhile
# (rg20's 1 GB record: 2.4-2.6 GB peak with the bigger pool, 2.0 GB with this one)
PARTS_POOL_BYTES = 256 << 20
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
        if upto < self.done:  # read again from an earlier place (the merge's second pass)
            self.done = upto - upto % mmap.PAGESIZE
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


class _LocalFile(_BufferFile):
    """A local file's mapping, whose chunk data the reader has the kernel copy out (preadv) into
    its buffers instead of faulting the mapped pages in and copying them again."""

    def __init__(self, buf, fd: int):
        super().__init__(buf)
        self.fd = fd

    def preadv(self, buffers: list[memoryview], offset: int) -> int:
        return os.preadv(self.fd, buffers, offset)


def read_riegeli(data, hf: HostFile, planes: PlaneSelector = None, progress=None,
                 folder: str | None = None) -> tuple[RawXSpace, list[str]]:
    """(merged columns, warnings about skipped regions) of one riegeli host file's content.
    `folder`: where the merge writes the merged event columns (see riegeli_columns.py)."""
    fd = -1
    if isinstance(data, mmap.mmap) and not is_remote(hf.path):
        try:
            fd = os.open(hf.path, os.O_RDONLY)
            if os.fstat(fd).st_size != len(data):  # not the content mapped: read the mapping only
                os.close(fd)
                fd = -1
        except OSError:
            fd = -1
    f = _LocalFile(data, fd) if fd >= 0 else _BufferFile(data)
    try:
        return read_stream(f, len(data), hf.path, planes, progress, label=hf.host, folder=folder)
    finally:
        if fd >= 0:
            os.close(fd)


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
    """Two passes over the records: each counted (riegeli_layout.py: where its lines go), then
    each decoded and written to its final rows (xspace_merge.py), a thread working ahead in both
    (reading and hashing the next record, then reading and decoding the next records)."""
    # A record is counted while the next waits in ahead()'s queue and a thread reads the one
    # after: 4 buffers in turn keep every record's bytes as read until it is done with (the second
    # pass decodes each record in the thread that read it, before the next read).
    warnings = _HeldWarnings()
    reader = RecordReader(f, name, size, warn=warnings, reuse=4)
    counted: dict[int, RecordLines] = {}  # record number -> its lines, for the records that count
    sizes: dict[int, int] = {}  # record number -> its bytes
    for i, record in enumerate(ahead(reader.records(), "tputui-riegeli-read")):
        if progress:
            progress(f"reading {label or name} record {i + 1} ({len(record) / 1e6:.1f} MB)")
        try:
            counted[i] = count_record(record, planes)
            sizes[i] = len(record)
            warnings.release()
        except DecodeError as e:  # the hash matched, yet it is not an XSpace
            _skip(reader, f"{name}: skipped record {i + 1}, not an XSpace ({e})")
        del record
    if not counted:
        why = "; ".join(reader.skipped) if reader.skipped else "it holds no records"
        raise RiegeliError(f"{name}: no readable XSpace record ({why})")
    while True:
        try:
            return _merge(reader, counted, sizes, planes, progress, label or name, folder), reader.skipped
        except _Dropped as e:  # counted, yet it does not decode to what was counted: merge without it
            i, why = e.args
            del counted[i]
            _skip(reader, f"{name}: skipped record {i + 1}, not an XSpace ({why})")
            if not counted:
                raise RiegeliError(f"{name}: no readable XSpace record ({'; '.join(reader.skipped)})") from None


def _decoded(reader: RecordReader, numbers: list[int], planes: PlaneSelector) -> Iterator[tuple]:
    """(record number, its size, one decoded part of it or None, None or its DecodeError) of the
    records `numbers` (ascending), read again and decoded in file order, a big record in parts
    (riegeli_parts.py: its lines a group at a time, so its columns are never all in memory)."""
    wanted, last = set(numbers), numbers[-1]
    for i, record in enumerate(reader.replay()):
        if i in wanted:
            try:
                for part in riegeli_parts.record_parts(record, planes):
                    yield i, len(record), part, None
                    del part
            except DecodeError as e:
                yield i, len(record), None, e
        if i >= last:
            return


TIMES_OUT_OF_RANGE = "its event times do not fit 64-bit picoseconds beside the other records'"


class _Dropped(Exception):
    """(record number, why): a record to merge without."""


def _skip(reader: RecordReader, msg: str) -> None:
    reader.skipped.append(msg)
    reader.warn(msg)


class _HeldWarnings:
    """The warnings about skipped regions, held until a record turns out readable: when none
    does, the one-line error names them all (one line on stderr, not a warning per region
    and the error repeating them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[str] | None = []

    def __call__(self, msg: str) -> None:
        with self._lock:  # the reading thread warns too
            if self._held is not None:
                self._held.append(msg)
                return
        log.warning(msg)

    def release(self) -> None:
        with self._lock:
            held, self._held = self._held, None
        for msg in held or ():
            log.warning(msg)


def _merge(reader: RecordReader, counted: dict[int, RecordLines], sizes: dict[int, int], planes: PlaneSelector,
           progress, label: str, folder: str | None) -> RawXSpace:
    numbers = sorted(counted)
    if len(numbers) == 1 and sizes[numbers[0]] <= riegeli_parts.WHOLE_BYTES:  # one record: exactly as decoded
        for i, record in enumerate(reader.replay()):
            if i == numbers[0]:
                try:
                    return decode_raw(record, planes)
                except DecodeError as e:
                    raise _Dropped(i, e) from None
        raise RiegeliError(f"{reader.name}: changed while it was read (fewer records the second time)")
    try:
        layout = Layout([counted[i] for i in numbers])
    except TimesOutOfRange as e:
        raise _Dropped(numbers[e.args[0]], TIMES_OUT_OF_RANGE) from None
    out: FileColumns | MemoryColumns = (FileColumns(column_paths(folder))
                                        if folder else MemoryColumns())
    merger = XSpaceMerger(layout, out)
    try:
        with _pooled_columns(POOL_BYTES if max(sizes.values()) <= riegeli_parts.WHOLE_BYTES else PARTS_POOL_BYTES):
            return _merge_records(reader, numbers, planes, progress, label, merger)
    except BaseException:
        merger.close()
        raise


@contextlib.contextmanager
def _pooled_columns(limit: int) -> Iterator[None]:
    """While records are decoded one after another, the decoder's released columns are kept
    (up to `limit` bytes) for the next record's instead of being unmapped: fresh pages are zeroed by
    the kernel for every record (the 3 GB bench host: 700k -> 300k page faults, 3-4 s less system CPU)."""
    if xspace.wire is None:  # the C decoder is not built
        yield
        return
    from tputui.data import _wire

    _wire.memory_pool(limit)
    try:
        yield
    finally:
        _wire.memory_pool(0)


def _merge_records(reader: RecordReader, numbers: list[int], planes: PlaneSelector, progress, label: str,
                   merger: XSpaceMerger) -> RawXSpace:
    # A thread reads and decodes the next records while this one is merged (the decoder lets
    # go of the GIL, and so do numpy's big loops: the merge's own work fills the other core).
    for k, (i, size, part, error) in enumerate(ahead(_decoded(reader, numbers, planes), "tputui-riegeli-decode")):
        if progress:
            progress(Step(f"decoding {label} record {i + 1} ({size / 1e6:.1f} MB)", k, len(numbers)))
        if error is not None:
            raise _Dropped(i, error)
        try:
            merger.add(part.raw, part.planes, part.rows, part.last)
        except LayoutMismatch:
            raise _Dropped(i, "its lines differ from the ones counted") from None
        except TimesOutOfRange:
            raise _Dropped(i, TIMES_OUT_OF_RANGE) from None
        del part
    if merger.records != len(numbers):
        raise RiegeliError(f"{reader.name}: changed while it was read (fewer records the second time)")
    return merger.finish()
