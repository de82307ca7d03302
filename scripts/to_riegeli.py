"""Write an .xplane.pb profile as an .xplane.riegeli file (test fixtures, benches).

usage: python scripts/to_riegeli.py SRC.xplane.pb DST.xplane.riegeli [--records N]
           [--compression brotli|zstd|none] [--split planes|lines] [--corrupt] [--tile K]

--split planes   one record per group of whole planes (N groups)
--split lines    like XLA's chunked writer: every record carries each plane's metadata and a
                 share of its lines; long lines are cut into pieces by events, each later
                 piece re-based on its own timestamp (so readers must align line timestamps)
--corrupt        flip one byte in the data of the middle chunk (readers skip that record)
--tile K         every line's events K times, copy c shifted c periods later (one period for
                 the whole profile: its span plus 10%), each copy's `device_offset_ps` stat
                 shifted with it, as ../shared/tools/gen/tpu_scaled.py does: device and host
                 clocks still agree, so XProf (which nests device ops by event time) and tputui
                 (by the device stats) see the same ops. Streamed: each copy is split into
                 --records records (K x N in all) and written before the next copy is made, so
                 memory follows the source, not the output (the records merge back into each
                 line's K copies in order, as a long capture's records do)

The records follow the Riegeli/records format spec (tputui/data/riegeli_writer.py), one record
per simple chunk, as XLA's profiler writes them.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tputui.data.riegeli import BLOCK_HEADER_SIZE, BLOCK_SIZE, CHUNK_HEADER_SIZE, RecordReader  # noqa: E402
from tputui.data.riegeli_writer import RecordWriter  # noqa: E402
from tputui.data.schema import STAT_DEVICE_OFFSET_PS as DEVICE_OFFSET_PS  # noqa: E402
from tputui.proto import xplane_pb2  # noqa: E402


def _base_space(src) -> xplane_pb2.XSpace:
    out = xplane_pb2.XSpace()
    out.hostnames.extend(src.hostnames)
    out.errors.extend(src.errors)
    out.warnings.extend(src.warnings)
    return out


def split_planes(space, n: int) -> list[xplane_pb2.XSpace]:
    groups = [_base_space(space) for _ in range(max(1, min(n, len(space.planes))))]
    per = -(-len(space.planes) // len(groups))
    for i, plane in enumerate(space.planes):
        groups[i // per].planes.add().CopyFrom(plane)
    return [g for g in groups if g.planes]


def _plane_shell(plane) -> xplane_pb2.XPlane:
    shell = xplane_pb2.XPlane(id=plane.id, name=plane.name)
    for k, v in plane.event_metadata.items():
        shell.event_metadata[k].CopyFrom(v)
    for k, v in plane.stat_metadata.items():
        shell.stat_metadata[k].CopyFrom(v)
    shell.stats.extend(plane.stats)
    return shell


def split_lines(space, n: int) -> list[xplane_pb2.XSpace]:
    records = [_base_space(space) for _ in range(n)]
    for plane in space.planes:
        pieces = []
        for line in plane.lines:
            k = max(1, min(n, len(line.events) // 50))  # only long lines are cut
            per = -(-len(line.events) // k) if line.events else 0
            for j in range(k):
                piece = xplane_pb2.XLine(id=line.id, display_id=line.display_id, name=line.name,
                                         display_name=line.display_name, timestamp_ns=line.timestamp_ns,
                                         duration_ps=line.duration_ps)
                events = line.events[j * per:(j + 1) * per]
                piece.events.extend(events)
                if j and events and events[0].offset_ps >= 1000:
                    shift_ns = events[0].offset_ps // 1000  # the later piece starts at its first event
                    piece.timestamp_ns = line.timestamp_ns + shift_ns
                    for ev in piece.events:
                        if ev.WhichOneof("data") != "num_occurrences":
                            ev.offset_ps -= shift_ns * 1000
                pieces.append(piece)
        shells = [None] * n
        for i, piece in enumerate(pieces):
            r = i % n
            if shells[r] is None:
                shells[r] = records[r].planes.add()
                shells[r].CopyFrom(_plane_shell(plane))
            shells[r].lines.add().CopyFrom(piece)
        if not pieces:
            records[0].planes.add().CopyFrom(plane)
    return [r for r in records if r.planes]


def tile_period(space) -> int:
    """The shift between copies: the latest event end of any line (offsets only, as tpu_scaled.py
    measures it) plus 10%. One period for every line, so copies of a line and of the line it
    nests in (XLA Modules and XLA Ops) move together."""
    span = max((ev.offset_ps + ev.duration_ps for p in space.planes for ln in p.lines for ev in ln.events),
               default=0)
    return span + span // 10


def tiles(space, k: int) -> Iterator[xplane_pb2.XSpace]:
    """`space` `k` times, copy c with every event moved c periods later (tile_period), its
    `device_offset_ps` stat too (an aggregated event, with num_occurrences, has no time). One
    copy at a time: the same message, moved in place between copies, so memory follows the
    source, not k times it."""
    period = tile_period(space)
    moved = []  # per plane: (its events with a time, their device_offset_ps stats)
    for plane in space.planes:
        dev_off = {key for key, m in plane.stat_metadata.items() if m.name == DEVICE_OFFSET_PS}
        events = [ev for line in plane.lines for ev in line.events if ev.WhichOneof("data") != "num_occurrences"]
        stats = [(st, st.WhichOneof("value")) for line in plane.lines for ev in line.events for st in ev.stats
                 if st.metadata_id in dev_off] if dev_off else []
        moved.append((events, stats))
    for c in range(k):
        if c:
            for events, stats in moved:
                for ev in events:
                    ev.offset_ps += period
                for st, kind in stats:
                    if kind == "uint64_value":
                        st.uint64_value += period
                    elif kind == "int64_value":
                        st.int64_value += period
        yield space


def corrupt_middle_chunk(path: pathlib.Path) -> int:
    """Flip one data byte of the middle record chunk; returns its position."""
    data = bytearray(path.read_bytes())
    with open(path, "rb") as f:
        chunks = [c for c in RecordReader(f, str(path), len(data)).chunks() if c[0] == b"r"]
    _, _, _, payload, begin = chunks[len(chunks) // 2]
    pos = begin + CHUNK_HEADER_SIZE + len(payload) // 2
    while pos % BLOCK_SIZE < BLOCK_HEADER_SIZE + 8:  # a data byte, not a block header
        pos += BLOCK_HEADER_SIZE + 8
    data[pos] ^= 0x5A
    path.write_bytes(bytes(data))
    return pos


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--records", type=int, default=1)
    ap.add_argument("--compression", choices=("brotli", "zstd", "none"), default="brotli")
    ap.add_argument("--split", choices=("planes", "lines"), default="planes")
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--tile", type=int, default=1)
    a = ap.parse_args(argv)
    space = xplane_pb2.XSpace()
    space.ParseFromString(pathlib.Path(a.src).read_bytes())
    dst = pathlib.Path(a.dst)
    n = 0
    with open(dst, "wb") as f:
        w = RecordWriter(f, a.compression)
        for copy in tiles(space, a.tile):  # each copy's records written before the next copy is made
            for r in split_planes(copy, a.records) if a.split == "planes" else split_lines(copy, a.records):
                w.write_chunk([r.SerializeToString()])
                n += 1
        w.pad_to_block()  # XLA pads to 64 KiB
    note = ""
    if a.corrupt:
        note = f", byte {corrupt_middle_chunk(dst)} corrupted"
    print(f"{dst}: {n} records, {a.compression}, {dst.stat().st_size} bytes{note}")


if __name__ == "__main__":
    main()
