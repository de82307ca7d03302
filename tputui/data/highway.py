"""HighwayHash-64 with Riegeli's fixed key: the checksum of every Riegeli block and chunk header
and of chunk data.

The C extension (`_highway.c`) is used when it was built; this pure-Python version is the
fallback and the reference the tests compare it to. It is exact but slow (~2 MB/s): fine for
headers and test fixtures, not for gigabytes of chunk data.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

# 'Riegeli/', 'records\n', 'Riegeli/', 'records\n' as little-endian words (the format spec).
RIEGELI_KEY = (0x2F696C6567656952, 0x0A7364726F636572, 0x2F696C6567656952, 0x0A7364726F636572)
_M = (1 << 64) - 1
_INIT0 = (0xDBE6D5D5FE4CCE2F, 0xA4093822299F31D0, 0x13198A2E03707344, 0x243F6A8885A308D3)
_INIT1 = (0x3BD39E10CB0EF593, 0xC0ACF169B5F18A8C, 0xBE5466CF34E90C6C, 0x452821E638D01377)


def _zipper(v1: int, v0: int) -> tuple[int, int]:
    """(add1, add0): the byte shuffle HighwayHash mixes between lanes."""
    add0 = ((((v0 & 0xFF000000) | (v1 & 0xFF00000000)) >> 24)
            | (((v0 & 0xFF0000000000) | (v1 & 0xFF000000000000)) >> 16)
            | (v0 & 0xFF0000) | ((v0 & 0xFF00) << 32)
            | ((v1 & 0xFF00000000000000) >> 8) | (v0 << 56)) & _M
    add1 = ((((v1 & 0xFF000000) | (v0 & 0xFF00000000)) >> 24)
            | (v1 & 0xFF0000) | ((v1 & 0xFF0000000000) >> 16)
            | ((v1 & 0xFF00) << 24) | ((v0 & 0xFF000000000000) >> 8)
            | ((v1 & 0xFF) << 48) | (v0 & 0xFF00000000000000)) & _M
    return add1, add0


class _State:
    def __init__(self, key):
        self.mul0 = list(_INIT0)
        self.mul1 = list(_INIT1)
        self.v0 = [m ^ k for m, k in zip(_INIT0, key)]
        self.v1 = [m ^ (((k >> 32) | (k << 32)) & _M) for m, k in zip(_INIT1, key)]

    def update(self, lanes):
        v0, v1, mul0, mul1 = self.v0, self.v1, self.mul0, self.mul1
        for i in range(4):
            v1[i] = (v1[i] + mul0[i] + lanes[i]) & _M
            mul0[i] ^= ((v1[i] & 0xFFFFFFFF) * (v0[i] >> 32)) & _M
            v0[i] = (v0[i] + mul1[i]) & _M
            mul1[i] ^= ((v0[i] & 0xFFFFFFFF) * (v1[i] >> 32)) & _M
        for a, b, dst in ((1, 0, v0), (3, 2, v0)):
            add1, add0 = _zipper(v1[a], v1[b])
            dst[a] = (dst[a] + add1) & _M
            dst[b] = (dst[b] + add0) & _M
        for a, b, dst in ((1, 0, v1), (3, 2, v1)):
            add1, add0 = _zipper(v0[a], v0[b])
            dst[a] = (dst[a] + add1) & _M
            dst[b] = (dst[b] + add0) & _M

    def packet(self, data: bytes | memoryview):
        self.update([int.from_bytes(data[8 * i:8 * i + 8], "little") for i in range(4)])

    def remainder(self, tail: bytes):
        size = len(tail)
        for i in range(4):
            self.v0[i] = (self.v0[i] + ((size << 32) + size)) & _M
        self.v1 = [_rotate32(v, size) for v in self.v1]
        size4 = size & 3
        whole = size & ~3
        packet = bytearray(32)
        packet[:whole] = tail[:whole]
        rest = tail[whole:]
        if size & 16:
            packet[28:32] = tail[whole + size4 - 4:whole + size4]
        elif size4:
            packet[16] = rest[0]
            packet[17] = rest[size4 >> 1]
            packet[18] = rest[size4 - 1]
        self.packet(bytes(packet))

    def finish64(self) -> int:
        for _ in range(4):
            v = self.v0
            self.update([((v[j] >> 32) | (v[j] << 32)) & _M for j in (2, 3, 0, 1)])
        return (self.v0[0] + self.v1[0] + self.mul0[0] + self.mul1[0]) & _M


def _rotate32(lane: int, count: int) -> int:
    """Rotate each 32-bit half of a lane left by `count`."""
    out = 0
    for shift in (0, 32):
        half = (lane >> shift) & 0xFFFFFFFF
        out |= (((half << count) | (half >> (32 - count))) & 0xFFFFFFFF) << shift
    return out


def hash64_py(data, key=RIEGELI_KEY) -> int:
    """HighwayHash-64 of `data` (bytes-like), pure Python."""
    mv = memoryview(data).cast("B")
    st = _State(key)
    n = len(mv) - len(mv) % 32
    for off in range(0, n, 32):
        st.packet(mv[off:off + 32])
    if len(mv) % 32:
        st.remainder(bytes(mv[n:]))
    return st.finish64()


_hash64_c: Callable[[Buffer], int] | None  # None: the C extension is not built
try:
    from tputui.data._highway import hash64 as _hash64_c
except ImportError:  # extension not built: exact but slow
    _hash64_c = None


def hash64(data) -> int:
    """HighwayHash-64 of `data` with Riegeli's key (C when built, else Python)."""
    if _hash64_c is not None:
        return _hash64_c(data)
    return hash64_py(data)
