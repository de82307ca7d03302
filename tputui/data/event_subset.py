"""One plane's events of a few kinds, decoded from a host file without the rest (issue #28).

A tool that reads a handful of event kinds (the memory profile: the host plane's allocator
events, 3% of a TPU host's events) needs neither the host's other events nor a whole-host frame
written to the cache. The plane's metadata comes first (its lines skipped: kilobytes, at any
host size) and names the metadata ids of the wanted events; then the plane again, keeping only
those events, their lines and stats. Both passes walk the file's mapped bytes; nothing is cached.

A `.xplane.riegeli` host gives None: its records merge into one frame first (load_frame), so
callers read its frame as before.
"""
from __future__ import annotations

from collections.abc import Collection

import numpy as np

from tputui.data.runs import HostFile, LogdirError
from tputui.data.storage import read
from tputui.data.xspace import DecodeError, XSpaceFrame, decode_raw


def _decode(hf: HostFile, data, plane: str, **options) -> XSpaceFrame:
    try:
        return XSpaceFrame(decode_raw(data, lambda name: name == plane, **options))
    except DecodeError as e:
        raise LogdirError(f"{hf.path}: {e}") from None


def plane_metadata(hf: HostFile, plane: str, progress=None) -> XSpaceFrame | None:
    """The plane named `plane` without its lines: its event and stat metadata and plane stats
    (a frame with no plane when the file has none of that name); None for a riegeli host."""
    if hf.format == "riegeli":
        return None
    return _decode(hf, read(hf, progress=progress), plane, lines=False)


def events_named(hf: HostFile, plane: str, names: Collection[str], progress=None) -> XSpaceFrame | None:
    """The plane named `plane` with only the events whose metadata is named one of `names` (in
    file order, every line kept, empty or not); its metadata whole. None for a riegeli host."""
    if hf.format == "riegeli":
        return None
    data = read(hf, progress=progress)  # once: a gs:// object is downloaded once
    meta = _decode(hf, data, plane, lines=False)
    wanted = set(names)
    ids = np.array([i for i, n in zip(meta.raw.em_id.tolist(), meta.raw.em_name) if n in wanted], np.int64)
    if progress:
        progress(f"reading {len(ids)} kinds of event of {plane} in {hf.host}")
    return _decode(hf, data, plane, event_ids=ids)
