"""Where a riegeli merge keeps the event columns (xspace_merge.py): in files, so memory follows the
largest record and not the file, or in memory when nothing can be written.

Two halves:
- a spill: each record's event and event-stat columns appended in record order as the record is
  merged (one file per column, in zstd-compressed pieces, one per line of the record);
- an output: the merged columns in final line order, each an .npy file of known length written
  front to back, run by run from the spill, then memory-mapped.
The files go in the cache entry being written (cache_entry.py names them), so a merged frame is
already on disk when the merge ends.
"""
from __future__ import annotations

import bisect
import os
import queue
import threading
from typing import Any

import numpy as np

# Column name -> dtype: the event columns, then the event-stat columns ("es.*").
EVENT_COLUMNS = ("metadata_id", "offset_ps", "num_occurrences", "duration_ps")
STAT_COLUMNS = ("es.owner", "es.stat", "es.kind", "es.value")
DTYPES: dict[str, np.dtype] = {**{k: np.dtype(np.int64) for k in EVENT_COLUMNS + STAT_COLUMNS},
                               "es.kind": np.dtype(np.uint8), "line": np.dtype(np.int32)}


class MemorySpill:
    """Record-order columns kept as the records' own arrays."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in EVENT_COLUMNS + STAT_COLUMNS}
        self.starts: dict[str, list[int]] = {k: [] for k in self.parts}
        self.rows: dict[str, int] = dict.fromkeys(self.parts, 0)

    def append(self, name: str, values: np.ndarray, cuts: np.ndarray | None = None) -> None:
        self.starts[name].append(self.rows[name])
        self.parts[name].append(np.asarray(values, DTYPES[name]))
        self.rows[name] += len(values)

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        parts, starts = self.parts[name], self.starts[name]
        k = bisect.bisect_right(starts, start) - 1
        out = []
        while start < stop:
            a = start - starts[k]
            take = parts[k][a:a + stop - start]
            out.append(take)
            start += len(take)
            k += 1
        return out[0] if len(out) == 1 else np.concatenate(out) if out else np.zeros(0, DTYPES[name])

    def close(self) -> None:
        for parts in self.parts.values():
            parts.clear()


class _Background:
    """Work done in order by one thread (what it runs lets go of the GIL: zstd, writes), with at
    most `depth` items waiting, so the merge goes on meanwhile. An error is raised in the
    merging thread by the next submit() or wait()."""

    def __init__(self, name: str, depth: int) -> None:
        self.name = name
        self.items: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def submit(self, fn, *args) -> None:
        if self.error is not None:
            raise self.error
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self.thread.start()
        self.items.put((fn, args))

    def _run(self) -> None:
        while True:
            item = self.items.get()
            try:
                if item is None:
                    return
                if self.error is None:
                    fn, args = item
                    fn(*args)
            except BaseException as e:  # noqa: BLE001 - raised in the merging thread
                self.error = e
            finally:
                self.items.task_done()

    def wait(self) -> None:
        if self.thread is not None:
            self.items.join()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        if self.thread is not None:
            self.items.put(None)
            self.thread.join()
            self.thread = None


class FileSpill:
    """Record-order columns in files in `folder` (removed by close()), each record's column cut
    into pieces (one per line: what the merged order moves as a whole) and each piece
    zstd-compressed at a fast level, so the spill costs a fraction of the columns' bytes in
    writes. A thread compresses and writes, so the next record is decoded meanwhile; at most one
    record's columns wait for it."""

    LEVEL = -5  # zstd's fast levels: over 1 GB/s each way

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.files: dict[str, int] = {}
        self.rows: dict[str, int] = dict.fromkeys(EVENT_COLUMNS + STAT_COLUMNS, 0)
        self.size: dict[str, int] = dict.fromkeys(self.rows, 0)  # bytes in each file
        # Per column: first row of each piece (ascending) and its (file offset, compressed size, rows).
        self.starts: dict[str, list[int]] = {k: [] for k in self.rows}
        self.pieces: dict[str, list[tuple[int, int, int]]] = {k: [] for k in self.rows}
        self.background = _Background("tputui-merge-spill", len(self.rows))
        self.compressor: Any = None  # a zstandard.ZstdCompressor, made by the background thread

    def _compress_and_write(self, name: str, values: np.ndarray, first: int, cuts: list[int]) -> None:
        import zstandard

        if self.compressor is None:  # used by the background thread only
            self.compressor = zstandard.ZstdCompressor(level=self.LEVEL)
        fd = self.fd(name)
        for a, b in zip(cuts[:-1], cuts[1:]):
            data = self.compressor.compress(_bytes_of(values[a:b]))
            _write_all(fd, memoryview(data), self.size[name])
            self.starts[name].append(first + a)
            self.pieces[name].append((self.size[name], len(data), b - a))
            self.size[name] += len(data)

    def flush(self) -> None:
        """Wait until every appended column is in its file; raise what the writer met."""
        self.background.wait()

    def path(self, name: str) -> str:
        return os.path.join(self.folder, f"spill.{name}.zst")

    def fd(self, name: str) -> int:
        if name not in self.files:
            self.files[name] = os.open(self.path(name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        return self.files[name]

    def append(self, name: str, values: np.ndarray, cuts: np.ndarray | None = None) -> None:
        """`values` after the rows already spilled; `cuts`: where its pieces start (rows)."""
        values = np.ascontiguousarray(values, DTYPES[name])
        n = len(values)
        bounds = sorted({0, n, *(int(c) for c in (cuts if cuts is not None else ()) if 0 < c < n)})
        self.background.submit(self._compress_and_write, name, values, self.rows[name], bounds)
        self.rows[name] += n

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        import zstandard

        self.flush()
        starts, pieces = self.starts[name], self.pieces[name]
        k = bisect.bisect_right(starts, start) - 1
        out, at = [], start
        decompressor = zstandard.ZstdDecompressor()
        while at < stop:
            offset, size, rows = pieces[k]
            buf = bytearray(size)
            _read_all(self.fd(name), memoryview(buf), offset)
            piece = np.frombuffer(decompressor.decompress(buf, max_output_size=rows * DTYPES[name].itemsize),
                                  DTYPES[name])
            a = at - starts[k]
            take = piece[a:a + stop - at]
            out.append(take)
            at += len(take)
            k += 1
        return out[0] if len(out) == 1 else np.concatenate(out) if out else np.zeros(0, DTYPES[name])

    def close(self) -> None:
        self.background.stop()
        for name, fd in self.files.items():
            os.close(fd)
            try:
                os.unlink(self.path(name))
            except OSError:
                pass
        self.files.clear()


class MemoryOut:
    """Merged columns gathered in memory (concatenated when the merge ends)."""

    def __init__(self, spill: MemorySpill) -> None:
        self.spill = spill
        self.parts: dict[str, list[np.ndarray]] = {}

    def begin(self, name: str, length: int) -> None:
        self.parts[name] = []

    def write(self, name: str, values: np.ndarray) -> None:
        self.parts[name].append(np.asarray(values, DTYPES[name]))

    def copy(self, name: str, start: int, stop: int) -> None:
        self.write(name, self.spill.read(name, start, stop))

    def result(self, name: str) -> np.ndarray:
        parts = self.parts.pop(name)
        return np.concatenate(parts) if parts else np.zeros(0, DTYPES[name])

    def close(self) -> None:
        self.parts.clear()


class FileOut:
    """Merged columns written front to back into .npy files (`paths`: column name -> file), by a
    thread, so the next runs are decompressed meanwhile."""

    def __init__(self, spill: FileSpill, paths: dict[str, str]) -> None:
        self.spill, self.paths = spill, paths
        self.files: dict[str, int] = {}
        self.at: dict[str, int] = {}
        self.background = _Background("tputui-merge-write", 32)

    def begin(self, name: str, length: int) -> None:
        header = _npy_header(DTYPES[name], length)
        fd = os.open(self.paths[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.files[name] = fd
        _write_all(fd, memoryview(header), 0)
        self.at[name] = len(header)

    def write(self, name: str, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, DTYPES[name])
        self.background.submit(_write_all, self.files[name], _bytes_of(values), self.at[name])
        self.at[name] += values.nbytes

    def copy(self, name: str, start: int, stop: int) -> None:
        self.write(name, self.spill.read(name, start, stop))

    def result(self, name: str) -> np.ndarray:
        self.background.wait()
        os.close(self.files.pop(name))
        return np.load(self.paths[name], mmap_mode="r")

    def close(self) -> None:
        self.background.stop()
        for fd in self.files.values():
            os.close(fd)
        self.files.clear()


def _npy_header(dtype: np.dtype, length: int) -> bytes:
    import io

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
            raise OSError(f"spill file ends early at byte {offset}")
        into, offset = into[n:], offset + n
