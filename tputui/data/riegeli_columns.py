"""Where a riegeli merge writes the merged event columns (xspace_merge.py): straight into their
final rows, in files (so memory follows the largest record, not the file) or in memory when
nothing can be written.

Every (record, line) slice has its final place before any record is decoded (riegeli_layout.py),
so each record's columns are written once, where they end up: no spill, no reordering pass.
- FileColumns: one .npy file per column (the cache entry's names, cache_entry.column_paths),
  sized up front; a thread writes one record's slices (os.pwrite) while the next is decoded;
  memory-mapped at the end.
- MemoryColumns: arrays of the final length, filled in place.
"""
from __future__ import annotations

import io
import os
import queue
import threading

import numpy as np

# Column name -> dtype: the event columns, the line column, then the event-stat columns ("es.*").
EVENT_COLUMNS = ("metadata_id", "offset_ps", "num_occurrences", "duration_ps")
STAT_COLUMNS = ("es.owner", "es.stat", "es.kind", "es.value")
ALL_COLUMNS = EVENT_COLUMNS + ("line",) + STAT_COLUMNS
DTYPES: dict[str, np.dtype] = {**{k: np.dtype(np.int64) for k in ALL_COLUMNS},
                               "es.kind": np.dtype(np.uint8), "line": np.dtype(np.int32)}

# One write: (column, values or an int to repeat `count` times, count, first row).
Write = tuple[str, "np.ndarray | int", int, int]


class MemoryColumns:
    """Merged columns as arrays of their final length."""

    def __init__(self) -> None:
        self.cols: dict[str, np.ndarray] = {}

    def begin(self, events: int, stats: int) -> None:
        self.cols = {k: np.empty(stats if k.startswith("es.") else events, DTYPES[k]) for k in ALL_COLUMNS}

    def write(self, batch: list[Write]) -> None:
        for name, values, count, at in batch:
            self.cols[name][at:at + count] = values

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        return self.cols[name][start:stop].copy()

    def result(self) -> dict[str, np.ndarray]:
        cols, self.cols = self.cols, {}
        return cols

    def close(self) -> None:
        self.cols = {}


