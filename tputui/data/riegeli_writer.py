"""A small Riegeli/records writer: simple chunks, any compression (fixtures and tests).

Follows the format spec: the file signature chunk first, then one simple chunk per call to
`write_chunk`, each padded so the next one starts where readers expect it, with a 24-byte block
header at every 64 KiB boundary (hashed, pointing back to the start of the chunk it interrupts
and on to its end). XLA's profiler writes the same shape (one record per chunk, brotli).
"""
from __future__ import annotations

import struct
from typing import BinaryIO

from tputui.data import pbwire
from tputui.data.highway import hash64
from tputui.data.riegeli import (
    BLOCK_HEADER_SIZE,
    BLOCK_SIZE,
    BROTLI,
    CHUNK_HEADER_SIZE,
    NONE,
    PADDING,
    SIGNATURE,
    SIMPLE,
    ZSTD,
    chunk_end,
)

COMPRESSIONS = {"none": NONE, "brotli": BROTLI, "zstd": ZSTD}


varint = pbwire.encode_varint  # chunk headers' sizes


def compress(kind: int, data: bytes, level: int | None = None) -> bytes:
    if kind == NONE:
        return data
    if kind == BROTLI:
        import brotli

        body = brotli.compress(data, quality=6 if level is None else level)  # XLA writes "brotli:6"
    else:
        import zstandard

        body = zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    return varint(len(data)) + body


class RecordWriter:
    def __init__(self, f: BinaryIO, compression: str = "brotli"):
        self.f = f
        self.kind = COMPRESSIONS[compression]
        self.pos = 0
        self._chunk(SIGNATURE, b"", 0, 0)

    def _chunk(self, ctype: bytes, data: bytes, num_records: int, decoded_size: int) -> None:
        rest = struct.pack("<QQ", len(data), hash64(data)) + ctype + num_records.to_bytes(7, "little") \
            + struct.pack("<Q", decoded_size)
        logical = struct.pack("<Q", hash64(rest)) + rest + data
        assert len(logical) == CHUNK_HEADER_SIZE + len(data)
        begin, end = self.pos, chunk_end(self.pos, len(data), num_records)
        at, used = begin, 0
        while at < end:
            if at % BLOCK_SIZE == 0:
                body = struct.pack("<QQ", at - begin, end - at)
                self.f.write(struct.pack("<Q", hash64(body)) + body)
                at += BLOCK_HEADER_SIZE
                continue
            n = min(end, (at // BLOCK_SIZE + 1) * BLOCK_SIZE) - at
            piece = logical[used:used + n]
            self.f.write(piece + bytes(n - len(piece)))  # zero padding past the data
            used += n
            at += n
        self.pos = end

    def write_chunk(self, records: list[bytes]) -> None:
        """One simple chunk holding `records`."""
        sizes = b"".join(varint(len(r)) for r in records)
        values = b"".join(records)
        csizes = compress(self.kind, sizes)
        data = bytes([self.kind]) + varint(len(csizes)) + csizes + compress(self.kind, values)
        self._chunk(SIMPLE, data, len(records), len(values))

    def pad_to_block(self) -> None:
        """A padding chunk up to the next 64 KiB boundary (what XLA's 64 KiB padding leaves)."""
        if self.pos % BLOCK_SIZE == 0:
            return
        room = (-self.pos) % BLOCK_SIZE - CHUNK_HEADER_SIZE
        if room < 0:
            room += BLOCK_SIZE - BLOCK_HEADER_SIZE
        self._chunk(PADDING, bytes(room), 0, 0)


def write_records(f: BinaryIO, chunks: list[list[bytes]], compression: str = "brotli", pad: bool = False) -> None:
    """A whole file: one simple chunk per list of records."""
    w = RecordWriter(f, compression)
    for records in chunks:
        w.write_chunk(records)
    if pad:
        w.pad_to_block()
