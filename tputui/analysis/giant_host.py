"""A giant host's planes for the tools beyond the op stats, without its whole frame (issue #28).

A host read in pieces for its op stats (host_pieces.plan: a local `.xplane.pb` over the pieces
threshold) is never decoded whole by any tool either. Each tool takes the cheapest exact way:
- the pieces themselves (host_pieces.piece_frame), one after another, reduced (summary.py);
- only the planes it reads, a few at a time (plane_frames: the hardware counters live on the
  device planes, each read apart);
- one frame of every plane with only some planes' lines (frame_with_lines: megascale reads one
  TPU plane's events and the others' names and stats).
A host read whole (small, riegeli, remote) keeps its whole frame (RunData.frame).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from tputui.analysis import host_pieces
from tputui.analysis.host_pieces import Piece
from tputui.data.cache import load_frame
from tputui.data.plane_directory import PlaneEntry, plane_directory, space_texts, subset_xspace
from tputui.data.run_data import RunData
from tputui.data.runs import LogdirError
from tputui.data.storage import read
from tputui.data.xspace import DecodeError, PlaneSelector, XSpaceFrame, decode_raw, plane_filter

T = TypeVar("T")


def pieces(run: RunData, host: str | None = None) -> list[Piece] | None:
    """The host's pieces when it is read in pieces (its whole frame never decoded), else None.
    A whole frame decoded already (the app's trace viewer) is read instead: it costs nothing more."""
    hf = run.host_file(host)
    if not host_pieces.read_in_pieces(hf) or run.has_frame(hf.host):
        return None
    return host_pieces.plan(hf)


def piece_frames(run: RunData, host: str | None, todo: list[Piece]) -> Iterator[tuple[Piece, XSpaceFrame]]:
    """Each piece with its frame, one decoded at a time."""
    hf = run.host_file(host)
    for piece in todo:
        yield piece, host_pieces.piece_frame(hf, piece)


def plane_frames(run: RunData, host: str | None, wanted: Callable[[str], bool],
                 target: int | None = None) -> Iterator[tuple[tuple[int, ...], XSpaceFrame]]:
    """The host's planes named as `wanted` says, in file order, in frames of consecutive planes
    packed up to `target` serialized bytes (PIECE_TARGET_BYTES; one plane at least); each with
    the planes' places in the file (a frame's plane i is the file's plane places[i])."""
    hf = run.host_file(host)
    planes = [p for p in plane_directory(read(hf)) or [] if wanted(p.name)]
    target = host_pieces.PIECE_TARGET_BYTES if target is None else target
    groups: list[list[int]] = []
    total = 0
    for i, p in enumerate(planes):
        if not groups or total + p.size > target:
            groups.append([])
            total = 0
        groups[-1].append(i)
        total += p.size
    for group in groups:
        names = frozenset(planes[i].name for i in group)
        # Yielded, not held here: the next frame is decoded after the caller let this one go.
        yield tuple(planes[i].index for i in group), load_frame(hf, names.__contains__, use_cache=False,
                                                                write_cache=False)


def over_planes(run: RunData, host: str | None, wanted: Callable[[str], bool],
                fn: Callable[[XSpaceFrame], T]) -> list[T]:
    """fn of each frame of plane_frames, in file order, one frame in memory at a time."""
    out = []
    for _, frame in plane_frames(run, host, wanted):
        out.append(fn(frame))
        del frame  # before the next one is decoded
    return out


def planes_without_lines(run: RunData, host: str | None, wanted: Callable[[str], bool] | None = None) -> XSpaceFrame:
    """The host's planes (those `wanted`) without their lines: names, stats and metadata, which
    say cheaply whether a tool has anything to read (kilobytes at any host size)."""
    hf = run.host_file(host)
    try:
        return XSpaceFrame(decode_raw(read(hf), wanted, lines=False))
    except DecodeError as e:
        raise LogdirError(f"{hf.path}: {e}") from None


def plane_lines(run: RunData, host: str | None, plane: str, lines: list[int]) -> XSpaceFrame:
    """The host's plane named `plane` with only the lines listed (their places in the plane;
    every other field of the plane kept); a frame with no plane when the file has none."""
    hf = run.host_file(host)
    data = read(hf)
    chosen: list[tuple[PlaneEntry, list[int] | None]] = [(p, lines) for p in plane_directory(data) or []
                                                         if p.name == plane]
    raw = subset_xspace(data, chosen, space_texts(data))
    del data
    try:
        return XSpaceFrame(decode_raw(raw))
    except DecodeError as e:
        raise LogdirError(f"{hf.path}: {e}") from None


def frame_with_lines(run: RunData, host: str | None, planes: PlaneSelector, lines_of: Callable[[str], bool]) -> XSpaceFrame:
    """The host's planes `planes` selects, in file order, with the lines only of those `lines_of`
    names (the others keep their names, stats and metadata)."""
    hf = run.host_file(host)
    data = read(hf)
    keep = plane_filter(planes) or (lambda name: True)
    chosen = [p for p in plane_directory(data) or [] if keep(p.name)]
    raw = subset_xspace(data, [(p, None if lines_of(p.name) else []) for p in chosen], space_texts(data))
    del data
    try:
        return XSpaceFrame(decode_raw(raw))
    except DecodeError as e:
        raise LogdirError(f"{hf.path}: {e}") from None

