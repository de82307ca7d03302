"""A giant TPU host's op stats in pieces: memory follows a piece, not the host.

A local `.xplane.pb` host file of PIECE_MIN_BYTES or more with TensorCore planes is mapped as
- the meta piece: every plane but the TensorCores and the host threads (/host:metadata, ...),
  plus the `/host:CPU` plane's own fields without its lines;
- thread pieces: consecutive `/host:CPU` lines (threads) packed up to PIECE_TARGET_BYTES, each
  giving its framework ops and the few events XProf's grouping needs (group_extract.py);
- device pieces: whole chips' TensorCore planes (a chip's duty cycle spans its cores), packed up
  to PIECE_TARGET_BYTES.
The meta and thread pieces come first: their parts make the HostPart, whose launch groups (the
host's grouping, computed once from the thread pieces' extracts) every TensorCore needs. Then
op_stats.assemble_tpu_host combines the parts in plane order, exactly as one reading of the whole
host would (tests/test_host_pieces.py checks every tool's output on every TPU fixture).

Only one piece's planes or lines are decoded at a time, and no whole-host frame exists; pieces
of a stage run in parallel on the host map's lanes (this process and its workers).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from tputui.analysis import op_metrics as om
from tputui.analysis import op_stats
from tputui.analysis.op_stats import DevicePart, HostOpStats, HostPart, ThreadsPart
from tputui.data import pbwire, schema
from tputui.data.cache import load_frame
from tputui.data.plane_directory import PlaneEntry, line_sizes, plane_directory, plane_stat_bytes, space_texts, subset_xspace
from tputui.data.raw_subset import owners_sorted, release_pages, subset
from tputui.data.runs import HostFile
from tputui.data.storage import is_remote, read
from tputui.data.xspace import XSpaceFrame, decode

PIECE_MIN_BYTES_ENV = "TPUTUI_PIECE_MIN_MB"
# Hosts below this are read whole: one decode is cheaper than several scans. At 325 MB (x400)
# pieces already win: overview export 5.6 s / 792 MB tree RSS against 9.9 s / 1,391 MB whole (page
# faults of the whole frame), the app through the trace viewer 1.16 GB against 2.48 GB at its peak.
PIECE_MIN_BYTES = 256 << 20
PIECE_TARGET_BYTES = 128 << 20  # chips are packed into a device piece up to this many bytes
_TENSOR_CORE = re.compile(r"^/device:TPU:\d+$")  # as op_metrics.tensor_core_planes


@dataclass(frozen=True)
class Piece:
    """Planes of one host file decoded together: their names and places in the file; a thread
    piece holds only some lines of its one plane."""

    kind: str  # "meta" | "threads" | "device"
    names: tuple[str, ...]
    index: tuple[int, ...]
    size: int
    lines: tuple[int, ...] = ()  # a thread piece's lines (their places in the host plane)

    @property
    def device(self) -> bool:
        return self.kind == "device"

    def keep(self) -> Callable[[str], bool]:
        wanted = frozenset(self.names)
        return lambda name: name in wanted


def min_bytes() -> int:
    env = os.environ.get(PIECE_MIN_BYTES_ENV)
    return int(float(env) * (1 << 20)) if env else PIECE_MIN_BYTES


PIECES_MEMORY_ENV = "TPUTUI_PIECES_MEMORY_MB"
PIECES_MEMORY_BYTES = 1280 << 20  # pieces in flight at once, by memory_estimate: the map stays under 2 GB
# A piece's peak memory over its serialized size, measured on the x2000 TPU host: ~5.7x for a
# piece of host threads, ~6x for a TensorCore plane (its events carry several stats each).
_PIECE_PEAK_PER_BYTE = 6


def memory_budget() -> int:
    env = os.environ.get(PIECES_MEMORY_ENV)
    return int(float(env) * (1 << 20)) if env else PIECES_MEMORY_BYTES


def memory_estimate(piece: Piece) -> int:
    return _PIECE_PEAK_PER_BYTE * piece.size


def read_in_pieces(hf: HostFile) -> bool:
    """Whether the host's op stats may be read in pieces (plan decides, from the file's planes)."""
    return hf.format == "pb" and not is_remote(hf.path) and hf.size >= min_bytes()


def plan(hf: HostFile, target: int | None = None) -> list[Piece] | None:
    """The pieces of a host file, meta piece first, then thread pieces, then device pieces; None
    when it is read whole (under PIECE_MIN_BYTES, riegeli, remote, no TensorCore, repeated plane
    names, no C decoder)."""
    if not read_in_pieces(hf):
        return None
    data = read(hf)
    planes = plane_directory(data)
    if not planes or len({p.name for p in planes}) != len(planes):
        return None
    cores = [p.index for p in planes if _TENSOR_CORE.match(p.name)]
    host = next((p for p in planes if p.name == schema.HOST_PLANE), None)
    return _pack([p.name for p in planes], [p.size for p in planes], _chips(cores, lambda i: _chip_key(data, planes[i])),
                 host.index if host else None, line_sizes(data, host) if host else [], target)


def _chips(cores: list[int], chip_of: Callable[[int], object]) -> list[list[int]]:
    """The TensorCores (plane indices) grouped by chip, in the order of their first core."""
    chips: dict[object, list[int]] = {}
    for p in cores:
        chips.setdefault(chip_of(p), []).append(p)
    return sorted(chips.values(), key=lambda ps: ps[0])


def _packed(sizes: list[int], target: int) -> Iterator[list[int]]:
    """Consecutive items (their places) packed into groups of up to `target` (one at least)."""
    group: list[int] = []
    total = 0
    for i, n in enumerate(sizes):
        if group and total + n > target:
            yield group
            group, total = [], 0
        group.append(i)
        total += n
    if group:
        yield group


def _pack(names: list[str], plane_size: list[int], chips: list[list[int]], host: int | None,
          host_lines: list[int], target: int | None) -> list[Piece] | None:
    """Pieces of a host from its planes' names and sizes, its chips and its host plane's line
    sizes: the meta piece, then consecutive host lines and whole chips packed up to `target`."""
    if not chips:
        return None
    target = PIECE_TARGET_BYTES if target is None else target
    cores = {p for chip in chips for p in chip}
    rest = [i for i in range(len(names)) if i not in cores]
    pieces = [Piece("meta", tuple(names[i] for i in rest), tuple(rest), sum(plane_size[i] for i in rest if i != host))]
    if host is not None:
        for lines in _packed(host_lines, target):
            pieces.append(Piece("threads", (names[host],), (host,), sum(host_lines[i] for i in lines), tuple(lines)))
    chip_sizes = [sum(plane_size[p] for p in chip) for chip in chips]
    for group in _packed(chip_sizes, target):
        planes = sorted(p for c in group for p in chips[c])
        pieces.append(Piece("device", tuple(names[p] for p in planes), tuple(planes), sum(plane_size[p] for p in planes)))
    return pieces


def _chip_key(data, p: PlaneEntry) -> object:
    """The duty cycle's chip of a TensorCore (op_metrics._chip_of, read from the file's bytes)."""
    blob = plane_stat_bytes(data, p, "core_details")
    if blob is None:
        return ("plane", p.index)
    try:
        return ("chip", pbwire.varint_fields(blob).get(4, 0))
    except pbwire.WireError:
        return ("plane", p.index)


Part = HostPart | ThreadsPart | DevicePart


def map_piece(hf: HostFile, piece: Piece, launches: dict | None = None, grouping: bool = True) -> Part:
    """One piece's part (a worker runs this): only the piece's planes, or lines, are decoded.
    `launches`: the host's launch groups (device pieces); `grouping`: whether thread pieces
    extract the grouping's events (HostPart.may_group)."""
    frame = piece_frame(hf, piece)
    if piece.kind == "device":
        return op_stats.device_part(frame, launches or {}, list(piece.index))
    if piece.kind == "threads":
        return op_stats.threads_part(frame, grouping)
    return op_stats.host_part(frame, list(piece.index))


