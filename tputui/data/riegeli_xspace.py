"""One host's `.xplane.riegeli` file -> one RawXSpace, the way XProf reads it.

Each record is one serialized XSpace (XLA's profiler writes a long profile chunk by chunk);
records are decoded one at a time and merged (xspace_merge.py). Damaged regions are skipped
with a warning on the `tputui` logger, as XProf's reader skips them; a file with no readable
record is a one-line error.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os

from tputui.data.logdir import HostFile, LogdirError
from tputui.data.raw import RawXSpace
from tputui.data.riegeli import RecordReader, RiegeliError
from tputui.data.xspace import DecodeError, PlaneSelector, decode_raw
from tputui.data.xspace_merge import XSpaceMerger

log = logging.getLogger("tputui")


@contextlib.contextmanager
def _open(hf: HostFile, progress=None):
    """(file object, size): local files are streamed; gs:// objects come whole (download cache)."""
    if hf.path.startswith("gs://"):
        from tputui.data import gcs

        data = gcs.read_bytes(hf, progress=progress)
        yield io.BytesIO(data), len(data)
        return
    try:
        f = open(hf.path, "rb")
    except OSError as e:
        raise LogdirError(f"{hf.path}: cannot read ({e.strerror or e})") from None
    with f:
        yield f, os.fstat(f.fileno()).st_size


def read_riegeli(hf: HostFile, planes: PlaneSelector = None, progress=None) -> tuple[RawXSpace, list[str]]:
    """(merged columns, warnings about skipped regions) of one riegeli host file."""
    with _open(hf, progress) as (f, size):
        return read_stream(f, size, hf.path, planes, progress, label=hf.host)


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
