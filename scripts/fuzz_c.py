"""Fuzz target: the riegeli reader and every C extension's entry points, called directly.

usage: python scripts/fuzz_c.py [--seconds N] [--runs N] [--corpus DIR] [LIBFUZZER_ARGS ...]

A sibling of scripts/fuzz_wire.py (which fuzzes the XSpace decoders against protobuf). An input's
first byte picks its target:

- even: the rest is an .xplane.riegeli file, read whole (tputui/data/riegeli.py: blocks, chunks,
  hashes, compression; riegeli_xspace.py: each record decoded, the records' lines merged). It
  must come back as merged columns that hold together (`raw.validate`) with the skipped regions
  said, or be refused with one line (a UserError). Seeds: small XSpaces cut from the fixtures
  (tests/helpers/xspace_corpus.py) split into 1-4 records, lines re-based, in each compression.
  The mutator mostly edits the records themselves (an XSpace mutation, a line timestamp or event
  offset made absurd, records dropped or repeated) and writes the file again with valid hashes,
  so the merge is reached; else libFuzzer's byte mutations (the reader's damage handling).
- odd: the rest chooses one entry point of one C extension (_columns, _derive, _nesting,
  _trace_json, _highway, _wire) and its arguments: arrays of edge values (0, -1, lengths,
  int32 / int64 limits) and random ones, lengths that agree or not, huge counts. A clean
  refusal is ValueError, OverflowError, IndexError or TypeError; a crash, a hang (-timeout), any
  other exception (MemoryError: an allocation sized by an argument) is a finding.

Without atheris (`pip install 'tputui[fuzz]'`) it says so and exits 0. Findings go under the user
cache dir, never into the repository.
"""
from __future__ import annotations

import argparse
import io
import logging
import os
import pathlib
import random
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "scripts")]

import numpy as np  # noqa: E402
from helpers.xspace_corpus import mutate, seeds  # noqa: E402

from tputui.data import storage  # noqa: E402
from tputui.data.raw import validate  # noqa: E402
from tputui.data.runs import HostFile  # noqa: E402
from tputui.errors import UserError  # noqa: E402
from tputui.proto import xplane_pb2  # noqa: E402

PROFILES = ROOT / "tests" / "fixtures" / "profiles"
RIEGELI, CALL = 0, 1
REFUSALS = (ValueError, OverflowError, IndexError, TypeError)
COMPRESSIONS = ("none", "zstd", "brotli")
I32_EDGES = (0, 1, -1, 2, 2**31 - 1, -(2**31), 2**20, 2**20 - 1)
I64_EDGES = (0, 1, -1, 2, 2**63 - 1, -(2**63), 2**62, 2**31, 10**15, -(10**15))


# --- riegeli ------------------------------------------------------------------------------

def riegeli_file(records: list[bytes], compression: str, per_chunk: int = 1) -> bytes:
    from tputui.data.riegeli_writer import write_records

    out = io.BytesIO()
    chunks = [records[i:i + per_chunk] for i in range(0, len(records), per_chunk)] or [[]]
    write_records(out, chunks, compression)
    return out.getvalue()


def records_of(data: bytes) -> list[bytes] | None:
    """The records of a riegeli file, None when it does not read cleanly."""
    from tputui.data.riegeli import RecordReader

    try:
        reader = RecordReader(io.BytesIO(data), "fuzz", len(data), warn=lambda _m: None)
        out = [bytes(r) for r in reader.records()]
    except Exception:  # noqa: BLE001 - any failure: not a base for a record-level mutation
        return None
    return None if reader.skipped else out


def riegeli_seeds(rng: random.Random) -> list[bytes]:
    from to_riegeli import split_lines, split_planes

    out = []
    for k, data in enumerate(seeds(PROFILES)):
        space = xplane_pb2.XSpace.FromString(data)
        n = 1 + k % 4
        parts = split_lines(space, n) if k % 2 else split_planes(space, n)
        out.append(riegeli_file([p.SerializeToString() for p in parts], COMPRESSIONS[k % 3], 1 + k % 2))
    return out