def piece_frame(hf: HostFile, piece: Piece) -> XSpaceFrame:
    """The frame of a piece's planes (a thread piece: its lines of the host plane; the meta piece:
    the host plane without lines), decoded from the file's bytes alone."""
    if piece.kind == "device":
        return load_frame(hf, piece.keep(), use_cache=False, write_cache=False)
    data = read(hf)
    planes = {p.name: p for p in plane_directory(data) or []}
    if piece.kind == "threads":
        raw = subset_xspace(data, [(planes[piece.names[0]], list(piece.lines))], space_texts(data))
    else:
        raw = subset_xspace(data, [(planes[n], [] if n == schema.HOST_PLANE else None) for n in piece.names],
                            space_texts(data))
    del data, planes
    return decode(raw)


# (pieces, launches, grouping) -> their parts, in any order
RunParts = Callable[[list[Piece], dict | None, bool], Iterator[Part]]


def _here(hf: HostFile) -> RunParts:
    return lambda pieces, launches, grouping: (map_piece(hf, p, launches, grouping) for p in pieces)


# --- a merged riegeli host: pieces cut from its decoded columns ------------------------------------
def read_merged_in_pieces(hf: HostFile, use_cache: bool) -> bool:
    """A riegeli host big enough for pieces: its merge is cached (columns on disk, mapped), and the
    pieces are cut from those columns instead of from the file (plan_merged)."""
    # Riegeli chunks are compressed (brotli, zstd: ~4x on profiles): the threshold is on the content.
    return hf.format == "riegeli" and use_cache and not is_remote(hf.path) and 4 * hf.size >= min_bytes()


