"""The trace viewer's events as a Chrome Trace Event JSON document (`tputui export --tool trace_viewer`).

The document has XProf's shape: `{"displayTimeUnit": "ns", "metadata": {...}, "traceEvents": [...]}`
with `process_name` / `process_sort_index` / `thread_name` / `thread_sort_index` metadata
(`ph: "M"`) events, complete events (`ph: "X"`, with `dur`) and zero-duration instant events
(`ph: "i"`, `s: "t"`). `ts` and `dur` are microseconds from the profile start: the exact decimal
of the picosecond integers (the shortest float text, as XProf writes, up to 1000 s; six fixed
decimals beyond). It opens in Perfetto and
chrome://tracing. The events are those of `trace_events.trace_events` (the same events,
names, pids and tids as XProf's trace viewer).

The JSON is built column-wise: each event's line is one Polars string expression over the
whole table, names are JSON-escaped once per distinct name, and the document is streamed
out in chunks.

Options: `args=True` adds each event's stats (event and op-metadata stats) as `args`,
as XProf does; off by default because it multiplies the document size.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import polars as pl

from tputui.analysis.result import NoDataError
from tputui.analysis.trace_cache import cached_events
from tputui.analysis.trace_events import TraceEvents, trace_events
from tputui.analysis.trace_flows import CONTEXT_TYPES, FLOW_KINDS, FLOW_NAMES
from tputui.data.xspace import XSpaceFrame

HEADER = '{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},\n"traceEvents":[\n'
CHUNK_ROWS = 500_000
FLOAT_EXACT_PS = 10**15  # below this, float text of ps / 1e6 is exact (<= 15 significant digits)


def analyze(run, host: str | None = None, args: Any = False, **_ui_options) -> TraceExport:
    """The trace viewer's events of one host (the run's first host when None).

    From the trace viewer's saved index when there is one (no decode); with `args` the stats
    come from the frame, so it is decoded."""
    with_args = _truthy(args)
    ev = None if with_args else cached_events(run, host)
    if ev is None:
        ev = trace_events(run.frame(host))
    if len(ev) == 0 and ev.threads.height == 0:
        raise NoDataError("no host threads or device planes in this profile")
    return TraceExport(ev, with_args=with_args)


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


@dataclass
class TraceExport:
    events: TraceEvents
    with_args: bool = False

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
        df = self.event_frame()
        names = _json_names(self.events.names)
        args = self.args_json(df) if self.with_args else None
        binary = getattr(out, "buffer", None)  # a real file / stdout: Polars writes the bytes itself
        if binary is not None:
            out.flush()
        n_complete = int(np.count_nonzero(self.events.duration_ps))
        bounds = [(a, min(a + CHUNK_ROWS, n_complete)) for a in range(0, n_complete, CHUNK_ROWS)]
        bounds += [(a, min(a + CHUNK_ROWS, len(df))) for a in range(n_complete, len(df), CHUNK_ROWS)]
        tails = None
        for a, b in bounds:
            chunk = df.slice(a, b - a)
            if args is None and _float_exact(chunk):
                # Polars' CSV writer formats the numbers itself; a space separator is JSON whitespace.
                tails = tails or (_tails(self.events.names, True), _tails(self.events.names, False))
                cols, sep = event_columns(chunk, *tails), " "
            else:
                cols, sep = event_lines(chunk, names, None if args is None else args.slice(a, b - a)).to_frame(), ","
            # One line per event with its trailing comma; the CSV writer adds the newlines.
            if binary is not None:
                cols.write_csv(binary, include_header=False, quote_style="never", separator=sep)
            else:
                out.write(cols.write_csv(include_header=False, quote_style="never", separator=sep))
        if binary is not None:
            binary.flush()
        out.write(self.flows_json())
        out.write(self.counters_json())
        out.write("{}]}\n")  # XProf ends with an empty event too: no trailing-comma special case

    def flows_json(self) -> str:
        """A Chrome-trace flow per link (trace_flows): `"ph":"s"` on the source event's track at
        its start, `"ph":"f"` (`"bp":"e"`: bound to the enclosing slice) on the destination's;
        `id` / `bind_id` number the links, `cat` is XProf's context type, `name` the rule."""
        ev, fl = self.events, self.events.flows
        if fl is None or not len(fl):
            return ""
        lines = []
        names = {k: json.dumps(v) for k, v in FLOW_NAMES.items()}
        # Links numbered in time order of their ends (then track, rule, category), not in event-row
        # order: the same profile read another way (a riegeli run's merged lines) numbers them alike.
        src, dst = np.asarray(fl.src), np.asarray(fl.dst)
        order = np.lexsort((fl.category, fl.kind, ev.tid[dst], ev.pid[dst], ev.start_ps[dst],
                            ev.tid[src], ev.pid[src], ev.start_ps[src]))
        src, dst = src[order], dst[order]
        cats = {c: json.dumps(CONTEXT_TYPES[c] or "flow") for c in set(np.asarray(fl.category).tolist())}
        # Gathered as columns first: indexing numpy per link costs more than the formatting.
        for k, (sp, st, ss, dp, dt, ds, kind, cat) in enumerate(zip(
                ev.pid[src].tolist(), ev.tid[src].tolist(), ev.start_ps[src].tolist(),
                ev.pid[dst].tolist(), ev.tid[dst].tolist(), ev.start_ps[dst].tolist(),
                np.asarray(fl.kind)[order].tolist(), np.asarray(fl.category)[order].tolist()), 1):
            head = f'"id":{k},"bind_id":{k},"name":{names[kind]},"cat":{cats[cat]}'
            lines.append(f'{{"pid":{sp},"tid":{st},"ts":{_us(ss)},"ph":"s",{head}}},\n')
            lines.append(f'{{"pid":{dp},"tid":{dt},"ts":{_us(ds)},"ph":"f","bp":"e",{head}}},\n')
        return "".join(lines)

    def counters_json(self) -> str:
        """A `"ph":"C"` event per counter sample: `args.value` is the series' value from then on."""
        c = self.events.counters
        if c is None or not len(c):
            return ""
        names = [json.dumps(n, ensure_ascii=False) for n in c.names]
        pids = c.pid.tolist()
        return "".join(f'{{"pid":{pids[k]},"name":{names[k]},"ph":"C","ts":{_us(t)},"args":{{"value":{_num(v)}}}}},\n'
                       for k, t, v in zip(c.series.tolist(), c.t_ps.tolist(), c.value.tolist()))

    def metadata_json(self) -> str:
        ev = self.events
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


