"""The JSON lines of the trace viewer export (trace_export): events, flow links, counter samples.

Each part is bytes, built by the C extension `_trace_json` (one pass, no Python object per event,
the GIL released) or, when it is not built, by the column-wise reference here (Polars string
expressions); tests check both give the same bytes.

Times are picoseconds written as microseconds (`us_text`): the shortest float text of ps / 1e6,
which below FLOAT_EXACT_PS (1000 s) is the exact decimal (<= 15 significant digits; Python's
repr, so `5e-05` below 1e-4), and six fixed decimals from 1000 s on, where a float would round.
Each number is written by its own size (not by the largest in its chunk).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl

_trace_json: ModuleType | None  # None: the C extension is not built
try:
    from tputui.analysis import _trace_json
except ImportError:  # built without a C compiler: the Polars reference
    _trace_json = None

FLOAT_EXACT_PS = 10**15  # below this, float text of ps / 1e6 is exact (<= 15 significant digits)
BLOCK_ROWS = 1 << 18  # raw events gathered from the frame at a time (SplitEvents: ~7 MB of columns)
CHUNK_ROWS = 1 << 16  # events per written chunk (~9 MB of JSON: below malloc's mmap threshold, so
# the chunks reuse heap memory instead of each faulting in fresh zeroed pages: 0.25 -> 0.16 s at 2.7M events)


def us(ps: int) -> str:
    """Picoseconds as microseconds text (one value; us_text is the column-wise form)."""
    if abs(ps) < FLOAT_EXACT_PS:
        return repr(ps / 1e6)
    sign, ps = ("-", -ps) if ps < 0 else ("", ps)
    return f"{sign}{ps // 1_000_000}.{ps % 1_000_000:06d}"


def us_text(ps: np.ndarray) -> pl.Series:
    """`us` of every value, as a String Series, column-wise."""
    ps = np.asarray(ps, np.int64)
    mag = np.abs(ps)
    parts = pl.DataFrame({"m": mag}).select(
        pl.concat_str([(pl.col("m") // 1_000_000).cast(pl.String), pl.lit("."),
                       ((pl.col("m") % 1_000_000) + 1_000_000).cast(pl.String).str.slice(1)]).alias("six"),
        exact=pl.col("m") < FLOAT_EXACT_PS)
    short = pl.col("six").str.strip_chars_end("0")
    short = pl.when(short.str.ends_with(".")).then(short + pl.lit("0")).otherwise(short)
    text = parts.select(pl.when(pl.col("exact")).then(short).otherwise(pl.col("six")).alias("us")).to_series()
    if (ps < 0).any():
        text = pl.select(pl.when(pl.Series(ps < 0)).then(pl.lit("-") + text).otherwise(text)).to_series()
    tiny = np.flatnonzero((mag < 100) & (mag != 0))  # repr's exponent form: 5e-05
    if len(tiny):
        text = text.scatter(tiny, [us(int(v)) for v in ps[tiny].tolist()])
    return text.alias("us")


def _blob(texts: list[str]) -> tuple[bytes, np.ndarray]:
    """Texts as one UTF-8 blob and the offsets of each (len + 1 values)."""
    parts = [t.encode("utf-8") for t in texts]
    off = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=off[1:])
    return b"".join(parts), off


def event_tails(names: list[str], complete: bool) -> list[str]:
    """Per name id, the end of an event's JSON line: phase, name, closing brace, comma, newline."""
    head = ',"ph":"X","name":' if complete else ',"ph":"i","s":"t","name":'
    return [head + json.dumps(n, ensure_ascii=False) + "},\n" for n in names]


