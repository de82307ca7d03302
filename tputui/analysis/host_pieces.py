"""A giant TPU host's op stats in pieces: memory follows a piece, not the host.

A `.xplane.pb` host file of PIECE_MIN_BYTES or more with TensorCore planes is mapped as
- the host piece: every plane but the TensorCores (host threads, /host:metadata, ...), decoded
  first; it gives op_stats.HostPart, whose launch groups (XProf's event grouping, once per host)
  every TensorCore's steps need;
- device pieces: whole chips' TensorCore planes (a chip's duty cycle spans its cores), packed up
  to PIECE_TARGET_BYTES, each decoded alone into an op_stats.DevicePart;
then op_stats.assemble_tpu_host combines the parts in plane order, exactly as one reading of the
whole host would (tests/test_host_pieces.py checks every tool's output on every TPU fixture).

Only the planes of one piece are decoded at a time (the C decoder skips the others), and no
whole-host frame exists. Device pieces run in parallel: the host map's lanes (this process and
its workers) take them like hosts.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tputui.analysis import op_stats
from tputui.analysis.op_stats import DevicePart, HostOpStats, HostPart
from tputui.data import pbwire
from tputui.data.cache import load_frame
from tputui.data.plane_directory import PlaneEntry, plane_directory, plane_stat_bytes
from tputui.data.runs import HostFile
from tputui.data.storage import is_remote, read

PIECE_MIN_BYTES_ENV = "TPUTUI_PIECE_MIN_MB"
PIECE_MIN_BYTES = 512 << 20  # hosts below this are read whole: one decode is cheaper than several scans
PIECE_TARGET_BYTES = 256 << 20  # chips are packed into a device piece up to this many bytes
_TENSOR_CORE = re.compile(r"^/device:TPU:\d+$")  # as op_metrics.tensor_core_planes


@dataclass(frozen=True)
class Piece:
    """Planes of one host file decoded together: their names and places in the file."""

    names: tuple[str, ...]
    index: tuple[int, ...]
    device: bool  # TensorCore planes (a DevicePart), else the host piece (the HostPart)
    size: int

    def keep(self) -> Callable[[str], bool]:
        wanted = frozenset(self.names)
        return lambda name: name in wanted


def min_bytes() -> int:
    env = os.environ.get(PIECE_MIN_BYTES_ENV)
    return int(float(env) * (1 << 20)) if env else PIECE_MIN_BYTES


def plan(hf: HostFile, target: int | None = None) -> list[Piece] | None:
    """The pieces of a host file, host piece first; None when it is read whole (under
    PIECE_MIN_BYTES, riegeli, remote, no TensorCore, repeated plane names, no C decoder)."""
    target = PIECE_TARGET_BYTES if target is None else target
    if hf.format != "pb" or is_remote(hf.path) or hf.size < min_bytes():
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
    del data
    rest = [p for p in planes if not _TENSOR_CORE.match(p.name)]
    pieces = [_piece(rest, device=False)]
    packed: list[PlaneEntry] = []
    for chip in sorted(chips.values(), key=lambda ps: ps[0].index):
        if packed and sum(p.size for p in packed + chip) > target:
            pieces.append(_piece(packed, device=True))
            packed = []
        packed += chip
    if packed:
        pieces.append(_piece(packed, device=True))
    return pieces


def _piece(planes: list[PlaneEntry], device: bool) -> Piece:
    planes = sorted(planes, key=lambda p: p.index)
    return Piece(tuple(p.name for p in planes), tuple(p.index for p in planes), device, sum(p.size for p in planes))


def _chip_key(data, p: PlaneEntry) -> object:
    """The duty cycle's chip of a TensorCore (op_metrics._chip_of, read from the file's bytes)."""
    blob = plane_stat_bytes(data, p, "core_details")
    if blob is None:
        return ("plane", p.index)
    try:
        return ("chip", pbwire.varint_fields(blob).get(4, 0))
    except pbwire.WireError:
        return ("plane", p.index)


def map_piece(hf: HostFile, piece: Piece, launches: dict | None = None) -> HostPart | DevicePart:
    """One piece's part (a worker runs this): only the piece's planes are decoded."""
    frame = load_frame(hf, piece.keep(), use_cache=False, write_cache=False)
    index = list(piece.index)
    if piece.device:
        return op_stats.device_part(frame, launches or {}, index)
    return op_stats.host_part(frame, index)


def map_in_pieces(hf: HostFile, pieces: list[Piece],
                  run_parts: Callable[[list[Piece], dict], Iterator[DevicePart]] | None = None) -> HostOpStats:
    """A host's op stats from its pieces: the host piece here, then the device pieces through
    `run_parts` (default: one after another, here)."""
    host = map_piece(hf, pieces[0])
    assert isinstance(host, HostPart)
    devices = pieces[1:]
    if run_parts is None:
        parts = [map_piece(hf, p, host.launches) for p in devices]
    else:
        parts = list(run_parts(devices, host.launches))
    try:
        return op_stats.assemble_tpu_host(hf.host, host, parts)  # type: ignore[arg-type]
    except op_stats.PiecesDisagree:
        return op_stats.map_host(load_frame(hf, use_cache=False, write_cache=False), hf.host)
