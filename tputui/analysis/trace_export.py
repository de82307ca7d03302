"""The trace viewer's events as a Chrome Trace Event JSON document (`tputui export --tool trace_viewer`).

The document has XProf's shape: `{"displayTimeUnit": "ns", "metadata": {...}, "traceEvents": [...]}`
with `process_name` / `process_sort_index` / `thread_name` / `thread_sort_index` metadata
(`ph: "M"`) events, complete events (`ph: "X"`, with `dur`) and zero-duration instant events
(`ph: "i"`, `s: "t"`). `ts` and `dur` are microseconds from the profile start: the exact decimal
of the picosecond integers (the shortest float text up to 1000 s; six fixed decimals beyond;
trace_json.us_text), each value by its own size. It opens in Perfetto and
chrome://tracing. The events are those of `trace_events.trace_events` (the same events,
names, pids and tids as XProf's trace viewer).

The lines are written by trace_json (a C pass over the columns, names JSON-escaped once per
distinct name; a Polars reference without the extension) and streamed out as bytes in chunks;
with `args` each line is a Polars string expression.

Options: `args=True` adds each event's stats (event and op-metadata stats) as `args`,
as XProf does; off by default because it multiplies the document size.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import polars as pl

from tputui.analysis import trace_json
from tputui.analysis.host_map import known_grouping
from tputui.analysis.result import NoDataError
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_cache import cached_events, events_of, final_index, in_pieces
from tputui.analysis.trace_events import SplitEvents, TraceEvents, split_trace_events, trace_events
from tputui.analysis.trace_flows import CONTEXT_TYPES, FLOW_KINDS, FLOW_NAMES
from tputui.data.progress import current_progress
from tputui.data.raw import release
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame
from tputui.errors import UserError

HEADER = '{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},\n"traceEvents":[\n'
CHUNK_ROWS = 1 << 16  # events per chunk of the args path (its lines are ~300 bytes)
# From this many events on, the writer waits for the flows before the events: built beside the
# writing (which hides their time: ~0.15 s at 2.7M events) they add their working memory to its
# peak (~100 MB at 10M events, where the peak is what matters). The counters (~50 MB) are built
# beside it either way.
FLOWS_FIRST_EVENTS = 5_000_000


def analyze(run: RunData, host: str | None = None, args: Any = False, **_ui_options) -> TraceExport:
    """The trace viewer's events of one host (the run's first host when None).

    From the trace viewer's saved index when there is one (no decode); with `args` the stats
    come from the frame, so it is decoded."""
    with_args = _truthy(args)
    if in_pieces(run, host):
        if with_args:
            raise UserError(f"{run.host_file(host).host} is read in pieces ({run.host_file(host).size / 1e9:.1f} GB): "
                            "its events' args are not exported; export without args")
        # A giant host: its pieced index (saved, or built piece by piece), written as it is read.
        return TraceExport(IndexEvents(final_index(run, host, current_progress())))
    ev: TraceEvents | SplitEvents | IndexEvents | None = None if with_args else cached_events(run, host)
    if ev is None:
        # Without args the JSON needs no copy of the raw events' columns (the frame has them).
        grouping = known_grouping(run, host)
        ev = (trace_events(run.frame(host), grouping=grouping) if with_args
              else split_trace_events(run.frame(host), grouping=grouping))
    if len(ev) == 0 and ev.threads.height == 0:
        raise NoDataError("no host threads or device planes in this profile")
    return TraceExport(ev, with_args=with_args)


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


class IndexEvents:
    """A saved trace index's events as trace_json writes them (blocks, take, flows, counters), read
    a block at a time from its memory-mapped columns and let go after each: a giant host's
    events are never all in memory. In the index's order (by track and row, then time)."""

    frame = None

    def __init__(self, ix: TraceIndex) -> None:
        self.ix = ix
        self.names = ix.names
        self.processes = pl.DataFrame({"pid": list(ix.processes), "name": list(ix.processes.values())},
                                      schema={"pid": pl.UInt32, "name": pl.String})
        self.threads = ix.threads
        self.flows = ix.flows
        self.counters = ix.counters
        self._pid = np.array([t.pid for t in ix.tracks], np.uint32)
        self._tid = np.array([t.tid for t in ix.tracks], np.uint32)
        self._row_track = np.asarray(ix.row_track)

    def __len__(self) -> int:
        return self.ix.num_events

    def blocks(self, rows: int) -> Iterator[tuple[np.ndarray, ...]]:
        ix = self.ix
        for a in range(0, ix.num_events, rows):
            b = min(a + rows, ix.num_events)
            track = self._row_track[np.asarray(ix.event_row[a:b])]
            start = np.array(ix.start[a:b])
            yield self._pid[track], self._tid[track], start, np.asarray(ix.end[a:b]) - start, np.array(ix.name[a:b])
            release(ix.start, ix.end, ix.name, ix.event_row)

    def take(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = np.asarray(pos, np.int64)
        track = self._row_track[np.asarray(self.ix.event_row)[pos]] if len(pos) else np.zeros(0, np.int64)
        return self._pid[track], self._tid[track], np.asarray(self.ix.start)[pos]

    def joined(self) -> TraceEvents:
        return events_of(self.ix)


@dataclass
class TraceExport:
    parts: TraceEvents | SplitEvents | IndexEvents  # what the JSON is written from
    with_args: bool = False
    _joined: TraceEvents | None = field(default=None, repr=False)

    @property
    def events(self) -> TraceEvents:
        """The events as one table (the tables and the args path; a copy of a SplitEvents)."""
        if isinstance(self.parts, TraceEvents):
            return self.parts
        if self._joined is None:
            self._joined = self.parts.joined()
        return self._joined

    # --- the result protocol -------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        buf = io.StringIO()
        self.write_json(buf)
        return json.loads(buf.getvalue())

    def tables(self) -> dict[str, pl.DataFrame]:
        ev = self.events
        df = self.event_frame()
        names = pl.Series(ev.names, dtype=pl.String)
        threads = ev.threads.rename({"name": "thread"})
        procs = ev.processes.rename({"name": "process"})
        out = (df.with_columns(name=names.gather(pl.Series(df["name"])) if len(df) else pl.lit("", pl.String),
                               ts_us=_exact_us("start_ps"), dur_us=_exact_us("duration_ps"),
                               ph=pl.when(pl.col("duration_ps") != 0).then(pl.lit("X")).otherwise(pl.lit("i")))
               .join(procs, on="pid", how="left").join(threads, on=["pid", "tid"], how="left")
               .select("pid", "process", "tid", "thread", "ts_us", "dur_us", "ph", "name"))
        tables = {"events": out}
        fl = ev.flows
        if fl is not None and len(fl):
            tables["flows"] = pl.DataFrame({
                "src_pid": ev.pid[fl.src], "src_tid": ev.tid[fl.src], "src_ts_us": ev.start_ps[fl.src] / 1e6,
                "src_name": [ev.names[i] for i in ev.name[fl.src].tolist()],
                "dst_pid": ev.pid[fl.dst], "dst_tid": ev.tid[fl.dst], "dst_ts_us": ev.start_ps[fl.dst] / 1e6,
                "dst_name": [ev.names[i] for i in ev.name[fl.dst].tolist()],
                "kind": [FLOW_KINDS[k] for k in fl.kind.tolist()],
                "category": [CONTEXT_TYPES[k] for k in fl.category.tolist()]})
        c = ev.counters
        if c is not None and len(c):
            tables["counters"] = pl.DataFrame({"pid": c.pid[c.series], "name": [c.names[k] for k in c.series.tolist()],
                                               "ts_us": c.t_ps / 1e6, "value": c.value})
        return tables

    # --- JSON ----------------------------------------------------------------------------
    def event_frame(self) -> pl.DataFrame:
        """Complete events, then instant events (each part in the events' own order).

        Viewers sort by time themselves; splitting by phase keeps each line's shape fixed.
        """
        ev = self.events
        df = pl.DataFrame({"pid": ev.pid, "tid": ev.tid, "start_ps": ev.start_ps,
                           "duration_ps": ev.duration_ps, "name": ev.name, "source": ev.source})
        complete = ev.duration_ps != 0
        if complete.all() or not complete.any():
            return df
        return pl.concat([df.filter(pl.Series(complete)), df.filter(pl.Series(~complete))])

    def write_json(self, out: IO[str]) -> None:
        out.write(HEADER)
        out.write(self.metadata_json())
        if isinstance(self.parts, SplitEvents) and len(self.parts) >= FLOWS_FIRST_EVENTS:
            self.parts.wait_for_flows()
        if self.with_args:
            self._write_events_with_args(out)
        else:
            _write_bytes(out, trace_json.event_chunks(self.parts))
        _write_bytes(out, trace_json.flow_lines(self.parts, FLOW_NAMES, CONTEXT_TYPES))
        _write_bytes(out, trace_json.counter_chunks(self.parts))
        out.write("{}]}\n")  # XProf ends with an empty event too: no trailing-comma special case

    def _write_events_with_args(self, out: IO[str]) -> None:
        """The events' lines with their stats (Polars strings; `args` is off by default)."""
        df = self.event_frame()
        names = _json_names(self.events.names)
        args = self.args_json(df)
        n_complete = int(np.count_nonzero(self.events.duration_ps))
        bounds = [(a, min(a + CHUNK_ROWS, n_complete)) for a in range(0, n_complete, CHUNK_ROWS)]
        bounds += [(a, min(a + CHUNK_ROWS, len(df))) for a in range(n_complete, len(df), CHUNK_ROWS)]
        _write_bytes(out, (event_lines(df.slice(a, b - a), names, args.slice(a, b - a)).str.join("").item()
                           .encode("utf-8") for a, b in bounds))

    def flows_json(self) -> str:
        """The flow links' `"ph":"s"` / `"f"` lines (trace_json.flow_lines)."""
        return b"".join(trace_json.flow_lines(self.parts, FLOW_NAMES, CONTEXT_TYPES)).decode("utf-8")

    def counters_json(self) -> str:
        """A `"ph":"C"` event per counter sample (trace_json.counter_lines)."""
        return trace_json.counter_lines(self.parts).decode("utf-8")

    def metadata_json(self) -> str:
        ev = self.parts
        parts = []
        for pid, name in ev.processes.iter_rows():
            parts.append(json.dumps({"args": {"name": name}, "name": "process_name", "ph": "M", "pid": pid}))
            parts.append(json.dumps({"args": {"sort_index": pid}, "name": "process_sort_index", "ph": "M",
                                     "pid": pid}))
            for tid, tname in ev.threads.filter(pl.col("pid") == pid).select("tid", "name").iter_rows():
                parts.append(json.dumps({"args": {"name": tname}, "name": "thread_name", "ph": "M",
                                         "pid": pid, "tid": tid}))
                parts.append(json.dumps({"args": {"sort_index": tid}, "name": "thread_sort_index", "ph": "M",
                                         "pid": pid, "tid": tid}))
        return "".join(p + ",\n" for p in parts)

    def args_json(self, df: pl.DataFrame) -> pl.Series:
        """`,"args":{...}` text per event row of df (empty when it has none).

        Op-metadata stats first, then the event's own (a later key wins, as in XProf's map);
        values are strings like XProf's; its internal stats (flow ids, root markers) are left out.
        """
        frame = self.events.frame
        if frame is None:  # events read back from a saved index carry no stats (analyze decodes for args)
            raise ValueError("args need the events' decoded frame")
        md_of_event = frame.events["metadata"].to_numpy()
        md_args = _stats_json(frame, "metadata")
        ev_args = _stats_json(frame, "event")
        src = df.select(owner=pl.col("source"))
        src = src.with_columns(md=pl.Series(np.where(src["owner"].to_numpy() >= 0,
                                                     md_of_event[np.maximum(src["owner"].to_numpy(), 0)], -1)))
        joined = (src.join(md_args.rename({"owner": "md", "kv": "mkv"}), on="md", how="left", maintain_order="left")
                  .join(ev_args.rename({"kv": "ekv"}), on="owner", how="left", maintain_order="left"))
        both = pl.concat_str([pl.col("mkv"), pl.col("ekv")], separator=",", ignore_nulls=True)
        return joined.select(pl.when(both.is_null() | (both == "")).then(pl.lit(""))
                             .otherwise(pl.lit(',"args":{') + both + pl.lit("}"))).to_series()


INTERNAL_STATS = ("_p", "_pt", "_c", "_ct", "_r", "flops", "program_id", "symbol_id")


def _stats_json(frame: XSpaceFrame, owner: str) -> pl.DataFrame:
    """owner, kv: the `"name":"value"` pairs of every stat of each owner row, comma-joined."""
    from tputui.data.raw import KIND_DOUBLE, KIND_INT64, KIND_REF, KIND_STR, KIND_UINT64

    names = sorted(set(frame.raw.sm_name) - set(INTERNAL_STATS))
    st = frame.stat_values(owner, names)
    if st.height == 0:
        return pl.DataFrame({"owner": [], "kv": []}, schema={"owner": pl.Int64, "kv": pl.String})
    texts = pl.Series([json.dumps(t, ensure_ascii=False) for t in frame.texts], dtype=pl.String)
    k = pl.col("kind")
    text = texts.gather(pl.Series(np.maximum(st["text_id"].to_numpy(), 0).astype(np.uint32)))
    value = (pl.when(k == KIND_INT64).then(pl.lit('"') + pl.col("int").cast(pl.String) + pl.lit('"'))
             .when(k == KIND_UINT64).then(pl.lit('"') + pl.col("uint").cast(pl.String) + pl.lit('"'))
             .when(k == KIND_DOUBLE).then(pl.lit('"') + pl.col("float").cast(pl.String) + pl.lit('"'))
             .when((k == KIND_STR) | (k == KIND_REF)).then(pl.col("_text")))
    return (st.with_columns(_text=text)
            .select("owner", kv=pl.col("stat_name").map_elements(json.dumps, return_dtype=pl.String) + pl.lit(":")
                    + value)
            .drop_nulls("kv").group_by("owner", maintain_order=True).agg(pl.col("kv").str.join(","))
            .with_columns(pl.col("owner").cast(pl.Int64)))


def _write_bytes(out: IO[str], chunks) -> None:
    """Bytes chunks to a text stream: straight to its binary buffer when it has one (a file,
    stdout, the output cache's tee), else decoded."""
    binary = getattr(out, "buffer", None)
    if binary is not None:
        out.flush()
    for chunk in chunks:
        if not chunk:
            continue
        if binary is not None:
            binary.write(chunk)
        else:
            out.write(chunk.decode("utf-8"))
    if binary is not None:
        binary.flush()


def _json_names(names: list[str]) -> pl.Series:
    return pl.Series([json.dumps(n, ensure_ascii=False) for n in names], dtype=pl.String)


def _exact_us(col: str) -> pl.Expr:
    """Microseconds as the shortest exact decimal text (CSV): 181520000 ps -> "181.52"."""
    return micros(col, signed=True).str.strip_chars_end("0").str.strip_chars_end(".")


def micros(col: str, signed: bool = False) -> pl.Expr:
    """Picoseconds (int) -> exact microseconds text with six decimals: 22323000 -> "22.323000"."""
    ps = pl.col(col).abs() if signed else pl.col(col)
    text = pl.concat_str([(ps // 1_000_000).cast(pl.String), pl.lit("."),
                          ((ps % 1_000_000) + 1_000_000).cast(pl.String).str.slice(1)])
    return pl.when(pl.col(col) < 0).then(pl.lit("-") + text).otherwise(text) if signed else text


def event_lines(df: pl.DataFrame, names: pl.Series, args: pl.Series | None = None) -> pl.Series:
    """One JSON object (and a trailing comma and newline) per event row of df: pid, tid,
    start_ps, duration_ps, name (and args).

    The rows must be all complete events or all instant events (see TraceExport.event_frame).
    Times are trace_json.us_text, like the lines trace_json writes without args.
    """
    if len(df) == 0:
        return pl.Series("line", [], dtype=pl.String)
    d = df.with_columns(_name=names.gather(pl.Series(df["name"].cast(pl.UInt32))),
                        _ts=trace_json.us_text(df["start_ps"].to_numpy()),
                        _dur=trace_json.us_text(df["duration_ps"].to_numpy()))
    if args is not None:
        d = d.with_columns(_args=args)
    complete = bool(df["duration_ps"][0] != 0)
    kind = ([pl.lit(',"dur":'), pl.col("_dur"), pl.lit(',"ph":"X","name":')] if complete
            else [pl.lit(',"ph":"i","s":"t","name":')])
    expr = pl.concat_str([
        pl.lit('{"pid":'), pl.col("pid").cast(pl.String),
        pl.lit(',"tid":'), pl.col("tid").cast(pl.String),
        pl.lit(',"ts":'), pl.col("_ts"),
        *kind, pl.col("_name"), *([pl.col("_args")] if args is not None else []), pl.lit("},\n"),
    ])
    return d.select(expr.alias("line")).to_series()


def document_events(doc: dict[str, Any]) -> np.ndarray:
    """(pid, tid, ts_ns, dur_ns, is_complete) rows of a parsed document's X/i events (tests, tools)."""
    rows = [(e["pid"], e.get("tid", 0), round(float(e["ts"]) * 1000), round(float(e.get("dur", 0)) * 1000),
             e["ph"] == "X") for e in doc["traceEvents"] if e.get("ph") in ("X", "i")]
    return np.array(rows, dtype=np.int64).reshape(-1, 5)