def event_chunks(ev: Any, use_c: bool = True, rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """The events' JSON lines: complete events, then instant events, each in row order.

    Viewers sort by time themselves; splitting by phase keeps each line's shape fixed. `ev` is a
    TraceEvents or a SplitEvents (its raw part's columns gathered block by block): the complete
    events are written block by block, the (few) instant ones kept aside and written after."""
    instant: list[list[np.ndarray]] = [[] for _ in range(5)]
    c = _trace_json is not None and use_c
    tails = _blob(event_tails(ev.names, True)) if c else pl.Series(event_tails(ev.names, True), dtype=pl.String)
    for block in ev.blocks(BLOCK_ROWS):
        yield from _block_lines(block, tails, True, c, rows)
        keep = np.flatnonzero(block[3] == 0)
        if len(keep):
            for k, col in enumerate(block):
                instant[k].append(col[keep])
    if instant[0]:
        tails = _blob(event_tails(ev.names, False)) if c else pl.Series(event_tails(ev.names, False), dtype=pl.String)
        yield from _block_lines(tuple(np.concatenate(cols) for cols in instant), tails, False, c, rows)


def _block_lines(cols: tuple[np.ndarray, ...], tails: Any, complete: bool, use_c: bool,
                 rows: int) -> Iterator[bytes]:
    """The lines of one block's complete (or instant) events, in chunks of `rows` rows; tails:
    event_tails as a _blob (C) or a String Series."""
    pid, tid = np.ascontiguousarray(cols[0], np.uint32), np.ascontiguousarray(cols[1], np.uint32)
    start, dur = np.ascontiguousarray(cols[2], np.int64), np.ascontiguousarray(cols[3], np.int64)
    name = np.ascontiguousarray(cols[4], np.int32)
    n = len(pid)
    if use_c:
        assert _trace_json is not None
        blob, off = tails
        for a in range(0, n, rows):
            chunk = _trace_json.events(pid, tid, start, dur, name, blob, off, a, min(a + rows, n), complete)
            if chunk:
                yield chunk
        return
    for a in range(0, n, rows):
        keep = (dur[a:a + rows] != 0) == complete
        if not keep.any():
            continue
        sel = np.flatnonzero(keep) + a
        parts = [pl.lit('{"pid":'), pl.Series(pid[sel]).cast(pl.String), pl.lit(',"tid":'),
                 pl.Series(tid[sel]).cast(pl.String), pl.lit(',"ts":'), us_text(start[sel])]
        if complete:
            parts += [pl.lit(',"dur":'), us_text(dur[sel])]
        parts.append(tails.gather(pl.Series(name[sel].astype(np.uint32))))
        yield _joined(parts)


def _joined(cols: list) -> bytes:
    return pl.select(pl.concat_str(cols).str.join("")).item().encode("utf-8")


def flow_lines(ev: Any, names: dict[int, str], categories: tuple[str, ...], use_c: bool = True,
               rows: int = CHUNK_ROWS // 2) -> Iterator[bytes]:
    """A Chrome-trace flow per link of ev.flows: `"ph":"s"` on the source event's track at its
    start, `"ph":"f"` (`"bp":"e"`: bound to the enclosing slice) on the destination's; `id` /
    `bind_id` number the links from 1, `cat` is the context type (`flow` when unknown), `name`
    the rule (names: FLOW_* -> name). In chunks of `rows` links."""
    fl = ev.flows
    if fl is None or not len(fl):
        return
    def placed(end) -> list[np.ndarray]:  # pid, tid, start_ps of the link ends, as the C writer takes them
        return [np.ascontiguousarray(c, t) for c, t in zip(ev.take(np.asarray(end)), (np.uint32, np.uint32, np.int64))]

    # Links numbered in time order of their ends (then track, rule, category), not in event-row
    # order: the same profile read another way (a riegeli run's merged lines) numbers them alike.
    # The ends are gathered once and sorted; each chunk takes its rows in that order.
    ends = [*placed(fl.src), *placed(fl.dst)]  # sp, st, ss, dp, dt, ds
    kind, category = np.asarray(fl.kind), np.asarray(fl.category)
    order = np.lexsort((category, kind, ends[4], ends[3], ends[5], ends[1], ends[0], ends[2]))
    ncat = len(categories)
    kinds = max(names) + 1
    tails = [f',"name":{json.dumps(names.get(k, ""))},"cat":{json.dumps(categories[c] or "flow")}}},\n'
             for k in range(kinds) for c in range(ncat)]
    blob, off = _blob(tails)
    for a in range(0, len(order), rows):
        b = min(a + rows, len(order))
        at = order[a:b]
        sp, st, ss, dp, dt, ds = (c[at] for c in ends)
        code = kind[at].astype(np.int64) * ncat + category[at]
        if _trace_json is not None and use_c:
            yield _trace_json.flows(sp, st, ss, dp, dt, ds, code, blob, off, a + 1)
            continue
        ids = pl.Series(np.arange(a + 1, b + 1, dtype=np.int64)).cast(pl.String)
        tail = pl.Series(tails, dtype=pl.String).gather(pl.Series(code.astype(np.uint32)))
        head = [pl.lit(',"id":'), ids, pl.lit(',"bind_id":'), ids, tail]
        starts = pl.concat_str([pl.lit('{"pid":'), pl.Series(sp).cast(pl.String), pl.lit(',"tid":'),
                                pl.Series(st).cast(pl.String), pl.lit(',"ts":'), us_text(ss),
                                pl.lit(',"ph":"s"'), *head])
        finishes = pl.concat_str([pl.lit('{"pid":'), pl.Series(dp).cast(pl.String), pl.lit(',"tid":'),
                                  pl.Series(dt).cast(pl.String), pl.lit(',"ts":'), us_text(ds),
                                  pl.lit(',"ph":"f","bp":"e"'), *head])
        both = pl.select(s=starts, f=finishes).select(pl.concat_str([pl.col("s"), pl.col("f")]).str.join(""))
        yield both.item().encode("utf-8")


def counter_lines(ev: Any, use_c: bool = True) -> bytes:
    """A `"ph":"C"` event per counter sample: `args.value` is the series' value from then on
    (the integer when it is one, else the float's repr)."""
    return b"".join(counter_chunks(ev, use_c))


def counter_chunks(ev: Any, use_c: bool = True, rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """counter_lines in chunks of `rows` samples (a writer holds one chunk at a time)."""
    c = ev.counters
    if c is None or not len(c):
        return
    pid = np.ascontiguousarray(np.asarray(c.pid, np.uint32)[c.series])
    series, t = np.ascontiguousarray(c.series, np.int64), np.ascontiguousarray(c.t_ps, np.int64)
    value = np.ascontiguousarray(c.value, np.float64)
    names = [json.dumps(n, ensure_ascii=False) for n in c.names]
    blob, off = _blob(names)
    name_texts = pl.Series(names, dtype=pl.String)
    for a in range(0, len(t), rows):
        b = min(a + rows, len(t))
        if _trace_json is not None and use_c:
            yield _trace_json.counters(pid[a:b], series[a:b], t[a:b], value[a:b], blob, off)
        else:
            yield _counter_text(pid[a:b], series[a:b], t[a:b], value[a:b], name_texts)


def _counter_text(pid: np.ndarray, series: np.ndarray, t: np.ndarray, value: np.ndarray, names: pl.Series) -> bytes:
    """The Polars reference of the C writer's counter lines."""
    integral = np.isfinite(value) & (value == np.floor(value)) & (np.abs(value) < 2.0**63)
    vtext = pl.Series(np.where(integral, value, 0).astype(np.int64)).cast(pl.String)
    other = np.flatnonzero(~integral)
    if len(other):
        vtext = vtext.scatter(other, [repr(float(v)) for v in value[other].tolist()])
    line = pl.concat_str([pl.lit('{"pid":'), pl.Series(pid).cast(pl.String), pl.lit(',"name":'),
                          names.gather(pl.Series(series.astype(np.uint32))),
                          pl.lit(',"ph":"C","ts":'), us_text(t), pl.lit(',"args":{"value":'), vtext, pl.lit("}},\n")])
    return pl.select(line.str.join("")).item().encode("utf-8")
