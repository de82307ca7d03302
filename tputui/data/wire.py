"""Python side of the C wire decoder: its flat buffers -> RawXSpace.

Raises ImportError when the extension was not built (tputui then uses protobuf's parser).
"""
from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from tputui.data import _wire  # noqa: F401  (ImportError here selects the fallback)
from tputui.data.interned import Interned
from tputui.data.raw import KIND_BYTES, KIND_STR, RawXSpace, StatColumns

_I32 = ("line_plane", "ev_line", "em_plane", "sm_plane")

# Planes adding up to this many bytes are decoded by two threads (the C side cuts the bytes in two
# and joins the halves' columns: ~0.6x the wall time for ~1.2x the CPU on a 320 MB host). Smaller
# ones are not worth the join's copy.
TWO_THREADS_FROM_BYTES = 32 << 20
_one_thread = [not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2]


@contextmanager
def one_thread() -> Iterator[None]:
    """Decode on one thread here: for a map whose processes already fill the cores."""
    saved, _one_thread[0] = _one_thread[0], True
    try:
        yield
    finally:
        _one_thread[0] = saved


def threads_for(nbytes: int) -> int:
    """How many threads the C side walks `nbytes` of selected planes with (decode or count)."""
    return 1 if _one_thread[0] or nbytes < TWO_THREADS_FROM_BYTES else 2


def use_one_thread() -> None:
    """For good in this process (a map worker: the lanes fill the cores)."""
    _one_thread[0] = True


def _texts(buf: memoryview, offs: np.ndarray, lens: np.ndarray) -> list[str]:
    # The C side checked every string field is UTF-8 (strict here is a second line of defence).
    return [str(buf[o:o + n], "utf-8") for o, n in zip(offs.tolist(), lens.tolist())]


def _last_per_key(plane: np.ndarray, key: np.ndarray) -> np.ndarray | None:
    """Rows to keep of a map read entry by entry: the last entry of each (plane, key), as a
    protobuf map keeps. None when no key repeats (the usual case: nothing to do)."""
    if len(key) < 2:
        return None
    pairs = np.stack([plane.astype(np.int64), key], axis=1)
    _, first_from_end = np.unique(pairs[::-1], axis=0, return_index=True)
    if len(first_from_end) == len(key):
        return None
    return np.sort(len(key) - 1 - first_from_end)


