"""Small `.xplane.riegeli` files whose chunks expand far past what they are (decompression bombs),
built on the fly (never committed): issue 32 part 3.

    python tests/helpers/riegeli_bombs.py OUT_DIR    # writes one logdir per bomb under OUT_DIR

Every chunk is a genuine one (valid hashes, a stream that really expands): a reader that trusts
what the file says decompresses gigabytes.
"""
from __future__ import annotations

import pathlib
import sys

from tputui.data.riegeli import BROTLI, SIMPLE, ZSTD
from tputui.data.riegeli_writer import RecordWriter, varint

_ZEROS = bytes(64 << 20)


def _zeros_compressed(kind: int, n: int) -> bytes:
    """`n` zero bytes brotli / zstd compressed by streaming (a few hundred KB for a GB)."""
    if kind == BROTLI:
        import brotli

        c = brotli.Compressor(quality=1)
        parts = [c.process(_ZEROS[:min(len(_ZEROS), n - at)]) for at in range(0, n, len(_ZEROS))]
        parts.append(c.finish())
    else:
        import zstandard

        co = zstandard.ZstdCompressor(level=1).compressobj(size=n)
        parts = [co.compress(_ZEROS[:min(len(_ZEROS), n - at)]) for at in range(0, n, len(_ZEROS))]
        parts.append(co.flush())
    return b"".join(parts)


def bomb_chunk(w: RecordWriter, kind: int, record_sizes: list[int], expands_to: int | None = None) -> None:
    """A simple chunk of zero-filled records of these sizes, their sum declared as the decoded
    size; `expands_to`: what the values stream really expands to (default: the same, the truth)."""
    import brotli
    import zstandard

    total = sum(record_sizes)
    sizes = b"".join(varint(n) for n in record_sizes)
    csizes = varint(len(sizes)) + (brotli.compress(sizes) if kind == BROTLI else zstandard.compress(sizes))
    values = varint(total) + _zeros_compressed(kind, total if expands_to is None else expands_to)
    data = bytes([kind]) + varint(len(csizes)) + csizes + values
    w._chunk(SIMPLE, data, len(record_sizes), total)


BOMBS = {
    # name: (compression, record sizes (declared), what the records stream really expands to)
    "brotli_1gb_of_records": (BROTLI, [1_000_000] * 1000, None),
    "brotli_one_4gb_record": (BROTLI, [4 << 30], None),
    "brotli_claims_1mb_expands_to_1gb": (BROTLI, [1 << 20], 1 << 30),
    "zstd_1gb_of_records": (ZSTD, [1_000_000] * 1000, None),
}


def write_bomb(path: pathlib.Path, name: str, good_record: bytes | None = None) -> pathlib.Path:
    """`path` (a .xplane.riegeli) holding the bomb `name`, after one good record when given."""
    kind, sizes, expands_to = BOMBS[name]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        w = RecordWriter(f, "brotli" if kind == BROTLI else "zstd")
        if good_record is not None:
            w.write_chunk([good_record])
        bomb_chunk(w, kind, sizes, expands_to)
    return path


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1])
    for name in BOMBS:
        p = write_bomb(out / name / "plugins" / "profile" / "run" / "vm.xplane.riegeli", name)
        print(p, p.stat().st_size)