def mutate_riegeli(data: bytes, rng: random.Random) -> bytes:
    records = records_of(data)
    if not records:
        return data
    i = rng.randrange(len(records))
    pick = rng.random()
    if pick < 0.45:
        records[i] = mutate(records[i], rng)
    elif pick < 0.75:
        try:
            space = xplane_pb2.XSpace.FromString(records[i])
        except Exception:  # noqa: BLE001 - a record mutated before: mutate its bytes again
            records[i] = mutate(records[i], rng)
        else:
            lines = [ln for p in space.planes for ln in p.lines]
            if lines:
                ln = rng.choice(lines)
                if ln.events and rng.random() < 0.5:
                    ev = rng.choice(ln.events)
                    if ev.WhichOneof("data") != "num_occurrences":
                        ev.offset_ps = rng.choice(I64_EDGES)
                    ev.duration_ps = rng.choice(I64_EDGES)
                else:
                    ln.timestamp_ns = rng.choice(I64_EDGES)
            records[i] = space.SerializeToString()
    elif pick < 0.85 and len(records) > 1:
        del records[i]
    else:
        records.insert(i, records[rng.randrange(len(records))])
    return riegeli_file(records, rng.choice(COMPRESSIONS), rng.choice((1, 1, 2)))


def read_riegeli_file(data: bytes) -> None:
    from tputui.data.riegeli_xspace import read_riegeli

    hf = HostFile(host="fuzz", path="fuzz.xplane.riegeli", size=len(data), mtime=0.0, format="riegeli")
    try:
        raw, _skipped = read_riegeli(data, hf)
    except UserError:
        return  # one line for the user
    validate(raw)


# --- C entry points ---------------------------------------------------------------------------

