"""XSpace bytes -> XSpaceFrame: columnar tables every tool reads.

Time is integer picoseconds from the profile start (line.timestamp_ns * 1000 + offset_ps).
Names stay integer ids (rows of `event_metadata` / `stat_metadata`) until a tool joins
them; `names()` gives the strings for a column of ids when it is time to show them.
"""
from __future__ import annotations

import contextlib
import mmap
import threading
import weakref
from collections.abc import Callable, Iterable
from functools import cached_property
from types import ModuleType

import numpy as np
import polars as pl

from tputui.data.raw import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT64,
    KIND_REF,
    KIND_STR,
    KIND_UINT64,
    RawXSpace,
    StatColumns,
    decode_with_protobuf,
)
from tputui.errors import UserError

_columns: ModuleType | None  # None: the C extension is not built (numpy does the same passes)
try:
    from tputui.data import _columns
except ImportError:
    _columns = None

wire: ModuleType | None  # None: the C extension is not built
try:
    from tputui.data import wire  # the C decoder
except ImportError:  # extension not built: protobuf's parser (slow, exact) does the work
    wire = None

PlaneSelector = Callable[[str], bool] | Iterable[str] | None


# stat_values() results up to this many rows are kept for the next caller; bigger ones (a stat on
# every event of a big profile) cost ~50 bytes a row to keep and little to rebuild from the
# per-stat groups, and the analyses that read them repeatedly keep their own columns.
_MEMO_ROWS = 250_000


