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
                 (by the device stats) see the same ops

The records follow the Riegeli/records format spec (tputui/data/riegeli_writer.py), one record
per simple chunk, as XLA's profiler writes them.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

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


def tile(space, k: int) -> xplane_pb2.XSpace:
    """`k` copies of every line's events, copy c moved c periods later (tile_period), its
    `device_offset_ps` stat too."""
    out = xplane_pb2.XSpace()
    out.CopyFrom(space)
    period = tile_period(space)
    for plane in out.planes:
        dev_off = {key for key, m in plane.stat_metadata.items() if m.name == DEVICE_OFFSET_PS}
        for line in plane.lines:
            events = list(line.events)
            for c in range(1, k):
                for ev in events:
                    e = line.events.add()
                    e.CopyFrom(ev)
                    if e.WhichOneof("data") != "num_occurrences":  # an aggregate has no time
                        e.offset_ps += c * period
                    for st in e.stats:
                        if st.metadata_id not in dev_off:
                            continue
                        kind = st.WhichOneof("value")
                        if kind == "uint64_value":
                            st.uint64_value += c * period
                        elif kind == "int64_value":
                            st.int64_value += c * period
    return out


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
    if a.tile > 1:
        space = tile(space, a.tile)
    records = split_planes(space, a.records) if a.split == "planes" else split_lines(space, a.records)
    dst = pathlib.Path(a.dst)
    with open(dst, "wb") as f:
        w = RecordWriter(f, a.compression)
        for r in records:
            w.write_chunk([r.SerializeToString()])
        w.pad_to_block()  # XLA pads to 64 KiB
    note = ""
    if a.corrupt:
        note = f", byte {corrupt_middle_chunk(dst)} corrupted"
    print(f"{dst}: {len(records)} records, {a.compression}, {dst.stat().st_size} bytes{note}")


if __name__ == "__main__":
    main()
