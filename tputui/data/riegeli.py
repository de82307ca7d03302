"""Reading Riegeli/records files: the records of simple chunks, checked against their hashes.

Facts from the format spec (google/riegeli doc/riegeli_records_file_format.md): the file is cut
into 64 KiB blocks, each starting with a 24-byte block header (hash, distance back to the start
of the chunk it interrupts, distance on to that chunk's end); chunks have a 40-byte header (hash,
data size, data hash, type, record count, decoded size) and are padded so the next one starts
where the formula below says. Profilers write simple chunks ('r'), compressed with brotli, zstd or
nothing. Transposed chunks ('t') are refused with a one-line error.

Like XProf (its RecordReader runs with a recovery callback that always goes on), a corrupt chunk
or header is skipped: the reader warns and resumes at the next chunk a valid block header points
to. Records come out one chunk at a time, so memory follows the largest chunk, not the file.

Bounded by what is real, not by what a file claims: a chunk whose header claims more than a real
profile's chunk holds (see MAX_RECORD_BYTES, MAX_RATIO, MAX_RECORDS) is skipped like a damaged
one, before anything is decompressed; decompression stops at the size the chunk declares, so a
brotli / zstd stream that expands past it (a decompression bomb) costs that size, not its own.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

from tputui.data.highway import hash64
from tputui.errors import UserError

BLOCK_SIZE = 1 << 16
BLOCK_HEADER_SIZE = 24
USABLE_BLOCK_SIZE = BLOCK_SIZE - BLOCK_HEADER_SIZE
CHUNK_HEADER_SIZE = 40
SIGNATURE, METADATA, PADDING, SIMPLE, TRANSPOSED = b"s", b"m", b"p", b"r", b"t"
NONE, BROTLI, ZSTD = 0, ord("b"), ord("z")
COMPRESSION_NAMES = {NONE: "none", BROTLI: "brotli", ZSTD: "zstd"}
# A record is one serialized XSpace: protobuf cannot hold one past 2 GiB (why XLA writes riegeli at
# all), the records of real profiles are up to a few hundred MB (the x100 tiled TPU profile's:
# 80 MB), and decoding one takes ~2-3x its size in columns. 1 GiB leaves room above any real
# record and refuses claims of 4 GB. A chunk holds its records, so it gets the same limit.
MAX_RECORD_BYTES = 1 << 30
# Real XSpace records compress 3-8x with brotli (quality 5-11) and zstd (level 19): the fixtures
# and the x100 TPU profile. A chunk claiming more than 256x its compressed size (and over 64 MiB,
# below which the ratio is not looked at) is a bomb, not a profile: a few hundred KB of brotli
# that expand to 1 GB of zeros would otherwise be decompressed whole.
MAX_RATIO = 256
RATIO_FREE_BYTES = 64 << 20
MAX_RECORDS = 1 << 20  # per chunk: a whole XSpace is many bytes; a million of them is not a profile
BIG_BUFFER = 32 << 20  # a reused chunk buffer bigger than this is let go once decompressed
_PIECE = 16 << 20  # decompressed per step, so a stream that runs past its declared size stops there


class RiegeliError(UserError):
    """A Riegeli file that cannot be read at all (the message is the one line users see)."""


# --- positions (the spec's implementation notes) ---------------------------------------------

def _overhead_blocks(pos: int, size: int) -> int:
    return (size + (pos + USABLE_BLOCK_SIZE - 1) % BLOCK_SIZE) // USABLE_BLOCK_SIZE


def add_with_overhead(pos: int, size: int) -> int:
    """Physical position `size` logical bytes after `pos` (block headers skipped)."""
    return pos + size + _overhead_blocks(pos, size) * BLOCK_HEADER_SIZE


def _round_up_to_chunk_boundary(pos: int) -> int:
    remaining = (-pos) % BLOCK_SIZE
    return pos + max(remaining - (USABLE_BLOCK_SIZE - 1), 0)


def chunk_end(begin: int, data_size: int, num_records: int) -> int:
    return max(add_with_overhead(begin, CHUNK_HEADER_SIZE + data_size),
               _round_up_to_chunk_boundary(begin + num_records))


# --- varints and compression -------------------------------------------------------------------

def read_varint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def decompress(kind: int, data, limit: int = MAX_RECORD_BYTES):
    """One compressed block: none (given back as it is, no copy), or brotli / zstd prefixed by the
    decompressed size. ValueError when the declared size passes `limit` (nothing decompressed)
    or the stream does not give exactly that many bytes (it is not expanded past it)."""
    if kind == NONE:
        return data
    size, start = read_varint(data, 0)
    if size > limit:
        raise ValueError(f"a block declares {size:,} decompressed bytes, over the {limit:,} limit")
    body = data[start:]  # a view: the compressed bytes are not copied
    try:
        if kind == BROTLI:
            import brotli  # a dependency for exactly this (pyproject)

            out = _brotli_upto(brotli, body, size)
        elif kind == ZSTD:
            import zstandard

            out = _zstd_upto(zstandard, body, size)
        else:
            raise ValueError(f"unknown compression type {kind:#x}")
    except ImportError as e:
        raise RiegeliError(f"reading {COMPRESSION_NAMES.get(kind)}-compressed Riegeli needs {e.name}: "
                           f"pip install {e.name}") from None
    except ValueError:
        raise
    except Exception as e:  # brotli.error / zstandard.ZstdError: damaged data
        raise ValueError(f"{COMPRESSION_NAMES.get(kind)} data does not decompress ({e})") from None
    if len(out) != size:
        raise ValueError(f"decompressed {len(out):,} bytes, header says {size:,}")
    return out


def _brotli_upto(brotli, body, size: int) -> bytearray:
    """The brotli stream `body` decompressed, stopping once it passes `size` bytes. Written into
    one buffer of the declared size (pieces joined at the end would hold a record twice: 2 GB
    for a 1 GB record)."""
    d = brotli.Decompressor()
    out = bytearray(size)
    got = 0
    piece = d.process(body, output_buffer_limit=min(size + 1, _PIECE))
    while True:
        if got + len(piece) > size:
            raise _past(size, got + len(piece))
        out[got:got + len(piece)] = piece
        got += len(piece)
        if d.is_finished():
            break
        piece = d.process(b"", output_buffer_limit=min(size + 1 - got, _PIECE))  # all the input is in
        if not piece and not d.is_finished():
            raise ValueError("brotli data ends early")
    return out if got == size else out[:got]


def _zstd_upto(zstandard, body, size: int) -> bytearray:
    """The zstd frame(s) `body` decompressed, stopping once they pass `size` bytes (a frame's
    declared content size is not trusted for the allocation; its checksum is checked). Read
    straight into one buffer of the declared size, then one byte more to see that it ends."""
    reader = zstandard.ZstdDecompressor().stream_reader(body, read_across_frames=True)
    out = bytearray(size)
    view, got = memoryview(out), 0
    while got < size:
        n = reader.readinto(view[got:got + min(size - got, _PIECE)])
        if not n:
            return out[:got]
        got += n
    if reader.read(1):
        raise _past(size, size + 1)
    return out


def _past(size: int, got: int) -> ValueError:
    return ValueError(f"the data expands past the {size:,} bytes it declares (stopped at {got:,})")


def simple_chunk_records(data, num_records: int, decoded_size: int) -> list[memoryview]:
    """The records of one simple chunk ('r'); ValueError for a damaged one or one claiming more
    than a real profile's chunk holds (checked before anything is decompressed)."""
    check_claims(len(data), num_records, decoded_size)
    kind = data[0]
    sizes_len, pos = read_varint(data, 1)
    data = memoryview(data)
    sizes = decompress(kind, data[pos:pos + sizes_len], limit=10 * num_records)  # a varint per record
    values = decompress(kind, data[pos + sizes_len:], limit=decoded_size)
    if len(values) != decoded_size:
        raise ValueError(f"records hold {len(values)} bytes, chunk header says {decoded_size}")
    out, p, at = [], 0, 0
    mv = memoryview(values)
    for _ in range(num_records):
        n, p = read_varint(sizes, p)
        if n > MAX_RECORD_BYTES:
            raise ValueError(f"a record of {n:,} bytes, over the {MAX_RECORD_BYTES:,} limit")
        if at + n > len(values):
            raise ValueError("record sizes run past the records")
        out.append(mv[at:at + n])
        at += n
    return out


