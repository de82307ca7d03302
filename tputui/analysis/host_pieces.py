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
PIECE_MIN_BYTES = 512 << 20  # hosts below this are read whole: one decode is cheaper than several scans
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
PIECES_MEMORY_BYTES = 1536 << 20  # pieces in flight at once, by memory_estimate: the map stays near 2 GB
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
    target = PIECE_TARGET_BYTES if target is None else target
    if not read_in_pieces(hf):
        return None
    data = read(hf)
    planes = plane_directory(data)
    if not planes or len({p.name for p in planes}) != len(planes):
        return None
    cores = [p for p in planes if _TENSOR_CORE.match(p.name)]
    if not cores:
        return None
    chips: dict[object, list[PlaneEntry]] = {}
    for p in cores:
        chips.setdefault(_chip_key(data, p), []).append(p)
    host = next((p for p in planes if p.name == schema.HOST_PLANE), None)
    rest = [p for p in planes if not _TENSOR_CORE.match(p.name)]
    pieces = [Piece("meta", tuple(p.name for p in rest), tuple(p.index for p in rest),
                    sum(p.size for p in rest if p is not host))]
    if host is not None:
        packed: list[tuple[int, int]] = []
        for i, size in enumerate(line_sizes(data, host)):
            if packed and sum(n for _, n in packed) + size > target:
                pieces.append(_threads(host, packed))
                packed = []
            packed.append((i, size))
        if packed:
            pieces.append(_threads(host, packed))
    del data
    group: list[PlaneEntry] = []
    for chip in sorted(chips.values(), key=lambda ps: ps[0].index):
        if group and sum(p.size for p in group + chip) > target:
            pieces.append(_device(group))
            group = []
        group += chip
    if group:
        pieces.append(_device(group))
    return pieces


def _threads(host: PlaneEntry, lines: list[tuple[int, int]]) -> Piece:
    return Piece("threads", (host.name,), (host.index,), sum(n for _, n in lines), tuple(i for i, _ in lines))


def _device(planes: list[PlaneEntry]) -> Piece:
    planes = sorted(planes, key=lambda p: p.index)
    return Piece("device", tuple(p.name for p in planes), tuple(p.index for p in planes), sum(p.size for p in planes))


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
    index = list(piece.index)
    if piece.kind == "device":
        frame = load_frame(hf, piece.keep(), use_cache=False, write_cache=False)
        return op_stats.device_part(frame, launches or {}, index)
    data = read(hf)
    planes = {p.name: p for p in plane_directory(data) or []}
    if piece.kind == "threads":
        raw = subset_xspace(data, [(planes[piece.names[0]], list(piece.lines))], space_texts(data))
    else:
        raw = subset_xspace(data, [(planes[n], [] if n == schema.HOST_PLANE else None) for n in piece.names],
                            space_texts(data))
    del data, planes
    frame = decode(raw)
    del raw
    if piece.kind == "threads":
        return op_stats.threads_part(frame, grouping)
    return op_stats.host_part(frame, index)


# (pieces, launches, grouping) -> their parts, in any order
RunParts = Callable[[list[Piece], dict | None, bool], Iterator[Part]]


def _here(hf: HostFile) -> RunParts:
    return lambda pieces, launches, grouping: (map_piece(hf, p, launches, grouping) for p in pieces)


# --- a merged riegeli host: pieces cut from its decoded columns ------------------------------------
def read_merged_in_pieces(hf: HostFile, use_cache: bool) -> bool:
    """A riegeli host big enough for pieces: its merge is cached (columns on disk, mapped), and the
    pieces are cut from those columns instead of from the file (plan_merged)."""
    return hf.format == "riegeli" and use_cache and not is_remote(hf.path) and hf.size >= min_bytes()


# A piece cut from decoded columns weighs about this much per event (and per event stat) in the
# units Piece.size counts (serialized bytes), for the packing and the memory estimate.
_BYTES_PER_EVENT, _BYTES_PER_STAT = 14, 12


def plan_merged(frame: XSpaceFrame, target: int | None = None) -> list[Piece] | None:
    """The pieces of a host from its decoded frame (plan's rules; None: read it whole)."""
    target = PIECE_TARGET_BYTES if target is None else target
    raw = frame.raw
    names = list(raw.plane_name)
    if len(set(names)) != len(names) or not owners_sorted(raw):
        return None
    cores = [i for i, n in enumerate(names) if _TENSOR_CORE.match(n)]
    if not cores:
        return None
    owner = raw.event_stats.owner
    line_end = raw.line_first_event + raw.line_num_events
    line_stats = np.searchsorted(owner, line_end) - np.searchsorted(owner, raw.line_first_event)
    line_size = raw.line_num_events * _BYTES_PER_EVENT + line_stats * _BYTES_PER_STAT

    def size(lines: np.ndarray) -> int:
        return int(line_size[lines].sum())

    host = frame.plane_index(schema.HOST_PLANE)
    rest = [i for i in range(len(names)) if i not in cores]
    pieces = [Piece("meta", tuple(names[i] for i in rest), tuple(rest),
                    sum(size(np.flatnonzero(raw.line_plane == i)) for i in rest if i != host))]
    if host is not None:
        packed: list[tuple[int, int]] = []
        for pos, ln in enumerate(np.flatnonzero(raw.line_plane == host).tolist()):
            n = int(line_size[ln])
            if packed and sum(k for _, k in packed) + n > target:
                pieces.append(Piece("threads", (names[host],), (host,), sum(k for _, k in packed), tuple(i for i, _ in packed)))
                packed = []
            packed.append((pos, n))
        if packed:
            pieces.append(Piece("threads", (names[host],), (host,), sum(k for _, k in packed), tuple(i for i, _ in packed)))
    chips: dict[object, list[int]] = {}
    for p in cores:
        chip = om.chip_of(frame, p)
        chips.setdefault(("chip", chip) if chip is not None else ("plane", p), []).append(p)
    group: list[int] = []
    for chip_planes in sorted(chips.values(), key=lambda ps: ps[0]):
        if group and size(np.flatnonzero(np.isin(raw.line_plane, group + chip_planes))) > target:
            pieces.append(_merged_device(names, group, size(np.flatnonzero(np.isin(raw.line_plane, group)))))
            group = []
        group += chip_planes
    if group:
        pieces.append(_merged_device(names, group, size(np.flatnonzero(np.isin(raw.line_plane, group)))))
    return pieces


def _merged_device(names: list[str], planes: list[int], size: int) -> Piece:
    planes = sorted(planes)
    return Piece("device", tuple(names[i] for i in planes), tuple(planes), size)


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
        return op_stats.map_host(load_frame(hf, use_cache=hf.format == "riegeli", write_cache=False), hf.host)
