"""Where a riegeli merge keeps the event columns (xspace_merge.py): in files, so memory follows the
largest record and not the file, or in memory when nothing can be written.

Two halves:
- a spill: each record's event and event-stat columns appended in record order as the record is
  merged (one raw file per column);
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


class FileSpill:
    """Record-order columns in files in `folder` (removed by close()), each record's column cut
    into pieces (one per line: what the merged order moves as a whole) and each piece
    zstd-compressed at a fast level, so the spill costs a fraction of the columns' bytes in
    writes. A thread compresses and writes (zstd and the write let go of the GIL), so the next
    record is decoded meanwhile; at most one record's columns wait in its queue."""

    LEVEL = -5  # zstd's fast levels: over 1 GB/s each way

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.files: dict[str, int] = {}
        self.rows: dict[str, int] = dict.fromkeys(EVENT_COLUMNS + STAT_COLUMNS, 0)
        self.size: dict[str, int] = dict.fromkeys(self.rows, 0)  # bytes in each file
        # Per column: first row of each piece (ascending) and its (file offset, compressed size, rows).
        self.starts: dict[str, list[int]] = {k: [] for k in self.rows}
        self.pieces: dict[str, list[tuple[int, int, int]]] = {k: [] for k in self.rows}
        self.pending: queue.Queue = queue.Queue(maxsize=len(self.rows))
        self.error: BaseException | None = None
        self.writer: threading.Thread | None = None

    def _write_queued(self) -> None:
        import zstandard

        compressor = zstandard.ZstdCompressor(level=self.LEVEL)
        while True:
            item = self.pending.get()
            try:
                if item is None:
                    return
                if self.error is None:
                    name, values, first, cuts = item
                    fd = self.fd(name)
                    for a, b in zip(cuts[:-1], cuts[1:]):
                        data = compressor.compress(_bytes_of(values[a:b]))
                        _write_all(fd, memoryview(data), self.size[name])
                        self.starts[name].append(first + a)
                        self.pieces[name].append((self.size[name], len(data), b - a))
                        self.size[name] += len(data)
            except BaseException as e:  # noqa: BLE001 - raised in the merging thread by flush()
                self.error = e
            finally:
                self.pending.task_done()

    def flush(self) -> None:
        """Wait until every appended column is in its file; raise what the writer met."""
        if self.writer is not None:
            self.pending.join()
        if self.error is not None:
            raise self.error

    def path(self, name: str) -> str:
        return os.path.join(self.folder, f"spill.{name}.zst")

    def fd(self, name: str) -> int:
        if name not in self.files:
            self.files[name] = os.open(self.path(name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        return self.files[name]

    def append(self, name: str, values: np.ndarray, cuts: np.ndarray | None = None) -> None:
        """`values` after the rows already spilled; `cuts`: where its pieces start (rows)."""
        if self.error is not None:
            raise self.error
        if self.writer is None:
            self.writer = threading.Thread(target=self._write_queued, name="tputui-merge-spill", daemon=True)
            self.writer.start()
        values = np.ascontiguousarray(values, DTYPES[name])
        n = len(values)
        bounds = sorted({0, n, *(int(c) for c in (cuts if cuts is not None else ()) if 0 < c < n)})
        self.pending.put((name, values, self.rows[name], bounds))
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
        if self.writer is not None:
            self.pending.put(None)
            self.writer.join()
            self.writer = None
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


class FileOut:
    """Merged columns written front to back into .npy files (`paths`: column name -> file)."""

    def __init__(self, spill: FileSpill, paths: dict[str, str]) -> None:
        self.spill, self.paths = spill, paths
        self.files: dict[str, int] = {}
        self.at: dict[str, int] = {}

    def begin(self, name: str, length: int) -> None:
        header = _npy_header(DTYPES[name], length)
        fd = os.open(self.paths[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.files[name] = fd
        _write_all(fd, memoryview(header), 0)
        self.at[name] = len(header)

    def write(self, name: str, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, DTYPES[name])
        _write_all(self.files[name], _bytes_of(values), self.at[name])
        self.at[name] += values.nbytes

    def copy(self, name: str, start: int, stop: int) -> None:
        self.write(name, self.spill.read(name, start, stop))

    def result(self, name: str) -> np.ndarray:
        os.close(self.files.pop(name))
        return np.load(self.paths[name], mmap_mode="r")


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