# A piece cut from decoded columns weighs about this much per event (and per event stat) in the
# units Piece.size counts (serialized bytes), for the packing and the memory estimate.
_BYTES_PER_EVENT, _BYTES_PER_STAT = 14, 12


def plan_merged(frame: XSpaceFrame, target: int | None = None) -> list[Piece] | None:
    """The pieces of a host from its decoded frame (plan's rules; None: read it whole)."""
    raw = frame.raw
    names = list(raw.plane_name)
    if len(set(names)) != len(names) or not owners_sorted(raw):
        return None
    owner = raw.event_stats.owner
    line_end = raw.line_first_event + raw.line_num_events
    line_stats = np.searchsorted(owner, line_end) - np.searchsorted(owner, raw.line_first_event)
    line_size = raw.line_num_events * _BYTES_PER_EVENT + line_stats * _BYTES_PER_STAT
    plane_size = np.bincount(raw.line_plane, weights=line_size, minlength=len(names)).astype(np.int64).tolist()
    cores = [i for i, n in enumerate(names) if _TENSOR_CORE.match(n)]

    def chip(p: int) -> object:
        c = om.chip_of(frame, p)
        return ("chip", c) if c is not None else ("plane", p)

    host = frame.plane_index(schema.HOST_PLANE)
    host_lines = line_size[raw.line_plane == host].tolist() if host is not None else []
    return _pack(names, plane_size, _chips(cores, chip), host, host_lines, target)


def merged_piece(frame: XSpaceFrame, piece: Piece, launches: dict | None = None, grouping: bool = True) -> Part:
    """One piece's part, cut from the host's decoded frame (plan_merged)."""
    raw = frame.raw
    host = frame.plane_index(schema.HOST_PLANE)
    if piece.kind == "threads":
        sub = subset(raw, list(piece.index), {piece.index[0]: list(piece.lines)})
    elif piece.kind == "meta":
        sub = subset(raw, list(piece.index), {host: []} if host is not None else None)
    else:
        sub = subset(raw, list(piece.index))
    part_frame = XSpaceFrame(sub)
    index = list(piece.index)
    if piece.kind == "device":
        return op_stats.device_part(part_frame, launches or {}, index)
    if piece.kind == "threads":
        return op_stats.threads_part(part_frame, grouping)
    return op_stats.host_part(part_frame, index)


def map_merged_in_pieces(hf: HostFile, frame: XSpaceFrame, pieces: list[Piece]) -> HostOpStats:
    """A host's op stats from pieces cut from its decoded frame, one after another here; the pages
    of the frame's mapped columns a piece read are let go after it (memory follows a piece)."""

    def run(todo: list[Piece], launches: dict | None, grouping: bool) -> Iterator[Part]:
        for piece in todo:
            part = merged_piece(frame, piece, launches, grouping)
            release_pages(frame.raw)
            yield part

    try:
        return map_in_pieces(hf, pieces, run)
    finally:
        release_pages(frame.raw)


def map_in_pieces(hf: HostFile, pieces: list[Piece], run_parts: RunParts | None = None) -> HostOpStats:
    """A host's op stats from its pieces: the meta and thread pieces, then the device pieces, each
    stage through `run_parts` (default: one after another, here)."""
    run = run_parts or _here(hf)
    meta = next(p for p in run([pieces[0]], None, True) if isinstance(p, HostPart))
    threads = [p for p in run([p for p in pieces if p.kind == "threads"], None, meta.may_group)
               if isinstance(p, ThreadsPart)]
    host = op_stats.host_part_of(meta, threads)
    del threads  # the grouping's extracts are done with
    devices = [p for p in run([p for p in pieces if p.device], host.launches, True) if isinstance(p, DevicePart)]
    try:
        return op_stats.assemble_tpu_host(hf.host, host, devices)
    except op_stats.PiecesDisagree:
        return op_stats.map_host(load_frame(hf, use_cache=hf.format == "riegeli", write_cache=False, full_check=True),
                                 hf.host)
