"""One host's `.xplane.riegeli` file -> one RawXSpace, the way XProf reads it.

Each record is one serialized XSpace (XLA's profiler writes a long profile chunk by chunk);
records are decoded one at a time and merged (xspace_merge.py). Damaged regions are skipped
with a warning on the `tputui` logger, as XProf's reader skips them; a file with no readable
record is a one-line error.
"""
from __future__ import annotations

import logging
import mmap

from tputui.data.logdir import HostFile
from tputui.data.raw import RawXSpace
from tputui.data.riegeli import RecordReader, RiegeliError
from tputui.data.xspace import DecodeError, PlaneSelector, decode_raw
from tputui.data.xspace_merge import XSpaceMerger

log = logging.getLogger("tputui")


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


def read_riegeli(data, hf: HostFile, planes: PlaneSelector = None, progress=None) -> tuple[RawXSpace, list[str]]:
    """(merged columns, warnings about skipped regions) of one riegeli host file's content."""
    return read_stream(_BufferFile(data), len(data), hf.path, planes, progress, label=hf.host)


def read_stream(f, size: int, name: str, planes: PlaneSelector = None, progress=None,
                label: str = "") -> tuple[RawXSpace, list[str]]:
    reader = RecordReader(f, name, size, warn=log.warning)
    merger = XSpaceMerger()
    for i, record in enumerate(reader.records()):
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
