"""The `events` table of `tputui sql`: one row per event, XProf's events-db column names.

XProf 2.24's `create_events_db` writes a Parquet file with one row per trace event; we build the
same columns (where we have them) from the decoded frame, column by column and only the columns
a query names (`EventColumns.column`), so a query over a 10M-event profile touches what it asks for.

Rows: every event of every plane, with `in_xprof` true where XProf's events db lists the event too:
every `/host:CPU` event, every `/custom:` plane event, every GPU event except the `_counters_`
line and derived lines (other than the XLA Modules / XLA Ops lines), every TPU SparseCore and
non-core event, and on TPU TensorCore planes the lines with ids 1, 2, 3, 7, 8, 9 (Steps, XLA
Modules, XLA Ops, TraceMe, Overlay, TensorCore). Facts from XProf's events_db parsers:

- `self_time_ns`: on a TPU TensorCore line, the duration less the durations of the events directly
  inside it (a stack per line; zero-length events are never parents); elsewhere the duration.
- `category`: "host" on `/host:CPU`, "device" on GPU stream lines, else the line name.
- `device`: "cpu:0" on the host plane, "gpu:<plane id>" on GPU planes, the plane name without
  "/device:" on TPU planes, the plane name on other planes.
- `step`: host events: the name of their XProf step group ("train 3"); TPU ops: "step:" and the
  name of the Steps event around them. `hlo_module`: the XLA Modules event around a TPU op.
- `start_ns` = line timestamp + offset (ns, truncated), `end_ns` = `start_ns` + duration (ns).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import polars as pl

from tputui.analysis.op_metrics import parse_tf_op
from tputui.data import schema
from tputui.data.schema import HOST_PLANE
from tputui.data.xspace import XSpaceFrame

# Column -> dtype, in the order `SELECT *` shows them. XProf's names first, then ours.
SCHEMA: dict[str, pl.DataType] = {
    "device": pl.String(), "stream_id": pl.UInt32(), "thread_id": pl.UInt32(), "thread_name": pl.String(),
    "kernel_name": pl.String(), "tf_op_name": pl.String(), "tf_op_type": pl.String(), "hlo_op": pl.String(),
    "hlo_module": pl.String(), "start_ns": pl.UInt64(), "end_ns": pl.UInt64(), "self_time_ns": pl.UInt64(),
    "step": pl.String(), "category": pl.String(), "flops": pl.UInt64(), "memory_accessed": pl.UInt64(),
    "source_line": pl.String(),
    # Ours: where the event is, its plain name and duration, and the row the trace viewer takes.
    "host": pl.String(), "plane": pl.String(), "line": pl.String(), "name": pl.String(),
    "duration_ns": pl.UInt64(), "in_xprof": pl.Boolean(), "event_row": pl.Int64(),
}
XPROF_COLUMNS = tuple(list(SCHEMA)[:17])

# TPU TensorCore line ids XProf's events db reads (its TpuComponent enum) and their name prefixes.
_TC_LINES = {1: "step:", 2: "HLO Module:", 3: "", 7: "", 8: "TC Overlay:", 9: ""}
_TC_STEPS, _TC_MODULES, _TC_OPS = 1, 2, 3
_TENSOR_CORE = re.compile(r"^/device:TPU:\d+$")
_SPARSE_CORE = re.compile(r"^/device:TPU:\d+ SparseCore \d+$")
_DERIVED_LINE_ID_MIN = 0xDEADBEEF
_GPU_COUNTERS_LINE = "_counters_"


def _plane_kind(name: str) -> str:
    if name == HOST_PLANE:
        return "host"
    if name.startswith("/custom:"):
        return "custom"
    if _TENSOR_CORE.match(name):
        return "tensor_core"
    if name.startswith("/device:TPU"):
        return "sparse_core" if _SPARSE_CORE.match(name) else "tpu_other"
    if name.startswith(schema.GPU_PLANE_PREFIX):
        return "gpu"
    return "other"


def _device_name(name: str, kind: str, plane_id: int) -> str:
    if kind == "host":
        return "cpu:0"
    if kind == "gpu":
        return f"gpu:{plane_id}"
    if name.startswith("/device:"):
        return name[len("/device:"):]
    return name


def _texts(values: Sequence[str | None], codes: np.ndarray) -> pl.Series:
    """A String column: `values[code]` per row, null where the value is None (codes index `values`)."""
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    index = {v: i for i, v in enumerate(distinct)}
    remap = np.array([index.get(v, -1) if v is not None else -1 for v in values] + [-1], np.int64)
    c = remap[np.where(codes >= 0, codes, len(values))]
    null = c < 0
    s = pl.Series(np.where(null, 0, c).astype(np.uint32)).cat.to(pl.Enum(distinct or [""])).cast(pl.String)
    if null.any():
        s = s.scatter(np.flatnonzero(null), None)
    return s


class EventColumns:
    """The `events` columns of one host's frame, each built when first asked for."""

    def __init__(self, frame: XSpaceFrame, host: str):
        self.frame, self.host = frame, host
        raw = frame.raw
        self.n = frame.num_events
        self.kinds = [_plane_kind(n) for n in raw.plane_name]
        self._cache: dict[str, pl.Series] = {}
        self.event_plane = frame.raw.line_plane[raw.event_line] if self.n else np.zeros(0, np.int32)
        self.event_kind = np.array([_KIND_CODE[k] for k in self.kinds] + [0], np.int8)[self.event_plane] \
            if self.n else np.zeros(0, np.int8)

    def column(self, name: str) -> pl.Series:
        s = self._cache.get(name)
        if s is None:
            s = getattr(self, "_" + name)().alias(name)
            if s.dtype != SCHEMA[name]:
                s = s.cast(SCHEMA[name])
            self._cache[name] = s
        return s

    def frame_of(self, columns: list[str]) -> pl.DataFrame:
        return pl.DataFrame([self.column(c) for c in columns]) if columns else pl.DataFrame(height=self.n)

    # --- helpers ---------------------------------------------------------------------------
    def _line_ids(self) -> np.ndarray:
        raw = self.frame.raw
        return raw.line_id[raw.event_line]

    def _is(self, *kinds: str) -> np.ndarray:
        codes = [_KIND_CODE[k] for k in kinds]
        return np.isin(self.event_kind, codes)

    def _tc_rows(self, line_id: int) -> list[tuple[int, np.ndarray]]:
        """(plane, event rows) of one TensorCore line per plane (rows in start order)."""
        raw, out = self.frame.raw, []
        for p, k in enumerate(self.kinds):
            if k != "tensor_core":
                continue
            for ln in self.frame.lines_of(p):
                if raw.line_id[ln] == line_id:
                    sl = self.frame.line_events(ln)
                    rows = np.arange(sl.start, sl.stop, dtype=np.int64)
                    out.append((p, rows[np.argsort(self.frame.start_ps[rows], kind="stable")]))
        return out

    def _int_stat(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(present, value) of an integer stat per event: the event's own value, else its metadata's."""
        present, value = np.zeros(self.n, bool), np.zeros(self.n, np.uint64)
        md = self.frame.events["metadata"].to_numpy()
        for owner in ("metadata", "event"):  # the event's own value wins (XProf: last one wins)
            sv = self.frame.stat_values(owner, name)
            if not len(sv):
                continue
            v = sv.select(pl.coalesce(pl.col("uint"), pl.col("int").cast(pl.UInt64, strict=False),
                                      pl.col("float").cast(pl.UInt64, strict=False))).to_series()
            own = sv["owner"].to_numpy()
            ok = v.is_not_null().to_numpy()
            if owner == "metadata":
                table_has, table_v = np.zeros(len(self.frame.raw.em_id) + 1, bool), \
                    np.zeros(len(self.frame.raw.em_id) + 1, np.uint64)
                table_has[own[ok]] = True
                table_v[own[ok]] = v.filter(ok).to_numpy()
                idx = np.where(md >= 0, md, len(table_has) - 1)
                present, value = table_has[idx], table_v[idx]
            else:
                present[own[ok]] = True
                value[own[ok]] = v.filter(ok).to_numpy()
        return present, value

    def _text_stat(self, name: str) -> np.ndarray:
        """Text id of a str/ref stat per event (the event's own value, else its metadata's; -1 absent)."""
        out = np.full(self.n, -1, np.int64)
        md = self.frame.events["metadata"].to_numpy()
        ev = self.frame.stat_values("event", name).filter(pl.col("text_id") >= 0)
        mds = self.frame.stat_values("metadata", name).filter(pl.col("text_id") >= 0)
        if len(mds):
            table = np.full(len(self.frame.raw.em_id) + 1, -1, np.int64)
            table[mds["owner"].to_numpy()] = mds["text_id"].to_numpy()
            out = table[np.where(md >= 0, md, len(table) - 1)]
        if len(ev):
            out[ev["owner"].to_numpy()] = ev["text_id"].to_numpy()
        return out

    def _gpu_text_stat(self, name: str) -> pl.Series:
        """A text stat as a column on GPU planes only (XProf's host parser leaves these columns empty)."""
        tid = np.where(self._is("gpu"), self._text_stat(name), -1)
        return _texts(self.frame.texts, tid)

    def _names_of(self, metadata: np.ndarray) -> pl.Series:
        return self.frame.metadata_names(metadata).cast(pl.String)

    # --- columns ---------------------------------------------------------------------------
    def _host(self) -> pl.Series:
        return pl.Series([self.host]).new_from_index(0, self.n) if self.n else pl.Series([], dtype=pl.String)

    def _plane(self) -> pl.Series:
        return _texts(list(self.frame.raw.plane_name), self.event_plane.astype(np.int64))

    def _line(self) -> pl.Series:
        raw = self.frame.raw
        return _texts(list(raw.line_name), raw.event_line.astype(np.int64))

    def _name(self) -> pl.Series:
        return self._names_of(self.frame.events["metadata"].to_numpy())

    def _device(self) -> pl.Series:
        raw = self.frame.raw
        names = [_device_name(n, k, int(i)) for n, k, i in zip(raw.plane_name, self.kinds, raw.plane_id)]
        return _texts(names, self.event_plane.astype(np.int64))

    def _thread_id(self) -> pl.Series:
        host = self._is("host")
        ids = self._line_ids().astype(np.int64).astype(np.uint32)  # XProf stores the thread id as uint32
        return pl.Series(ids, dtype=pl.UInt32).scatter(np.flatnonzero(~host), None) if (~host).any() \
            else pl.Series(ids, dtype=pl.UInt32)

    def _stream_id(self) -> pl.Series:
        dev = ~self._is("host", "other")
        ids = self._line_ids().astype(np.int64).astype(np.uint32)
        s = pl.Series(ids, dtype=pl.UInt32)
        return s.scatter(np.flatnonzero(~dev), None) if (~dev).any() else s

    def _thread_name(self) -> pl.Series:
        raw = self.frame.raw
        host_line = [raw.line_name[i] if self.kinds[raw.line_plane[i]] == "host" else None
                     for i in range(len(raw.line_name))]
        return _texts(host_line, raw.event_line.astype(np.int64))

    def _category(self) -> pl.Series:
        raw = self.frame.raw
        cats = []
        for i, name in enumerate(raw.line_name):
            kind = self.kinds[raw.line_plane[i]]
            if kind == "host":
                cats.append("host")
            elif kind == "gpu" and not name.startswith((schema.LINE_XLA_MODULES, schema.LINE_XLA_OPS)):
                cats.append("device")
            else:
                cats.append(name)
        return _texts(cats, raw.event_line.astype(np.int64))

    def _kernel_name(self) -> pl.Series:
        prefix = np.full(self.n, -1, np.int64)  # index into _PREFIXES per event, -1: the plain name
        raw = self.frame.raw
        line_id = self._line_ids()
        tc = self._is("tensor_core")
        for lid, line_prefix in _TC_LINES.items():
            if line_prefix:
                prefix[tc & (line_id == lid)] = _PREFIXES.index(line_prefix)
        gpu_mod = self._is("gpu") & np.array([n.startswith(schema.LINE_XLA_MODULES) for n in raw.line_name] + [False],
                                             bool)[raw.event_line]
        prefix[gpu_mod] = _PREFIXES.index("HLO Module:")
        name = self._name()
        if (prefix < 0).all():
            return name
        pre = _texts(list(_PREFIXES), np.where(prefix >= 0, prefix, len(_PREFIXES))).fill_null("")
        return pl.select(pl.concat_str([pre, name])).to_series()

    def _start_ns(self) -> pl.Series:
        raw = self.frame.raw
        return pl.Series(raw.line_timestamp_ns[raw.event_line] + raw.event_offset_ps // 1000, dtype=pl.Int64)

    def _duration_ns(self) -> pl.Series:
        return pl.Series(self.frame.raw.event_duration_ps // 1000, dtype=pl.Int64)

    def _end_ns(self) -> pl.Series:
        return self.column("start_ns") + self.column("duration_ns")

    def _self_time_ns(self) -> pl.Series:
        """Duration, less the children's durations on TPU TensorCore lines (XProf's parent stack)."""
        self_ns = self.column("duration_ns").to_numpy().astype(np.int64).copy()
        start = self.column("start_ns").to_numpy().astype(np.int64)
        dur = self_ns.copy()
        for p, k in enumerate(self.kinds):
            if k != "tensor_core":
                continue
            for ln in self.frame.lines_of(p):
                sl = self.frame.line_events(ln)
                if sl.stop > sl.start:
                    _deduct_children(start[sl], dur[sl], self_ns[sl])
        return pl.Series(np.maximum(self_ns, 0), dtype=pl.Int64)

    def _in_xprof(self) -> pl.Series:
        raw = self.frame.raw
        keep_line = np.zeros(len(raw.line_name) + 1, bool)
        for i, name in enumerate(raw.line_name):
            kind, lid = self.kinds[raw.line_plane[i]], int(raw.line_id[i])
            if kind in ("host", "custom", "sparse_core", "tpu_other"):
                keep_line[i] = True
            elif kind == "tensor_core":
                keep_line[i] = lid in _TC_LINES
            elif kind == "gpu":
                xla = name.startswith((schema.LINE_XLA_MODULES, schema.LINE_XLA_OPS))
                keep_line[i] = xla or (name != _GPU_COUNTERS_LINE and lid < _DERIVED_LINE_ID_MIN)
        return pl.Series(keep_line[raw.event_line])

    def _event_row(self) -> pl.Series:
        return pl.Series(np.arange(self.n, dtype=np.int64))

    def _hlo_op(self) -> pl.Series:
        """TPU XLA Ops: the op name (display name); GPU: the `hlo_op` stat; elsewhere null."""
        raw = self.frame.raw
        out = self._gpu_text_stat("hlo_op")
        ops = np.concatenate([r for _, r in self._tc_rows(_TC_OPS)] or [np.zeros(0, np.int64)])
        if len(ops):
            md = self.frame.events["metadata"].to_numpy()[ops]
            disp = [d or n for d, n in zip(raw.em_display_name, raw.em_name)]
            out = out.scatter(ops, _texts(disp, md.astype(np.int64)))
        return out

    def _containing_name(self, outer_line: int, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """(op rows, metadata row of the `outer_line` event around each TPU op, -1 if none)."""
        rows_out, md_out = [], []
        ops = dict(self._tc_rows(_TC_OPS))
        for p, outer in self._tc_rows(outer_line):
            op_rows = ops.get(p)
            if op_rows is None or not len(outer):
                continue
            s = self.frame.start_ps
            o_start, o_end = s[outer], s[outer] + self.frame.raw.event_duration_ps[outer]
            op_s, op_e = s[op_rows], s[op_rows] + self.frame.raw.event_duration_ps[op_rows]
            k = np.searchsorted(o_start, op_s, side="right") - 1
            kc = np.clip(k, 0, len(outer) - 1)
            inside = (k >= 0) & (o_end[kc] >= op_e)
            md = self.frame.events["metadata"].to_numpy()[outer[kc]]
            rows_out.append(op_rows)
            md_out.append(np.where(inside, md, -2))
        if not rows_out:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(rows_out), np.concatenate(md_out).astype(np.int64)

    def _hlo_module(self) -> pl.Series:
        out = self._gpu_text_stat("hlo_module")
        rows, md = self._containing_name(_TC_MODULES, "")
        if len(rows):
            names = self.frame.raw.em_name
            vals = pl.Series([names[m] if m >= 0 else None for m in md.tolist()], dtype=pl.String)
            out = out.scatter(rows, vals)
        return out

    def _step(self) -> pl.Series:
        out = pl.Series([None] * self.n, dtype=pl.String)
        group_name = self._host_group_names()
        if group_name is not None:
            out = group_name
        rows, md = self._containing_name(_TC_STEPS, "step:")
        if len(rows):
            names = self.frame.raw.em_name
            out = out.scatter(rows, pl.Series([f"step:{names[m]}" if m >= 0 else None for m in md.tolist()],
                                              dtype=pl.String))
        return out

    def _host_group_names(self) -> pl.Series | None:
        """XProf's step-group name of each host event (null outside any group)."""
        from tputui.analysis.event_groups import group_events

        try:
            g = group_events(self.frame)
        except Exception:  # noqa: BLE001 - grouping is best effort for this column
            return None
        if not g.names:
            return None
        ids = sorted(g.names)
        code = {gid: i for i, gid in enumerate(ids)}
        codes = np.full(self.n, -1, np.int64)
        grouped = g.group >= 0
        codes[g.rows[grouped]] = np.array([code.get(int(x), -1) for x in g.group[grouped].tolist()], np.int64)
        return _texts([g.names[i] for i in ids], codes)

    def _flops(self) -> pl.Series:
        has, v = self._int_stat("flops")
        return pl.Series(v, dtype=pl.UInt64).scatter(np.flatnonzero(~has), None) if (~has).any() \
            else pl.Series(v, dtype=pl.UInt64)

    def _memory_accessed(self) -> pl.Series:
        has, v = self._int_stat("bytes_accessed")
        return pl.Series(v, dtype=pl.UInt64).scatter(np.flatnonzero(~has), None) if (~has).any() \
            else pl.Series(v, dtype=pl.UInt64)

    def _tf_op(self) -> tuple[pl.Series, pl.Series]:
        """(tf_op_name, tf_op_type): host events parse their own name; device events their `tf_op` stat."""
        raw = self.frame.raw
        n_md = len(raw.em_name)
        md = self.frame.events["metadata"].to_numpy().astype(np.int64)
        parsed = [parse_tf_op(n) for n in raw.em_name]
        # Host: set only when the parse changed the name (XProf: tf_op.name != name).
        host_name = [p[1] if p[1] != n else None for p, n in zip(parsed, raw.em_name)] + [None]
        host_type = [p[2] if p[1] != n else None for p, n in zip(parsed, raw.em_name)] + [None]
        md_i = np.where(md >= 0, md, n_md)
        name = _texts(host_name, md_i)
        typ = _texts(host_type, md_i)
        not_host = ~self._is("host")
        name = name.scatter(np.flatnonzero(not_host), None)
        typ = typ.scatter(np.flatnonzero(not_host), None)
        tid = self._text_stat("tf_op")
        dev = np.flatnonzero(not_host & (tid >= 0) & ~self._is("other"))
        if len(dev):
            uniq, inv = np.unique(tid[dev], return_inverse=True)
            p = [parse_tf_op(self.frame.texts[t]) for t in uniq.tolist()]
            name = name.scatter(dev, _texts([x[1] for x in p], inv.astype(np.int64)))
            typ = typ.scatter(dev, _texts([x[2] for x in p], inv.astype(np.int64)))
        return name, typ

    def _tf_op_name(self) -> pl.Series:
        name, typ = self._tf_op()
        self._cache["tf_op_type"] = typ.alias("tf_op_type")
        return name

    def _tf_op_type(self) -> pl.Series:
        name, typ = self._tf_op()
        self._cache["tf_op_name"] = name.alias("tf_op_name")
        return typ

    def _source_line(self) -> pl.Series:
        return _texts(self.frame.texts, self._text_stat("source"))


_KIND_CODE = {k: i for i, k in enumerate(("other", "host", "custom", "tensor_core", "sparse_core", "tpu_other",
                                          "gpu"))}
_PREFIXES = ("step:", "HLO Module:", "TC Overlay:")


def _deduct_children(start: np.ndarray, dur: np.ndarray, self_ns: np.ndarray) -> None:
    """XProf's ParentEventTracker on one line (events in line order): each event with a duration
    takes its duration off the innermost open event that encloses it ([start, end), a zero-length
    event at the end is outside); zero-length events are never parents and take nothing off."""
    stack_end: list[int] = []
    stack_start: list[int] = []
    stack_idx: list[int] = []
    for i, (s, d) in enumerate(zip(start.tolist(), dur.tolist())):
        e = s + d
        while stack_idx and not (stack_start[-1] <= s and e <= stack_end[-1] and s < stack_end[-1]):
            stack_idx.pop()
            stack_start.pop()
            stack_end.pop()
        if d == 0:
            continue
        if stack_idx:
            p = stack_idx[-1]
            self_ns[p] = max(int(self_ns[p]) - d, 0)
        stack_idx.append(i)
        stack_start.append(s)
        stack_end.append(e)


def events_frame(frame: XSpaceFrame, host: str, columns: list[str] | None = None) -> pl.DataFrame:
    """The `events` table of one host (all columns when `columns` is None)."""
    return EventColumns(frame, host).frame_of(list(SCHEMA) if columns is None else columns)