def _renumber(owner: np.ndarray, keep: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows of a child table to keep, their owners renumbered) when only `keep` of n owners stay."""
    new = np.full(n, -1, np.int64)
    new[keep] = np.arange(len(keep))
    mapped = new[owner] if len(owner) else owner
    rows = np.flatnonzero(mapped >= 0)
    return rows, mapped[rows]


def scan(data) -> tuple[list, list[str], list[str], list[str]]:
    """The top level only: ([(offset, length, name bytes) per plane], hostnames, errors, warnings)."""
    return _wire.scan(data)


def _keep_last_map_entries(i64: dict, i32: dict, kinds: dict) -> None:
    """Of map entries with the same key in one plane, keep the last (with its stats and
    children), as protobuf does; the C side reads every entry."""
    keep = _last_per_key(i32["em_plane"], i64["em_key"])
    if keep is not None:
        n = len(i64["em_key"])
        for name in ("em_id", "em_key", "em_name_off", "em_name_len", "em_dname_off", "em_dname_len",
                     "em_meta_off", "em_meta_len"):
            i64[name] = i64[name][keep]
        i32["em_plane"] = i32["em_plane"][keep]
        rows, i64["emc_owner"] = _renumber(i64["emc_owner"], keep, n)
        i64["emc_id"] = i64["emc_id"][rows]
        rows, i64["ms_owner"] = _renumber(i64["ms_owner"], keep, n)
        for part in ("ms_mid", "ms_val", "ms_len"):
            i64[part] = i64[part][rows]
        kinds["ms_kind"] = kinds["ms_kind"][rows]
    keep = _last_per_key(i32["sm_plane"], i64["sm_key"])
    if keep is not None:
        for name in ("sm_id", "sm_key", "sm_name_off", "sm_name_len", "sm_desc_off", "sm_desc_len"):
            i64[name] = i64[name][keep]
        i32["sm_plane"] = i32["sm_plane"][keep]


def decode(data: bytes | mmap.mmap | memoryview, keep: Callable[[str], bool] | None = None,
           event_ids: np.ndarray | None = None, lines: bool = True) -> RawXSpace:
    """The planes `keep` selects; only the events whose metadata id is in `event_ids` (None: all);
    no lines at all with lines=False (the planes' metadata and stats alone)."""
    planes, hostnames, errors, warnings = _wire.scan(data)
    ranges = [(off, n) for off, n, name in planes
              if keep is None or keep(name.decode("utf-8", "replace"))]
    threads = threads_for(sum(n for _, n in ranges))
    ids = None if event_ids is None else np.unique(np.asarray(event_ids, np.int64)).tobytes()
    c = {k: memoryview(v) for k, v in _wire.decode_planes(data, ranges, threads, ids, lines).items()}  # writable
    i64 = {k: np.frombuffer(v, np.int64) for k, v in c.items() if k not in _I32 and not k.endswith("_kind")}
    i32 = {k: np.frombuffer(c[k], np.int32) for k in _I32}
    kinds = {k: np.frombuffer(v, np.uint8) for k, v in c.items() if k.endswith("_kind")}
    _keep_last_map_entries(i64, i32, kinds)
    buf = memoryview(data)
    texts = Interned()
    blobs: list[bytes] = []

    def stats(prefix: str) -> StatColumns:
        kind = kinds[f"{prefix}_kind"]
        value = i64[f"{prefix}_val"]  # writable: the C side hands over its own buffer
        lens = i64[f"{prefix}_len"]
        # str / bytes values: (offset, length) into the buffer -> index into strings / blobs.
        _wire.intern_strings(buf, kind, value, lens, KIND_STR, texts.strings, texts.index)
        for i in np.flatnonzero(kind == KIND_BYTES).tolist():
            blobs.append(bytes(buf[value[i]:value[i] + lens[i]]))
            value[i] = len(blobs) - 1
        return StatColumns(i64[f"{prefix}_owner"], i64[f"{prefix}_mid"], kind, value)

    event_stats = stats("es")
    metadata_stats = stats("ms")
    plane_stats = stats("ps")
    meta_len = i64["em_meta_len"]
    em_metadata = np.full(len(meta_len), -1, np.int64)
    for i in np.flatnonzero(meta_len > 0).tolist():
        o = int(i64["em_meta_off"][i])
        blobs.append(bytes(buf[o:o + int(meta_len[i])]))
        em_metadata[i] = len(blobs) - 1
    return RawXSpace(
        hostnames=list(hostnames), errors=list(errors), warnings=list(warnings),
        plane_id=i64["plane_id"], plane_name=_texts(buf, i64["plane_name_off"], i64["plane_name_len"]),
        line_plane=i32["line_plane"], line_id=i64["line_id"], line_display_id=i64["line_display_id"],
        line_timestamp_ns=i64["line_ts"], line_duration_ps=i64["line_dur"],
        line_name=_texts(buf, i64["line_name_off"], i64["line_name_len"]),
        line_display_name=_texts(buf, i64["line_dname_off"], i64["line_dname_len"]),
        line_first_event=i64["line_first"], line_num_events=i64["line_count"],
        event_line=i32["ev_line"], event_metadata_id=i64["ev_mid"], event_offset_ps=i64["ev_off"],
        event_num_occurrences=i64["ev_occ"], event_duration_ps=i64["ev_dur"],
        em_plane=i32["em_plane"], em_id=i64["em_id"],
        em_name=_texts(buf, i64["em_name_off"], i64["em_name_len"]),
        em_display_name=_texts(buf, i64["em_dname_off"], i64["em_dname_len"]),
        em_metadata=em_metadata, em_child_owner=i64["emc_owner"], em_child_id=i64["emc_id"],
        sm_plane=i32["sm_plane"], sm_id=i64["sm_id"],
        sm_name=_texts(buf, i64["sm_name_off"], i64["sm_name_len"]),
        sm_description=_texts(buf, i64["sm_desc_off"], i64["sm_desc_len"]),
        event_stats=event_stats, metadata_stats=metadata_stats, plane_stats=plane_stats,
        strings=texts.strings, blobs=blobs,
    )