def check_claims(data_size: int, num_records: int, decoded_size: int) -> None:
    """ValueError when a chunk's header claims more than a real profile's chunk holds."""
    if decoded_size > MAX_RECORD_BYTES:
        raise ValueError(f"the chunk claims {decoded_size:,} bytes of records, over the {MAX_RECORD_BYTES:,} limit")
    if num_records > MAX_RECORDS:
        raise ValueError(f"the chunk claims {num_records:,} records, over the {MAX_RECORDS:,} limit")
    if decoded_size > RATIO_FREE_BYTES and decoded_size > MAX_RATIO * data_size:
        raise ValueError(f"the chunk claims {decoded_size:,} bytes of records from {data_size:,} compressed "
                         f"(over 1:{MAX_RATIO}, where real profiles compress 1:3 to 1:8)")


# --- the reader --------------------------------------------------------------------------------

class _Skip(Exception):
    """A damaged region: (message, position, exact): resume at the position when `exact` (the
    chunk header was intact, so the chunk's end is known), else at the next chunk a valid block
    header after it points to."""


class RecordReader:
    """Sequential reader over a binary file object (local file or in-memory bytes)."""

    def __init__(self, f: BinaryIO, name: str, size: int, warn: Callable[[str], None] | None = None,
                 reuse: int = 0):
        """`reuse` > 0: chunk data cut out of blocks is copied into one of `reuse` buffers in turn
        (memory this process has touched already: fresh pages cost more than the copy), so a
        record's bytes stay as read only until `reuse - 1` further chunks have been read."""
        self.f, self.name, self.size = f, name, size
        self.buffers: list[bytearray] = [bytearray() for _ in range(reuse)]
        self.turn = 0
        self.last: int | None = None  # the buffer the last chunk's data went to
        self.warn = warn or (lambda msg: None)
        self.skipped: list[str] = []
        self.records_read = 0
        # (begin, data size, records, decoded size) of each simple chunk whose records came out:
        # what replay() reads again without checking hashes a second time.
        self.read_chunks: list[tuple[int, int, int, int]] = []

    def _read_logical(self, pos: int, n: int, data: bool = False) -> bytes | memoryview:
        """`n` bytes of chunk content starting at physical `pos`, block headers cut out. When the
        file object can lend a view of its buffer (`view(start, end)`: a mapped file), the bytes
        are copied once, by the join that cuts the headers out, or not at all inside one block."""
        end = add_with_overhead(pos, n)
        if end > self.size:
            raise _Skip(f"truncated at byte {self.size} (a chunk needs bytes up to {end})", self.size, True)
        view = getattr(self.f, "view", None)
        if view is not None:
            raw = view(pos, end)
        else:
            self.f.seek(pos)
            raw = self.f.read(end - pos)
        if pos % BLOCK_SIZE and (end - 1) // BLOCK_SIZE == pos // BLOCK_SIZE:
            return raw  # inside one block: nothing to cut (the common case for headers)
        readv = getattr(self.f, "preadv", None)
        if data and self.buffers and readv is not None:
            out = self._pooled(n)
            if self._readv(readv, pos, end, out):
                return out
        parts, at = [], pos
        while at < end:
            if at % BLOCK_SIZE == 0:
                at += BLOCK_HEADER_SIZE
                continue
            stop = min(end, (at // BLOCK_SIZE + 1) * BLOCK_SIZE)
            parts.append(raw[at - pos:stop - pos])
            at = stop
        if not (data and self.buffers):
            return b"".join(parts)
        out, at = self._pooled(n), 0
        for part in parts:
            out[at:at + len(part)] = part
            at += len(part)
        return out

    def _pooled(self, n: int) -> memoryview:
        """The next of the reused buffers, `n` bytes of it."""
        buf = self.buffers[self.turn]
        self.last = self.turn
        self.turn = (self.turn + 1) % len(self.buffers)
        if len(buf) < n:
            buf.extend(bytes(n - len(buf)))
        return memoryview(buf)[:n]

    def _done_with(self, data) -> None:
        """A compressed chunk's bytes, once its records are decompressed: a big one's buffer is
        let go rather than kept for reuse (240 MB of zstd beside its 1 GB record otherwise)."""
        if self.buffers and len(data) > BIG_BUFFER and data[0] != NONE and self.last is not None:
            self.buffers[self.last] = bytearray()
            self.last = None

    def _readv(self, readv, pos: int, end: int, out: memoryview) -> bool:
        """Physical bytes [pos, end) read by the kernel straight into `out`, each block header
        into a scratch buffer (preadv, up to 1024 pieces a call): no page of the file is mapped
        or copied twice. False after a short read (the caller cuts from the mapping instead)."""
        header = memoryview(bytearray(BLOCK_HEADER_SIZE))
        iov: list[memoryview] = []
        at, b, start = 0, pos, pos
        while b < end:
            if b % BLOCK_SIZE == 0:
                piece = header[:min(BLOCK_HEADER_SIZE, end - b)]
            else:
                stop = min(end, (b // BLOCK_SIZE + 1) * BLOCK_SIZE)
                piece = out[at:at + stop - b]
                at += len(piece)
            iov.append(piece)
            b += len(piece)
            if len(iov) == 1024 or b == end:
                if readv(iov, start) != b - start:
                    return False
                iov, start = [], b
        return True

    def _resync(self, pos: int) -> int | None:
        """The first chunk start a valid block header at or after `pos` points to."""
        block = -(-pos // BLOCK_SIZE) * BLOCK_SIZE
        while block + BLOCK_HEADER_SIZE <= self.size:
            self.f.seek(block)
            hdr = self.f.read(BLOCK_HEADER_SIZE)
            h, prev, nxt = struct.unpack("<QQQ", hdr)
            if h == hash64(hdr[8:]):
                if prev == 0:
                    return block  # the chunk this header interrupts starts right here
                if block + nxt > pos:
                    return block + nxt
            block += BLOCK_SIZE
        return None

    def chunks(self) -> Iterator[tuple[bytes, int, int, memoryview | bytes, int, int]]:
        """(type, num_records, decoded_size, data, begin, data size) of each intact chunk, in file order."""
        pos = 0
        first = True
        while pos < self.size:
            try:
                header = bytes(self._read_logical(pos, CHUNK_HEADER_SIZE))
                h, data_size, data_hash = struct.unpack_from("<QQQ", header)
                if h != hash64(header[8:]):
                    raise _Skip(f"corrupt chunk header at byte {pos}", pos + 1, False)
                ctype = header[24:25]
                num_records = int.from_bytes(header[25:32], "little")
                decoded_size = int.from_bytes(header[32:40], "little")
                end = chunk_end(pos, data_size, num_records)
                data = self._read_logical(add_with_overhead(pos, CHUNK_HEADER_SIZE), data_size, data=True)
                if hash64(data) != data_hash:
                    raise _Skip(f"corrupt chunk data at bytes {pos}-{end}", end, True)
            except _Skip as skip:
                if first:
                    raise RiegeliError(f"{self.name}: not a Riegeli records file ({skip.args[0]})") from None
                why, at, exact = skip.args
                resume = (at if at < self.size else None) if exact else self._resync(at)
                lost_to = self.size if resume is None else resume
                msg = f"{self.name}: skipped a damaged region ({why}; bytes {pos}-{lost_to} lost)"
                self.skipped.append(msg)
                self.warn(msg)
                if resume is None:
                    return
                pos = resume
                continue
            if first and ctype != SIGNATURE:
                raise RiegeliError(f"{self.name}: not a Riegeli records file (no file signature)")
            first = False
            yield ctype, num_records, decoded_size, data, pos, data_size
            pos = end

    def records(self) -> Iterator[memoryview]:  # views into one chunk's decompressed records
        """Every record of every intact simple chunk, in file order."""
        for ctype, num_records, decoded_size, data, begin, data_size in self.chunks():
            if ctype in (SIGNATURE, METADATA, PADDING):
                continue
            if ctype == TRANSPOSED:
                raise RiegeliError(f"{self.name}: a transposed Riegeli chunk (at byte {begin}): "
                                   "only simple chunks, as profilers write, are supported")
            if ctype != SIMPLE:
                msg = f"{self.name}: skipped a chunk of unknown type {ctype!r} at byte {begin}"
                self.skipped.append(msg)
                self.warn(msg)
                continue
            try:
                recs = simple_chunk_records(data, num_records, decoded_size)
                self._done_with(data)
            except RiegeliError:
                raise
            except (ValueError, OSError) as e:  # hash matched but contents are not decodable
                msg = f"{self.name}: skipped an undecodable chunk at byte {begin} ({e})"
                self.skipped.append(msg)
                self.warn(msg)
                continue
            del data
            self.read_chunks.append((begin, data_size, num_records, decoded_size))
            for r in recs:
                self.records_read += 1
                yield r

    def replay(self) -> Iterator[memoryview]:
        """The records records() gave, read again from the same chunks (their hashes were
        checked then): a merge that first counts every record, then decodes them. The records
        read before are done with: the reused buffers start over (a one-record file reads into
        the same buffer twice, not into two)."""
        self.turn = 0
        for begin, data_size, num_records, decoded_size in self.read_chunks:
            try:
                data = self._read_logical(add_with_overhead(begin, CHUNK_HEADER_SIZE), data_size, data=True)
                recs = simple_chunk_records(data, num_records, decoded_size)
                self._done_with(data)
            except (_Skip, ValueError, OSError) as e:
                raise RiegeliError(f"{self.name}: changed while it was read (chunk at byte {begin}: {e})") from None
            del data
            yield from recs