class FileColumns:
    """Merged columns as .npy files (`paths`: column name -> file), written at their final rows by
    one thread, one record's batch at a time, so the merge decodes the next record meanwhile (at
    most `depth` batches wait). An error of the writer is raised by the next write() or result().

    Another thread flushes the files to disk while they are written (fdatasync after each batch).
    The frame is GBs: left dirty, it passes the kernel's dirty-page limit half way and the writer
    is throttled to disk speed from there on (a 3 GB riegeli host opened without the cache: 30 s
    instead of 16 s); a cache entry's final fsync also finds little left to write.

    The files start sparse and each row is written once (a line sorted at the end gets its own
    rows again, permuted), so a slice of zeros is not written at all: those rows read as zeros."""

    def __init__(self, paths: dict[str, str], depth: int = 1) -> None:
        self.paths = paths
        self.dirty = threading.Event()
        self.flusher: threading.Thread | None = None
        self.stopping = False
        self.files: dict[str, int] = {}
        self.data_at: dict[str, int] = {}  # byte where row 0 starts (after the .npy header)
        self.items: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.fill_buf: dict[str, np.ndarray] = {}  # the writer's reused buffer per dtype

    def begin(self, events: int, stats: int) -> None:
        for name in ALL_COLUMNS:
            dtype, n = DTYPES[name], stats if name.startswith("es.") else events
            header = _npy_header(dtype, n)
            fd = os.open(self.paths[name], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            self.files[name] = fd
            _write_all(fd, memoryview(header), 0)
            os.ftruncate(fd, len(header) + n * dtype.itemsize)
            self.data_at[name] = len(header)

    def write(self, batch: list[Write]) -> None:
        if self.error is not None:
            raise self.error
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="tputui-merge-write", daemon=True)
            self.thread.start()
        if self.flusher is None:
            self.flusher = threading.Thread(target=self._flush_to_disk, name="tputui-merge-sync", daemon=True)
            self.flusher.start()
        self.items.put(batch)

    def _run(self) -> None:
        while True:
            batch = self.items.get()
            try:
                if batch is None:
                    return
                if self.error is None:
                    self._write_batch(batch)
                    self.dirty.set()
            except BaseException as e:  # noqa: BLE001 - raised in the merging thread
                self.error = e
            finally:
                self.items.task_done()

    def _write_batch(self, batch: list[Write]) -> None:
        for name, values, count, at in batch:
            dtype = DTYPES[name]
            offset = self.data_at[name] + at * dtype.itemsize
            if isinstance(values, np.ndarray):
                if _zeros(values):
                    continue  # rows not written read as zeros (the file is sparse)
                _write_all(self.files[name], _bytes_of(np.ascontiguousarray(values, dtype)), offset)
                continue
            if values == 0:
                continue
            buf = self.fill_buf.get(name)
            if buf is None:
                buf = self.fill_buf[name] = np.empty(1 << 18, dtype)
            while count:
                n = min(count, len(buf))
                buf[:n] = values
                _write_all(self.files[name], _bytes_of(buf[:n]), offset)
                count, offset = count - n, offset + n * dtype.itemsize

    def _flush_to_disk(self) -> None:
        """Until stopped: after each written batch, every file's dirty pages to disk (best
        effort: the entry's own fsync comes after anyway)."""
        while True:
            self.dirty.wait()
            self.dirty.clear()
            if self.stopping:
                return
            try:
                for fd in self.files.values():
                    os.fdatasync(fd)
            except OSError:
                return

    def flush(self) -> None:
        if self.thread is not None:
            self.items.join()
        if self.error is not None:
            raise self.error

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of a column as written so far (after every queued write)."""
        self.flush()
        dtype = DTYPES[name]
        out = np.empty(stop - start, dtype)
        _read_all(self.files[name], _bytes_of(out), self.data_at[name] + start * dtype.itemsize)
        return out

    def result(self) -> dict[str, np.ndarray]:
        """Every column memory-mapped from its file (the files stay)."""
        self.flush()
        self._stop()
        for fd in self.files.values():
            os.close(fd)
        self.files.clear()
        return {name: np.load(self.paths[name], mmap_mode="r") for name in ALL_COLUMNS}

    def _stop(self) -> None:
        if self.thread is not None:
            self.items.put(None)
            self.thread.join()
            self.thread = None
        if self.flusher is not None:
            self.stopping = True
            self.dirty.set()
            self.flusher.join()
            self.flusher = None

    def close(self) -> None:
        """Give up: stop the writer, close and remove the files."""
        self._stop()
        for name, fd in self.files.items():
            os.close(fd)
            try:
                os.unlink(self.paths[name])
            except OSError:
                pass
        self.files.clear()


def _zeros(values: np.ndarray) -> bool:
    """Whether every value is 0, looked at whole only when the first and last are (most
    columns fail at once; num_occurrences is 0 throughout a profile without aggregated events:
    0.8 GB of a 101M-event host that need not be copied, flushed nor fsynced)."""
    return len(values) > 0 and values[0] == 0 and values[-1] == 0 and not values.any()


def _npy_header(dtype: np.dtype, length: int) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (length,)})
    return buf.getvalue()


def _bytes_of(values: np.ndarray) -> memoryview:
    return memoryview(values.view(np.uint8))  # type: ignore[arg-type]  # numpy arrays are buffers


_CHUNK = 1 << 30  # one system call moves at most this much (Linux caps a call near 2 GiB)


def _write_all(fd: int, data: memoryview, offset: int) -> None:
    while len(data):
        n = os.pwrite(fd, data[:_CHUNK], offset)
        data, offset = data[n:], offset + n


def _read_all(fd: int, into: memoryview, offset: int) -> None:
    while len(into):
        n = os.preadv(fd, [into[:_CHUNK]], offset)
        if n <= 0:
            raise OSError(f"merged column file ends early at byte {offset}")
        into, offset = into[n:], offset + n