class Args:
    """Argument values drawn from the fuzzer's bytes."""

    def __init__(self, fdp) -> None:
        self.fdp = fdp

    def n(self, most: int = 40) -> int:
        return self.fdp.ConsumeIntInRange(0, most)

    def int(self, edges: tuple, bits: int) -> int:
        if self.fdp.ConsumeBool():
            return edges[self.fdp.ConsumeIntInRange(0, len(edges) - 1)]
        return self.fdp.ConsumeIntInRange(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if self.fdp.ConsumeBool() \
            else self.fdp.ConsumeIntInRange(-3, 40)

    def array(self, dtype, n: int | None = None) -> np.ndarray:
        n = self.n() if n is None else n
        edges, bits = (I32_EDGES, 32) if dtype == np.int32 else (I64_EDGES, 64)
        if dtype == np.uint32:
            return np.array([self.int(I64_EDGES, 64) & 0xFFFFFFFF for _ in range(n)], np.uint32)
        if dtype == np.float64:
            return np.array([self.fdp.ConsumeRegularFloat() for _ in range(n)], np.float64)
        if dtype == np.uint8:
            return np.array([self.fdp.ConsumeIntInRange(0, 255) for _ in range(n)], np.uint8)
        return np.array([self.int(edges, bits) for _ in range(n)], dtype)

    def length(self, n: int) -> int:
        """Usually n (the lengths agree), sometimes another."""
        return n if self.fdp.ConsumeIntInRange(0, 3) else self.n()

    def text(self) -> bytes:
        return self.fdp.ConsumeBytes(self.n(64))


def _calls():
    from tputui.analysis import _derive, _nesting, _trace_json
    from tputui.data import _columns, _highway, _wire

    i32, i64, u32, u8, f64 = np.int32, np.int64, np.uint32, np.uint8, np.float64

    def lookup(a: Args):
        k, q = a.n(), a.n()
        args = [a.array(i32, k), a.array(i64, a.length(k)), a.array(i32, q), a.array(i64, a.length(q))]
        if a.fdp.ConsumeBool():
            args.append(a.array(i64, a.length(q)))
        _columns.lookup(*args)

    def group(a: Args):
        _columns.group(a.array(i32), a.int(I64_EDGES, 64) if a.fdp.ConsumeBool() else a.n())

    def order_facts(a: Args):
        lines, n = a.n(), a.n()
        _columns.order_facts(a.array(i64, lines), a.array(i64, a.length(lines)), a.array(i64, n),
                             a.array(i64, a.length(n)), a.array(i64, a.length(n)))

    def nondecreasing(a: Args):
        _columns.nondecreasing(a.array(i64))

    def add_to_slices(a: Args):
        s = a.n()
        _columns.add_to_slices(a.array(i64), a.array(i64, s), a.array(i64, a.length(s)), a.array(i64, a.length(s)))

    def remap_kinds(a: Args):
        n = a.n()
        _columns.remap_kinds(a.array(u8, n), a.array(i64, a.length(n)), a.fdp.ConsumeIntInRange(-1, 8),
                             a.array(i64), a.fdp.ConsumeIntInRange(-1, 8), a.array(i64))

    def std_sort(a: Args):
        _derive.std_sort(a.array(i64))

    def pair_offload(a: Args):
        n = a.n()
        kinds = np.array([a.fdp.ConsumeIntInRange(-1, 3) for _ in range(n)], i64)
        labels = np.array([a.fdp.ConsumeIntInRange(0, 4) if a.fdp.ConsumeIntInRange(0, 7) else a.int(I64_EDGES, 64)
                           for _ in range(n)], i64)
        _derive.pair_offload(labels, kinds, a.array(i64, a.length(n)), a.array(i64, a.length(n)),
                             a.int(I64_EDGES, 64) if a.fdp.ConsumeBool() else a.n(8))

    def parents(a: Args):
        n = a.n()
        start = np.sort(a.array(i64, n))
        _nesting.parents(start, a.array(i64, a.length(n)), np.empty(a.length(n), i64))

    def depths(a: Args):
        n = a.n()
        parent = np.array([a.fdp.ConsumeIntInRange(-2, n + 1) if a.fdp.ConsumeIntInRange(0, 7)
                           else a.int(I64_EDGES, 64) for _ in range(n)], i64)
        _nesting.depths(parent, np.empty(a.length(n), i64))

    def spread_min(a: Args):
        n = a.n()
        order = a.array(i64) if a.fdp.ConsumeBool() else None
        _nesting.spread_min(a.array(i32, n), a.array(i32, a.length(n)), order)

    def json_events(a: Args):
        n, names = a.n(), a.n(8)
        tails = a.text()
        _trace_json.events(a.array(u32, n), a.array(u32, a.length(n)), a.array(i64, a.length(n)),
                           a.array(i64, a.length(n)), a.array(i32, a.length(n)), tails,
                           a.array(i64, a.length(names + 1)), a.int(I64_EDGES, 64) if a.fdp.ConsumeBool() else 0,
                           a.int(I64_EDGES, 64) if a.fdp.ConsumeBool() else n, a.fdp.ConsumeBool())

    def json_flows(a: Args):
        n = a.n()
        _trace_json.flows(a.array(u32, n), a.array(u32, a.length(n)), a.array(i64, a.length(n)),
                          a.array(u32, a.length(n)), a.array(u32, a.length(n)), a.array(i64, a.length(n)),
                          a.array(i64, a.length(n)), a.text(), a.array(i64), a.int(I64_EDGES, 64))

    def json_counters(a: Args):
        n = a.n()
        _trace_json.counters(a.array(u32, n), a.array(i64, a.length(n)), a.array(i64, a.length(n)),
                             a.array(f64, a.length(n)), a.text(), a.array(i64))

    def json_us(a: Args):
        _trace_json.us(a.int(I64_EDGES, 64))

    def hash64(a: Args):
        _highway.hash64(a.fdp.ConsumeBytes(a.n(200)))

    def wire(a: Args):
        buf = a.fdp.ConsumeBytes(a.n(200))
        ranges = [(a.int(I64_EDGES, 64) if a.fdp.ConsumeIntInRange(0, 3) == 0 else a.n(len(buf)),
                   a.int(I64_EDGES, 64) if a.fdp.ConsumeIntInRange(0, 3) == 0 else a.n(len(buf)))
                  for _ in range(a.n(3))]
        which = a.fdp.ConsumeIntInRange(0, 2)
        if which == 0:
            _wire.scan(buf)
        elif which == 1:
            _wire.count_lines(buf, ranges, a.fdp.ConsumeIntInRange(-1, 3))
        else:
            _wire.decode_planes(buf, ranges, a.fdp.ConsumeIntInRange(-1, 3))

    return [lookup, group, order_facts, nondecreasing, add_to_slices, remap_kinds, std_sort, pair_offload,
            parents, depths, spread_min, json_events, json_flows, json_counters, json_us, hash64, wire]


def call_one(data: bytes, calls) -> None:
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    call = calls[fdp.ConsumeIntInRange(0, len(calls) - 1)]
    try:
        call(Args(fdp))
    except REFUSALS:
        pass


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, help="stop after this many seconds (libFuzzer -max_total_time)")
    p.add_argument("--runs", type=int, help="stop after this many inputs (libFuzzer -runs)")
    p.add_argument("--corpus", help="corpus folder (default: a fresh one seeded from the fixtures)")
    a, rest = p.parse_known_args(argv)
    try:
        import atheris
    except ImportError:
        print("fuzz_c: atheris is not installed (pip install 'tputui[fuzz]'); fuzz campaign skipped")
        return 0
    out = pathlib.Path(storage.cache_root()) / "fuzz-findings"
    out.mkdir(parents=True, exist_ok=True)
    corpus = pathlib.Path(a.corpus) if a.corpus else pathlib.Path(tempfile.mkdtemp(prefix="tputui-fuzz-c-"))
    if not any(corpus.glob("*")):
        rng = random.Random(0)
        found = riegeli_seeds(rng)
        for i, data in enumerate(found):
            (corpus / f"riegeli-{i:03d}").write_bytes(bytes([RIEGELI]) + data)
        for i in range(64):
            (corpus / f"call-{i:03d}").write_bytes(bytes([CALL]) + rng.randbytes(256))
        print(f"fuzz_c: {len(found)} riegeli seeds and 64 call seeds in {corpus}")
    args = [sys.argv[0], str(corpus), f"-artifact_prefix={out}{os.sep}", "-rss_limit_mb=2048", "-timeout=10",
            "-max_len=65536"]
    if a.seconds:
        args.append(f"-max_total_time={a.seconds}")
    if a.runs:
        args.append(f"-runs={a.runs}")
    calls = _calls()
    logging.getLogger("tputui").setLevel(logging.ERROR)  # skipped regions are ordinary here

    def one_input(data: bytes) -> None:
        if not data:
            return
        if data[0] % 2 == RIEGELI:
            read_riegeli_file(data[1:])
        else:
            call_one(data[1:], calls)

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if data and data[0] % 2 == RIEGELI and rng.random() < 0.7:
            return (data[:1] + mutate_riegeli(data[1:], rng))[:max_size]
        return atheris.Mutate(data, max_size)

    atheris.Setup(args + rest, one_input, custom_mutator=custom_mutator)
    with atheris.instrument_imports(include=["tputui.data.riegeli", "tputui.data.riegeli_xspace",
                                             "tputui.data.riegeli_layout", "tputui.data.xspace_merge"]):
        from tputui.data import riegeli, riegeli_layout, riegeli_xspace, xspace_merge  # noqa: F401
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