def _us(ps: int) -> str:
    """Picoseconds as microseconds text, exact (as the events' `ts`)."""
    if abs(ps) < FLOAT_EXACT_PS:
        return repr(ps / 1e6)
    sign, ps = ("-", -ps) if ps < 0 else ("", ps)
    return f"{sign}{ps // 1_000_000}.{ps % 1_000_000:06d}"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**63 else repr(float(v))


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


def _float_exact(df: pl.DataFrame) -> bool:
    if not len(df):
        return False
    biggest = max(int(np.abs(df["start_ps"].to_numpy()).max()), int(np.abs(df["duration_ps"].to_numpy()).max()))
    return biggest < FLOAT_EXACT_PS


def _tails(names: list[str], complete: bool) -> pl.Series:
    """Per name id, the end of an event's JSON line: phase, name, closing brace and comma."""
    head = ',"ph":"X","name":' if complete else ',"ph":"i","s":"t","name":'
    return pl.Series([head + json.dumps(n, ensure_ascii=False) + "}," for n in names], dtype=pl.String)


def event_columns(df: pl.DataFrame, tails_x: pl.Series, tails_i: pl.Series) -> pl.DataFrame:
    """The JSON lines of df's events as CSV columns to write with a space separator.

    `{"pid": 701 ,"tid": 5 ,"ts": 9.614 ,"dur": 54.261 ,"ph":"X","name":"..."},` (the spaces are
    JSON whitespace): numbers stay numbers, so Polars' writer formats them, with no string
    building per event. Needs |ps| < FLOAT_EXACT_PS (see _float_exact) and one phase per frame.
    """
    complete = bool(df["duration_ps"][0] != 0)
    ts = pl.Series("ts", df["start_ps"].to_numpy() / 1e6)  # numpy: correctly rounded division
    cols = [pl.lit('{"pid":').alias("a"), "pid", pl.lit(',"tid":').alias("b"), "tid", pl.lit(',"ts":').alias("c"), ts]
    if complete:
        cols += [pl.lit(',"dur":').alias("d"), pl.Series("dur", df["duration_ps"].to_numpy() / 1e6)]
    tails = tails_x if complete else tails_i
    cols.append(pl.lit(tails).gather(pl.col("name").cast(pl.UInt32)).alias("n"))
    return df.select(cols)


def event_lines(df: pl.DataFrame, names: pl.Series, args: pl.Series | None = None) -> pl.Series:
    """One JSON object (and a trailing comma) per event row of df: pid, tid, start_ps, duration_ps, name.

    The rows must be all complete events or all instant events (see TraceExport.event_frame).
    """
    if len(df) == 0:
        return pl.Series("line", [], dtype=pl.String)
    d = df.with_columns(_name=names.gather(pl.Series(df["name"].cast(pl.UInt32))))
    if args is not None:
        d = d.with_columns(_args=args)
    complete = bool(df["duration_ps"][0] != 0)
    start, dur = df["start_ps"].to_numpy(), df["duration_ps"].to_numpy()
    if max(int(np.abs(start).max()), int(np.abs(dur).max())) < FLOAT_EXACT_PS:
        # Shortest float text of ps / 1e6 is the exact decimal below 1e15 ps (15 digits), and
        # is what XProf writes; numpy's division is correctly rounded (Polars' may not be).
        d = d.with_columns(_ts=pl.Series(start / 1e6), _dur=pl.Series(dur / 1e6))
        ts, du = pl.col("_ts").cast(pl.String), pl.col("_dur").cast(pl.String)
    else:
        ts = micros("start_ps", signed=bool(start.min() < 0))
        du = micros("duration_ps", signed=bool(dur.min() < 0))
    kind = ([pl.lit(',"dur":'), du, pl.lit(',"ph":"X","name":')] if complete
            else [pl.lit(',"ph":"i","s":"t","name":')])
    expr = pl.concat_str([
        pl.lit('{"pid":'), pl.col("pid").cast(pl.String),
        pl.lit(',"tid":'), pl.col("tid").cast(pl.String),
        pl.lit(',"ts":'), ts,
        *kind, pl.col("_name"), *([pl.col("_args")] if args is not None else []), pl.lit("},"),
    ])
    return d.select(expr.alias("line")).to_series()


def document_events(doc: dict[str, Any]) -> np.ndarray:
    """(pid, tid, ts_ns, dur_ns, is_complete) rows of a parsed document's X/i events (tests, tools)."""
    rows = [(e["pid"], e.get("tid", 0), round(float(e["ts"]) * 1000), round(float(e.get("dur", 0)) * 1000),
             e["ph"] == "X") for e in doc["traceEvents"] if e.get("ph") in ("X", "i")]
    return np.array(rows, dtype=np.int64).reshape(-1, 5)
