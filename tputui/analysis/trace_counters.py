"""Counter tracks of the trace viewer (Chrome trace `"ph":"C"`): values that change over time.

Two sources:
* a `_counters_` line (XProf's kCounterEventsLineName; TPU v6e / v7x performance counters): XProf
  turns each of its events into a counter sample of its process, named after the event; the value
  is the `counter_value` stat, else the event's first numeric stat;
* the memory allocator's activity (MemoryAllocation / MemoryDeallocation events, which the trace
  viewer hides as events): `bytes_allocated` after each, one series per memory id (the allocator
  name, else the device ordinal, else the index on host, as the memory profile groups them), on
  the plane's process (the memory profile's "heap in use").

A CounterTable is columnar: `names` / `pid` per series, samples sorted by (series, time) in
`series` / `t_ps` / `value`, and `first` / `count` per series.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tputui.analysis.op_metrics import event_stat
from tputui.data.interned import Interned
from tputui.data.raw import KIND_DOUBLE, KIND_INT64, KIND_UINT64

COUNTER_LINE = "_counters_"
COUNTER_VALUE = "counter_value"
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
MEMORY_VALUE = "bytes_allocated"
MEMORY_SERIES = "Memory in use"
ORDINAL_STATS = ("device_ordinal", "index_on_host")  # the memory id when there is no allocator name


@dataclass(frozen=True)
class CounterTable:
    names: list[str]  # per series
    pid: np.ndarray  # uint32 per series: the process (section) it belongs to
    series: np.ndarray  # int32 per sample
    t_ps: np.ndarray  # int64 per sample, from the profile start
    value: np.ndarray  # float64 per sample
    first: np.ndarray  # int64 per series: its first sample
    count: np.ndarray  # int64 per series

    def __len__(self) -> int:
        return len(self.names)

    @staticmethod
    def empty() -> CounterTable:
        z = np.zeros(0, np.int64)
        return CounterTable([], np.zeros(0, np.uint32), np.zeros(0, np.int32), z, np.zeros(0), z, z)

    def unit(self, k: int) -> str:
        """"bytes" for the allocator series, "" for a plain count."""
        return "bytes" if self.names[k].startswith(MEMORY_SERIES) else ""

    def samples(self, k: int) -> slice:
        a = int(self.first[k])
        return slice(a, a + int(self.count[k]))

    def value_at(self, k: int, t: float) -> float | None:
        """Series k's value at time t (the last sample at or before it), None before its first."""
        sl = self.samples(k)
        j = int(np.searchsorted(self.t_ps[sl], t, "right")) - 1
        return float(self.value[sl.start + j]) if j >= 0 else None

    def columns(self, k: int, edges: np.ndarray) -> np.ndarray:
        """Per column [edges[i], edges[i+1]): the largest value series k takes there (NaN before
        its first sample), the value carried from earlier samples included."""
        sl = self.samples(k)
        t, v = self.t_ps[sl], self.value[sl]
        ncol = len(edges) - 1
        out = np.full(ncol, np.nan)
        if not len(t) or ncol <= 0:
            return out
        carried = np.searchsorted(t, edges[:-1], "right") - 1  # the sample in force as the column opens
        has = carried >= 0
        out[has] = v[carried[has]]
        lo = np.searchsorted(t, edges[:-1], "left")
        hi = np.searchsorted(t, edges[1:], "left")
        inside = hi > lo
        if inside.any():
            # Columns with samples are consecutive runs of the samples (empty columns hold none
            # between them), so one reduceat over their first samples gives each column's max.
            cols = np.flatnonzero(inside)
            mx = np.maximum.reduceat(v[: int(hi[cols[-1]])], lo[cols])
            out[cols] = np.fmax(out[cols], mx)
        return out

    def remap_pids(self, pids: np.ndarray) -> CounterTable:
        return CounterTable(self.names, np.asarray(pids, np.uint32), self.series, self.t_ps, self.value, self.first,
                            self.count)


def build(names: list[str], pid: list[int], series: np.ndarray, t: np.ndarray, value: np.ndarray) -> CounterTable:
    """A CounterTable from unsorted samples (series ids index `names` / `pid`)."""
    order = np.lexsort((t, series))
    series, t, value = series[order].astype(np.int32), t[order].astype(np.int64), value[order].astype(np.float64)
    count = np.bincount(series, minlength=len(names)).astype(np.int64)
    first = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
    return CounterTable(list(names), np.asarray(pid, np.uint32), series, t, value, first, count)