class _LazyRefs(dict):
    """owner ("event" | "metadata" | "plane") -> XSpaceFrame._resolve_refs(owner), computed on first
    access: a warm open that reads no stats never pays for resolving them."""

    def __init__(self, frame: XSpaceFrame) -> None:
        super().__init__()
        # A weak reference: with a strong one the frame and this dict form a cycle, and a dropped
        # frame (hundreds of MB) would wait for the garbage collector instead of going at once.
        self._frame = weakref.ref(frame)
        self._lock = threading.Lock()

    def __missing__(self, owner: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        with self._lock:
            if owner not in self:
                fr = self._frame()
                assert fr is not None, "the frame is gone"
                self[owner] = fr._resolve_refs(owner, getattr(fr.raw, f"{owner}_stats"))
            return dict.__getitem__(self, owner)


class DecodeError(UserError):
    """The bytes are not a readable XSpace (truncated, corrupt, or another format)."""


def plane_filter(planes: PlaneSelector) -> Callable[[str], bool] | None:
    """A predicate on plane names: None keeps all, strings match as name prefixes."""
    if planes is None or callable(planes):
        return planes
    prefixes = tuple(planes)
    return lambda name: name.startswith(prefixes)


def decode_on_one_thread() -> None:
    """Decode on one thread in this process from now on (a map worker: the lanes fill the cores)."""
    if wire is not None:
        wire.use_one_thread()


def one_decode_thread() -> contextlib.AbstractContextManager[None]:
    """Decode on one thread inside the block (this process is one of the map's lanes)."""
    return wire.one_thread() if wire is not None else contextlib.nullcontext()


def decode(data: bytes, planes: PlaneSelector = None) -> XSpaceFrame:
    """Decode serialized XSpace bytes (optionally only the planes selected)."""
    return XSpaceFrame(decode_raw(data, planes))


def decode_raw(data: bytes | mmap.mmap | memoryview, planes: PlaneSelector = None,
               event_ids: np.ndarray | None = None, lines: bool = True) -> RawXSpace:
    """The selected planes' columns; with `event_ids` only the events whose metadata id is one of
    them (a tool that reads a few kinds of event), with lines=False none of the lines (the planes'
    metadata alone: which events a plane names)."""
    keep = plane_filter(planes)
    try:
        if wire is not None:
            return wire.decode(data, keep, event_ids, lines)
        return decode_with_protobuf(data, keep, event_ids, lines)
    except ValueError as e:
        raise DecodeError(str(e)) from None


def check(data: bytes | mmap.mmap) -> None:
    """Raise DecodeError unless the top level of `data` is a well-formed XSpace: every field
    complete and inside the buffer (planes are located, not decoded)."""
    try:
        if wire is not None:
            wire.scan(data)
        else:
            decode_with_protobuf(data, lambda name: False)
    except ValueError as e:
        raise DecodeError(str(e)) from None


def _lookup(keys_plane: np.ndarray, keys_id: np.ndarray, plane: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Row of each (plane, id) in the table (keys_plane, keys_id), -1 where absent.

    Queries come in runs of equal plane (events and stats are stored plane by plane), so
    each run is one gather through a dense id -> row table (or a binary search when the
    ids are too sparse for a table).
    """
    out = np.full(len(ids), -1, np.int64)
    if len(keys_id) == 0 or len(ids) == 0:
        return out
    cuts = np.flatnonzero(plane[1:] != plane[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(ids)]))
    tables: dict[int, tuple] = {}
    for a, b in zip(starts.tolist(), ends.tolist()):
        p = int(plane[a])
        if p not in tables:
            rows = np.flatnonzero(keys_plane == p)
            kid = keys_id[rows]
            if len(kid) and kid.min() >= 0 and kid.max() < 4 * len(kid) + 1024:
                dense = np.full(int(kid.max()) + 1, -1, np.int64)
                dense[kid] = rows
                tables[p] = ("dense", dense)
            else:
                order = np.argsort(kid, kind="stable")
                tables[p] = ("sorted", kid[order], rows[order])
        q = ids[a:b]
        t = tables[p]
        if t[0] == "dense":
            dense = t[1]
            ok = (q >= 0) & (q < len(dense))
            out[a:b] = np.where(ok, dense[np.clip(q, 0, len(dense) - 1)], -1)
        elif len(t[1]):
            pos = np.minimum(np.searchsorted(t[1], q), len(t[1]) - 1)
            out[a:b] = np.where(t[1][pos] == q, t[2][pos], -1)
    return out


def lookup_rows(keys_plane: np.ndarray, keys_id: np.ndarray, plane: np.ndarray, ids: np.ndarray,
                owner: np.ndarray | None = None) -> np.ndarray:
    """`_lookup` in one C pass (int32 rows); with `owner`, query i's plane is plane[owner[i]] (no gathered
    plane column: at ten million stats that column alone is 40 MB and a second pass)."""
    if _columns is None:
        if owner is not None:
            plane = plane[owner] if len(owner) else np.zeros(0, np.int32)
        return _lookup(keys_plane, keys_id, plane, ids)
    i32 = lambda a: np.ascontiguousarray(a, np.int32)  # noqa: E731
    i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
    if owner is None:
        out = _columns.lookup(i32(keys_plane), i64(keys_id), i32(plane), i64(ids))
    else:
        out = _columns.lookup(i32(keys_plane), i64(keys_id), i32(plane), i64(ids), i64(owner))
    return np.frombuffer(out, np.int32)


def group_rows(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, order): order[offsets[k]:offsets[k + 1]] are the rows whose key is k, in row
    order; keys outside 0..n-1 (the -1 of an unknown stat) fall in bucket n."""
    if _columns is not None:
        offs, order = _columns.group(np.ascontiguousarray(keys, np.int32), n)
        return np.frombuffer(offs, np.int64), np.frombuffer(order, np.int32)
    bucket = np.where((keys >= 0) & (keys < n), keys, n)
    order = np.argsort(bucket, kind="stable")
    offsets = np.zeros(n + 2, np.int64)
    np.cumsum(np.bincount(bucket, minlength=n + 1), out=offsets[1:])
    return offsets, order


def _codes(names: list[str]) -> tuple[list[str], np.ndarray]:
    """(distinct names, code of each name + a trailing "" for row -1), for Enum series."""
    cats = list(dict.fromkeys(names + [""]))
    index = {n: i for i, n in enumerate(cats)}
    return cats, np.array([index[n] for n in names] + [index[""]], np.uint32)


def _event_planes(raw: RawXSpace) -> np.ndarray:
    """Each event's plane (int32). Events come grouped by line, so the lines' planes repeated by
    their event counts: no pass over event_line, which for a merged riegeli host is GBs of mapped
    file read page by page (a cache entry that breaks the grouping falls back to the lookup)."""
    first, count = raw.line_first_event, raw.line_num_events
    grouped = int(count.sum()) == len(raw.event_line) and (
        not len(first) or (first[0] == 0 and np.array_equal(first[1:], np.cumsum(count[:-1]))))
    if grouped:
        return np.repeat(raw.line_plane.astype(np.int32, copy=False), count)
    return raw.line_plane[raw.event_line] if len(raw.event_line) else np.zeros(0, np.int32)


class XSpaceFrame:
    """One host's profile as columnar tables (Polars DataFrames over numpy arrays).

    Tables (all row ids are int positions in their table):
      planes          plane, id, name
      lines           line, plane, id, display_id, name, display_name, timestamp_ns,
                      duration_ps, first_event, num_events
      events          plane, line, metadata, start_ps, duration_ps, num_occurrences
                      (metadata = row in event_metadata, -1 if unknown)
      event_metadata  metadata, plane, id, name, display_name
      stat_metadata   stat, plane, id, name
      event_stats / metadata_stats / plane_stats
                      owner, stat, kind, value (raw bits; use stat_values() to read)
    """

    def __init__(self, raw: RawXSpace):
        self.raw = raw
        self.hostnames, self.errors, self.warnings = raw.hostnames, raw.errors, raw.warnings
        self._event_plane = _event_planes(raw)
        self._event_md = lookup_rows(raw.em_plane, raw.em_id, self._event_plane, raw.event_metadata_id)  # int32
        # Texts: stat-metadata names (what ref values point at) then str values.
        self.texts: list[str] = raw.sm_name + raw.strings
        self._ref_rows = _LazyRefs(self)  # resolved per owner on first use (a warm open may need none)
        self._stat_values_memo: dict[tuple[str, frozenset[str]], pl.DataFrame] = {}
        self._derived: dict[object, object] = {}
        self._memo_lock = threading.Lock()

    # --- tables -----------------------------------------------------------------------
    @cached_property
    def planes(self) -> pl.DataFrame:
        r = self.raw
        return pl.DataFrame({
            "plane": np.arange(len(r.plane_id), dtype=np.int32), "id": r.plane_id,
            "name": pl.Series(r.plane_name, dtype=pl.String),
        })

    @cached_property
    def lines(self) -> pl.DataFrame:
        r = self.raw
        return pl.DataFrame({
            "line": np.arange(len(r.line_id), dtype=np.int32), "plane": r.line_plane,
            "id": r.line_id, "display_id": r.line_display_id,
            "name": pl.Series(r.line_name, dtype=pl.String),
            "display_name": pl.Series(r.line_display_name, dtype=pl.String),
            "timestamp_ns": r.line_timestamp_ns, "duration_ps": r.line_duration_ps,
            "first_event": r.line_first_event, "num_events": r.line_num_events,
        })

    @cached_property
    def start_ps(self) -> np.ndarray:
        r = self.raw
        return r.line_timestamp_ns[r.event_line] * 1000 + r.event_offset_ps

    @cached_property
    def events(self) -> pl.DataFrame:
        r = self.raw
        return pl.DataFrame({
            "plane": self._event_plane, "line": r.event_line,
            "metadata": self._event_md.astype(np.int32, copy=False),
            "start_ps": self.start_ps, "duration_ps": r.event_duration_ps,
            "num_occurrences": r.event_num_occurrences,
        })

    @cached_property
    def event_metadata(self) -> pl.DataFrame:
        r = self.raw
        return pl.DataFrame({
            "metadata": np.arange(len(r.em_id), dtype=np.int32), "plane": r.em_plane, "id": r.em_id,
            "name": pl.Series(r.em_name, dtype=pl.String),
            "display_name": pl.Series(r.em_display_name, dtype=pl.String),
        })

    @cached_property
    def stat_metadata(self) -> pl.DataFrame:
        r = self.raw
        return pl.DataFrame({
            "stat": np.arange(len(r.sm_id), dtype=np.int32), "plane": r.sm_plane, "id": r.sm_id,
            "name": pl.Series(r.sm_name, dtype=pl.String),
        })

    def _stat_table(self, owner: str) -> pl.DataFrame:
        cols: StatColumns = getattr(self.raw, f"{owner}_stats")
        stat_rows, _ = self._ref_rows[owner]
        return pl.DataFrame({"owner": cols.owner, "stat": stat_rows.astype(np.int32),
                             "kind": cols.kind, "value": cols.value})

    @cached_property
    def event_stats(self) -> pl.DataFrame:
        return self._stat_table("event")

    @cached_property
    def metadata_stats(self) -> pl.DataFrame:
        return self._stat_table("metadata")

    @cached_property
    def plane_stats(self) -> pl.DataFrame:
        return self._stat_table("plane")

    # --- names and values --------------------------------------------------------------
    @property
    def num_events(self) -> int:
        return self.raw.num_events

    def plane_index(self, name: str) -> int | None:
        try:
            return self.raw.plane_name.index(name)
        except ValueError:
            return None

    def planes_named(self, prefix: str) -> list[int]:
        return [i for i, n in enumerate(self.raw.plane_name) if n.startswith(prefix)]

    def lines_of(self, plane: int) -> list[int]:
        return np.flatnonzero(self.raw.line_plane == plane).tolist()

    def line_events(self, line: int) -> slice:
        r = self.raw
        a = int(r.line_first_event[line])
        return slice(a, a + int(r.line_num_events[line]))

    def metadata_names(self, rows: np.ndarray, display: bool = False) -> pl.Series:
        """Event-metadata names for an array of metadata rows (joined last, as an Enum)."""
        cats, code_of = self._display_name_codes if display else self._name_codes
        codes = code_of[np.asarray(rows, np.int64)]  # -1 picks the trailing ""
        return pl.Series(codes).cat.to(pl.Enum(cats))

    @cached_property
    def _name_codes(self) -> tuple[list[str], np.ndarray]:
        return _codes(self.raw.em_name)

    @cached_property
    def _display_name_codes(self) -> tuple[list[str], np.ndarray]:
        return _codes(self.raw.em_display_name)

    def stat_rows(self, name: str) -> np.ndarray:
        """Global stat-metadata rows named `name` (one per plane that defines it)."""
        return np.array([i for i, n in enumerate(self.raw.sm_name) if n == name], np.int64)

    def _resolve_refs(self, owner: str, cols: StatColumns) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """(global stat row per stat, (positions of the ref-valued stats, their text ids)).
        Ref values are few, so their texts are kept sparse; `_text_ids` answers any selection."""
        r = self.raw
        if owner == "event":
            owner_plane = self._event_plane
        elif owner == "metadata":
            owner_plane = r.em_plane
        else:
            owner_plane = np.arange(len(r.plane_id), dtype=np.int32)
        stat_rows = lookup_rows(r.sm_plane, r.sm_id, owner_plane, cols.stat, owner=cols.owner)
        ref_pos = np.flatnonzero(cols.kind == KIND_REF)
        ref_text = lookup_rows(r.sm_plane, r.sm_id, owner_plane, cols.value[ref_pos], owner=cols.owner[ref_pos])
        return stat_rows, (ref_pos, ref_text.astype(np.int64))

    def _text_ids(self, owner: str, sel: np.ndarray) -> np.ndarray:
        """Global text id of stats `sel` of `owner` (str and ref values), -1 for other kinds."""
        cols: StatColumns = getattr(self.raw, f"{owner}_stats")
        _, (ref_pos, ref_text) = self._ref_rows[owner]
        kind = cols.kind[sel]
        out = np.full(len(sel), -1, np.int64)
        is_str = kind == KIND_STR
        out[is_str] = cols.value[sel[is_str]] + len(self.raw.sm_name)
        is_ref = kind == KIND_REF
        if is_ref.any():
            out[is_ref] = ref_text[np.searchsorted(ref_pos, sel[is_ref])]
        return out

    def stat_values(self, owner: str, name: str | Iterable[str]) -> pl.DataFrame:
        """Long-form values of stat(s) `name` for `owner` in event|metadata|plane.

        Columns: owner, stat_name, kind, and one typed value column per kind: int (int64 and
        uint64 bits), uint (uint64), float, text_id (str and ref; `text(id)` gives the string),
        blob_id (bytes; `blob(id)` gives them). Absent kinds are null / -1.
        """
        names = [name] if isinstance(name, str) else list(name)
        # Analyses ask for the same few stats many times (per plane, per step): answer from a
        # memo. Polars frames are immutable, so sharing them is safe.
        key = (owner, frozenset(names))
        with self._memo_lock:
            hit = self._stat_values_memo.get(key)
        if hit is None:
            hit = self._stat_values(owner, names)
            if len(hit) <= _MEMO_ROWS:
                with self._memo_lock:
                    self._stat_values_memo[key] = hit
        return hit

    def stat_arrays(self, owner: str, name: str, kind: str = "int") -> tuple[np.ndarray, np.ndarray]:
        """(owner rows, ascending; values) of stat `name` where it holds a value of `kind`:
        "int" (int64 / uint64 bits), "float", "text" (str / ref as text ids) or "any" (a text id
        for text values, the int for others, 0 for floats and bytes). The plain columns
        stat_values() builds its table from, without the table: for analyses over many events."""
        cols: StatColumns = getattr(self.raw, f"{owner}_stats")
        sel = self._stat_positions(owner, [name])
        k = cols.kind[sel]
        if kind == "any":
            text = (k == KIND_STR) | (k == KIND_REF)
            integer = (k == KIND_INT64) | (k == KIND_UINT64)
            vals = np.where(integer, cols.value[sel], 0)
            if text.any():
                vals[text] = np.maximum(self._text_ids(owner, sel[text]), 0)  # an unknown ref: 0
            return cols.owner[sel].astype(np.int64), vals
        if kind == "int":
            sel = sel[(k == KIND_INT64) | (k == KIND_UINT64)]
            vals = cols.value[sel]
        elif kind == "float":
            sel = sel[k == KIND_DOUBLE]
            vals = cols.value[sel].view(np.float64)
        elif kind == "text":
            sel = sel[(k == KIND_STR) | (k == KIND_REF)]
            vals = self._text_ids(owner, sel)
        else:
            raise ValueError(f"unknown stat kind {kind!r}")
        return cols.owner[sel].astype(np.int64), vals

    def last_stats(self, owner: str, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(owner rows, ascending; kind; raw value; text id or -1) of each owner's last stat named
        `name` in storage order, whatever its kind (XProf's visit: a later stat of the same name
        replaces an earlier one). The columns stat_values() + group_by(owner).last() would give,
        without a table."""
        cols: StatColumns = getattr(self.raw, f"{owner}_stats")
        sel = self._stat_positions(owner, [name])
        own = cols.owner[sel].astype(np.int64)
        if len(own) > 1 and (own[1:] < own[:-1]).any():  # stored by owner as a rule; else sort, keeping order
            order = np.argsort(own, kind="stable")
            sel, own = sel[order], own[order]
        last = np.ones(len(own), bool)
        last[:-1] = own[1:] != own[:-1]
        sel, own = sel[last], own[last]
        return own, cols.kind[sel], cols.value[sel], self._text_ids(owner, sel)

    def derived(self, key: object, compute: Callable[[], object]) -> object:
        """`compute()` once per key for this frame: analyses keep columns they derive from it
        (a stat spread over event order, say) here, so several tools on one frame share them."""
        with self._memo_lock:
            if key in self._derived:
                return self._derived[key]
        value = compute()
        with self._memo_lock:
            return self._derived.setdefault(key, value)

    def _stat_groups(self, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """The owner's stats grouped by stat-metadata row (group_rows), built once: each
        stat_values() call then reads only its stats instead of passing over all of them."""
        def compute() -> tuple[np.ndarray, np.ndarray]:
            stat_rows, _ = self._ref_rows[owner]
            return group_rows(stat_rows, len(self.raw.sm_name))

        return self.derived(("stat_groups", owner), compute)  # type: ignore[return-value]

    def _stat_positions(self, owner: str, names: list[str]) -> np.ndarray:
        """Positions (in storage order) of the owner's stats named `names`, from the stat groups."""
        offsets, order = self._stat_groups(owner)
        rows = sorted({r for n in set(names) for r in self.stat_rows(n).tolist()})
        parts = [order[offsets[r]:offsets[r + 1]] for r in rows]
        return (np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0] if parts
                else np.zeros(0, np.int64))

    def _stat_values(self, owner: str, names: list[str]) -> pl.DataFrame:
        cols: StatColumns = getattr(self.raw, f"{owner}_stats")
        stat_rows, _ = self._ref_rows[owner]
        sel = self._stat_positions(owner, names)
        kind, value = cols.kind[sel], cols.value[sel]
        k = pl.col("kind")
        is_int = (k == KIND_INT64) | (k == KIND_UINT64)
        is_text = (k == KIND_STR) | (k == KIND_REF)
        name_of = pl.Series(self.raw.sm_name + [""], dtype=pl.String)
        return pl.DataFrame({
            "owner": cols.owner[sel], "stat": stat_rows[sel], "kind": kind, "value": value,
            "float_bits": value.view(np.float64), "uint_bits": value.view(np.uint64),
            "text_id": self._text_ids(owner, sel),
        }).select(
            "owner",
            stat_name=name_of.gather(pl.Series(stat_rows[sel])) if len(sel) else pl.lit("", pl.String),
            kind=k,
            # uint64 values above the int64 range (ids, hashes) keep their bits in `uint`.
            int=pl.when(is_int).then(pl.col("value")),
            uint=pl.when(k == KIND_UINT64).then(pl.col("uint_bits")),
            float=pl.when(k == KIND_DOUBLE).then(pl.col("float_bits")),
            text_id=pl.when(is_text).then(pl.col("text_id")).otherwise(-1),
            blob_id=pl.when(k == KIND_BYTES).then(pl.col("value")).otherwise(-1),
        )

    def text(self, text_id: int) -> str:
        return self.texts[text_id] if text_id >= 0 else ""

    def texts_of(self, text_ids: np.ndarray) -> np.ndarray:
        """The strings of many text ids (object array; "" for -1), looking each distinct id up once."""
        ids = np.asarray(text_ids, np.int64)
        if not len(ids):
            return np.zeros(0, dtype=object)
        uniq, inverse = np.unique(ids, return_inverse=True)
        names = np.array([self.text(int(t)) for t in uniq], dtype=object)
        return names[inverse.reshape(ids.shape)]

    def blob(self, blob_id: int) -> bytes:
        return self.raw.blobs[blob_id] if blob_id >= 0 else b""

    def stat_map(self, owner: str, owner_row: int) -> dict[str, object]:
        """Every stat of one event / metadata / plane as {name: python value} (details panes)."""
        cols: StatColumns = getattr(self.raw, f"{owner}_stats")
        stat_rows, _ = self._ref_rows[owner]
        sel = np.flatnonzero(cols.owner == owner_row)
        text = self._text_ids(owner, sel)
        out: dict[str, object] = {}
        for j, i in enumerate(sel):
            name = self.raw.sm_name[stat_rows[i]] if stat_rows[i] >= 0 else f"#{cols.stat[i]}"
            out[name] = self._python_value(int(cols.kind[i]), int(cols.value[i]), int(text[j]))
        return out

    def _python_value(self, kind: int, value: int, text_id: int):
        if kind == KIND_INT64:
            return value
        if kind == KIND_UINT64:
            return value & 0xFFFFFFFFFFFFFFFF
        if kind == KIND_DOUBLE:
            return float(np.int64(value).view(np.float64))
        if kind in (KIND_STR, KIND_REF):
            return self.text(text_id)
        if kind == KIND_BYTES:
            return self.raw.blobs[value]
        return None

    def plane_stat_map(self, plane: int) -> dict[str, object]:
        return self.stat_map("plane", plane)

    def metadata_stat_map(self, metadata_row: int) -> dict[str, object]:
        return self.stat_map("metadata", metadata_row)