def counter_table(frame, plane_pid: np.ndarray, counter_lines: np.ndarray, display_names: np.ndarray) -> CounterTable:
    """The counters of a frame. plane_pid: the process of each plane (-1: not shown);
    counter_lines: bool per line, a `_counters_` line of a shown plane; display_names: the
    shown name of each event-metadata row (+1 trailing row for unknown metadata)."""
    r = frame.raw
    names = Interned()
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # pid, name id, t, value
    if counter_lines.any():
        rows = np.flatnonzero(counter_lines[r.event_line])
        values = _counter_values(frame, rows)
        ok = ~np.isnan(values)
        rows = rows[ok]
        md = frame.events["metadata"].to_numpy()[rows]
        pid = plane_pid[r.line_plane[r.event_line[rows]]]
        kinds, at = np.unique(md, return_inverse=True)
        name_id = np.array([names.id(str(display_names[m])) for m in kinds.tolist()], np.int64)[at.reshape(-1)]
        parts.append((pid, name_id, frame.start_ps[rows], values[ok]))
    mem = _memory_samples(frame, plane_pid, names)
    if mem is not None:
        parts.append(mem)
    if not parts:
        return CounterTable.empty()
    pid = np.concatenate([p[0] for p in parts]).astype(np.int64)
    name_id = np.concatenate([p[1] for p in parts]).astype(np.int64)
    # A series per (pid, name), numbered by pid, then in the order the samples first show it.
    key = pid * max(len(names.strings), 1) + name_id
    uniq, first, series_of_key = np.unique(key, return_index=True, return_inverse=True)
    seen = np.argsort(first, kind="stable")
    numbered = seen[np.argsort((uniq[seen] // max(len(names.strings), 1)), kind="stable")]
    rank = np.empty(len(uniq), np.int64)
    rank[numbered] = np.arange(len(uniq))
    series = rank[series_of_key.reshape(-1)]
    return build([names.strings[int(name_id[first[u]])] for u in numbered.tolist()],
                 [int(pid[first[u]]) for u in numbered.tolist()], series,
                 np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts]))


def _counter_values(frame, rows: np.ndarray) -> np.ndarray:
    """Per event row: counter_value, else its first numeric stat (NaN when none)."""
    out = np.full(len(rows), np.nan)
    if not len(rows):
        return out
    st = frame.stat_values("event", frame.raw.sm_name)  # every stat, long form
    st = st.filter(pl.col("kind").is_in([KIND_INT64, KIND_UINT64, KIND_DOUBLE]))
    num = st.select("owner", "stat_name", v=pl.when(pl.col("kind") == KIND_DOUBLE).then(pl.col("float"))
                    .when(pl.col("kind") == KIND_UINT64).then(pl.col("uint").cast(pl.Float64))
                    .otherwise(pl.col("int").cast(pl.Float64)))
    num = num.filter(pl.col("owner").is_in(pl.Series(rows).implode()))
    if not num.height:
        return out
    best = (num.with_columns(pref=(pl.col("stat_name") != COUNTER_VALUE).cast(pl.Int8))
            .with_row_index("order").sort("owner", "pref", "order").unique("owner", keep="first"))
    pos = np.searchsorted(rows, best["owner"].to_numpy())
    out[pos] = best["v"].to_numpy()
    return out


def _memory_samples(frame, plane_pid: np.ndarray, names: Interned):
    """(pid, name id, t, value) of the allocator's samples: bytes_allocated after each
    MemoryAllocation / MemoryDeallocation event of a shown plane (NaN when not an integer)."""
    r = frame.raw
    if MEMORY_VALUE not in r.sm_name:
        return None
    flag = np.array([n in MEMORY_EVENTS for n in r.em_name] + [False])
    md = frame.events["metadata"].to_numpy()
    rows = np.flatnonzero(flag[md])
    if not len(rows):
        return None
    pid = plane_pid[r.line_plane[r.event_line[rows]]]
    keep = pid >= 0
    rows, pid = rows[keep], pid[keep]
    # The events with the stat (of any kind), each with its integer value (NaN when another kind).
    present = event_stat(frame, MEMORY_VALUE, rows, "any", memo=False)[0]
    rows, pid = rows[present], pid[present]
    if not len(rows):
        return None
    is_int, ints = event_stat(frame, MEMORY_VALUE, rows, "int", memo=False)
    value = ints.astype(np.float64)
    value[~is_int] = np.nan
    # XProf's memory id: the allocator name, else the device ordinal, else the index on host.
    allocator = event_stat(frame, "allocator_name", rows, "text", memo=False)[1]
    number = np.zeros(len(rows), np.int64)
    has_number = np.zeros(len(rows), bool)
    for stat in reversed(ORDINAL_STATS):  # the first that is there wins
        has, values = event_stat(frame, stat, rows, "int", memo=False)
        number[has] = values[has]
        has_number |= has
    a_values, a_code = np.unique(allocator, return_inverse=True)
    n_values, n_code = np.unique(number, return_inverse=True)
    combo = (a_code.reshape(-1) * len(n_values) + n_code.reshape(-1)) * 2 + has_number
    _, first, at = np.unique(combo, return_index=True, return_inverse=True)
    name_of_combo = []
    for i in first.tolist():  # per distinct memory id, not per sample
        ident = frame.text(int(allocator[i])) or (str(int(number[i])) if has_number[i] else "")
        name_of_combo.append(names.id(f"{MEMORY_SERIES}: {ident}" if ident else MEMORY_SERIES))
    name_id = np.array(name_of_combo, np.int64)[at.reshape(-1)]
    return pid, name_id, frame.start_ps[rows], value
