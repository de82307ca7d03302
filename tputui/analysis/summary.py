"""Profile summary: what is in one run (the app's first screen and `--tool summary`).

Hosts, planes with their lines and event counts, device type and count, time span, the
capture options recorded in the `Task Environment` plane, and the batch size when the profile
records one (a `batch_size` stat: tf.data's batching iterators carry it).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import giant_host
from tputui.analysis.batch_size import BATCH_SIZE_STAT, recorded_batch_sizes
from tputui.analysis.host_pieces import Piece
from tputui.data import schema
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame


@dataclass
class HostSummary:
    host: str
    file: str
    size_bytes: int
    planes: pl.DataFrame  # plane, name, lines, events, device_type
    lines: pl.DataFrame  # plane_name, line, name, events, first_ps, last_end_ps
    span_ps: tuple[int, int] | None
    start_time_ns: int | None
    stop_time_ns: int | None
    capture_options: dict[str, Any]
    device_type: str
    device_count: int
    batch_sizes: list[int] = field(default_factory=list)  # distinct `batch_size` stat values
    batch_source: str = ""  # the event (or plane) that carries the first of them
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def num_events(self) -> int:
        return int(self.planes["events"].sum()) if self.planes.height else 0

    @property
    def planes_with_events(self) -> pl.DataFrame:
        return self.planes.filter(pl.col("events") > 0)


@dataclass
class RunSummary:
    run: str
    hosts: list[HostSummary]

    @property
    def device_type(self) -> str:
        types = {h.device_type for h in self.hosts if h.device_count}
        return ", ".join(sorted(types)) if types else "CPU"

    @property
    def device_count(self) -> int:
        return sum(h.device_count for h in self.hosts)

    @property
    def num_events(self) -> int:
        return sum(h.num_events for h in self.hosts)

    @property
    def batch_sizes(self) -> list[int]:
        """Every batch size the hosts' profiles record (empty when none does)."""
        return sorted({b for h in self.hosts for b in h.batch_sizes})

    @property
    def batch_source(self) -> str:
        return next((h.batch_source for h in self.hosts if h.batch_sizes), "")

    def line_spans(self) -> pl.DataFrame:
        """Every host's lines as the summary lists them: host, plane, line, events, span (ps)."""
        t = self.tables()["lines"]
        return t.select("host", pl.col("plane_name").alias("plane"), pl.col("name").alias("line"), "events",
                        span=t["last_end_ps"] - t["first_ps"])

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "device_type": self.device_type,
            "device_count": self.device_count,
            "host_count": len(self.hosts),
            "batch_size": self.batch_sizes[0] if len(self.batch_sizes) == 1 else (self.batch_sizes or None),
            "batch_size_source": self.batch_source or None,
            "hosts": [{
                "host": h.host, "file": h.file, "size_bytes": h.size_bytes,
                "device_type": h.device_type, "device_count": h.device_count,
                "span_ps": list(h.span_ps) if h.span_ps else None,
                "profile_start_time_ns": h.start_time_ns, "profile_stop_time_ns": h.stop_time_ns,
                "capture_options": h.capture_options, "batch_sizes": h.batch_sizes,
                "planes": h.planes.to_dicts(), "lines": h.lines.to_dicts(),
                "errors": h.errors, "warnings": h.warnings,
            } for h in self.hosts],
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        lines = [h.lines.with_columns(host=pl.lit(h.host)) for h in self.hosts]
        planes = [h.planes.with_columns(host=pl.lit(h.host)) for h in self.hosts]
        return {"lines": pl.concat(lines).select("host", pl.exclude("host")),
                "planes": pl.concat(planes).select("host", pl.exclude("host"))}


def capture_options(frame: XSpaceFrame) -> tuple[dict[str, Any], int | None, int | None]:
    """ProfileOptions and start/stop time (epoch ns) from the Task Environment plane."""
    p = frame.plane_index(schema.TASK_ENV_PLANE)
    if p is None:
        return {}, None, None
    stats = frame.plane_stat_map(p)
    opts: dict[str, Any] = {}
    blob = stats.get(schema.STAT_PROFILE_OPTIONS)
    if isinstance(blob, bytes):
        from google.protobuf.json_format import MessageToDict

        from tputui.proto import profiler_options_pb2

        msg = profiler_options_pb2.ProfileOptions()
        try:
            msg.ParseFromString(blob)
            opts = MessageToDict(msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
        except Exception:  # a damaged options blob should not hide the rest of the summary
            opts = {"error": "unreadable profile_options"}
    start, stop = stats.get(schema.STAT_PROFILE_START), stats.get(schema.STAT_PROFILE_STOP)
    return opts, start if isinstance(start, int) else None, stop if isinstance(stop, int) else None


def _line_rows(frame: XSpaceFrame) -> pl.DataFrame:
    """One row per line of the frame: line, plane, plane_name, name, events, first_ps, last_end_ps."""
    ev = frame.events
    per_line = ev.group_by("line").agg(
        events=pl.len(), first_ps=pl.col("start_ps").min(),
        last_end_ps=(pl.col("start_ps") + pl.col("duration_ps")).max())
    return (frame.lines.select("line", "plane", "name", "display_name")
            .join(per_line, on="line", how="left")
            .with_columns(pl.col("events").fill_null(0).cast(pl.Int64))
            .join(frame.planes.select("plane", plane_name="name"), on="plane")
            .with_columns(name=pl.when(pl.col("display_name") != "").then("display_name").otherwise("name"))
            .select("line", "plane", "plane_name", "name", "events", "first_ps", "last_end_ps")
            .sort("line"))


_LINE_COLUMNS = ("plane_name", "line", "name", "events", "first_ps", "last_end_ps")


def _plane_table(planes: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """plane, name, lines, events, device_type: `planes` (plane, name) with their lines' counts."""
    per_plane = lines.group_by("plane").agg(lines=pl.len(), events=pl.col("events").sum())
    return (planes.join(per_plane, on="plane", how="left")
            .with_columns(pl.col("lines").fill_null(0).cast(pl.Int64), pl.col("events").fill_null(0).cast(pl.Int64))
            .sort("plane")
            .with_columns(device_type=pl.Series(
                [schema.device_kind(n) if n.startswith(schema.DEVICE_PLANE_PREFIXES) else "" for n in planes["name"]],
                dtype=pl.String)))


def _device_types(frame: XSpaceFrame, places: list[int] | None = None) -> dict[int, str]:
    """Each device plane's place (the file's, when `places` maps the frame's planes) -> its type."""
    out = {}
    for p, name in enumerate(frame.raw.plane_name):
        if name.startswith(schema.DEVICE_PLANE_PREFIXES):
            stats = frame.plane_stat_map(p)
            out[places[p] if places else p] = str(stats.get(schema.STAT_DEVICE_TYPE_STRING) or schema.device_kind(name))
    return out


def _span(lines: pl.DataFrame) -> tuple[int, int] | None:
    busy = lines.filter(pl.col("events") > 0)
    return (int(busy["first_ps"].min()), int(busy["last_end_ps"].max())) if busy.height else None  # type: ignore[arg-type]


def summarize_host(host: str, path: str, size: int, frame: XSpaceFrame) -> HostSummary:
    rows = _line_rows(frame)
    planes = _plane_table(frame.planes.select("plane", "name"), rows)
    device_types = list(_device_types(frame).values())
    opts, t0, t1 = capture_options(frame)
    batches, batch_source = recorded_batch_sizes(frame)
    return HostSummary(
        host=host, file=path, size_bytes=size, planes=planes, lines=rows.select(_LINE_COLUMNS), span_ps=_span(rows),
        start_time_ns=t0, stop_time_ns=t1, capture_options=opts,
        device_type=device_types[0] if device_types else "CPU", device_count=len(device_types),
        batch_sizes=batches, batch_source=batch_source, errors=list(frame.errors), warnings=list(frame.warnings))


def summarize_pieces(host: str, path: str, size: int, frames: Iterable[tuple[Piece, XSpaceFrame]]) -> HostSummary:
    """A giant host's summary from its pieces (giant_host.py), one frame at a time: each piece's
    lines, placed in the host's plane and line order, are the lines the whole frame would list."""
    parts: list[pl.DataFrame] = []
    names: dict[int, str] = {}
    device_types: dict[int, str] = {}
    batches: list[tuple[tuple, str, list[int]]] = []
    opts: dict[str, Any] = {}
    t0 = t1 = None
    errors: list[str] = []
    warnings: list[str] = []
    for piece, frame in frames:
        places = np.asarray(piece.index, np.int64)
        rows = _line_rows(frame)
        raw = frame.raw
        # A line's place in its plane: a thread piece holds the lines piece.lines of its plane.
        local = np.arange(len(raw.line_plane), dtype=np.int64) - np.searchsorted(raw.line_plane, raw.line_plane)
        in_plane = np.asarray(piece.lines, np.int64)[local] if piece.kind == "threads" else local
        parts.append(rows.with_columns(plane=pl.Series(places[rows["plane"].to_numpy()], dtype=pl.Int32),
                                       in_plane=pl.Series(in_plane[rows["line"].to_numpy()])))
        names.update(zip(piece.index, raw.plane_name))
        device_types.update(_device_types(frame, list(piece.index)))
        batches += _batch_candidates(frame, places, in_plane)
        if piece.kind == "meta":
            opts, t0, t1 = capture_options(frame)
            errors, warnings = list(frame.errors), list(frame.warnings)
        del frame, raw, rows  # before the next piece is decoded
    lines = (pl.concat(parts).sort("plane", "in_plane")
             .with_columns(line=pl.int_range(pl.len(), dtype=pl.Int32)).drop("in_plane"))
    order = sorted(names)
    planes = _plane_table(pl.DataFrame({"plane": np.asarray(order, np.int32),
                                        "name": pl.Series([names[p] for p in order], dtype=pl.String)}), lines)
    types = [device_types[p] for p in sorted(device_types)]
    found = sorted({b for _, _, values in batches for b in values})
    source = min(batches)[1] if batches else ""
    return HostSummary(
        host=host, file=path, size_bytes=size, planes=planes, lines=lines.select(_LINE_COLUMNS), span_ps=_span(lines),
        start_time_ns=t0, stop_time_ns=t1, capture_options=opts,
        device_type=types[0] if types else "CPU", device_count=len(types),
        batch_sizes=found, batch_source=source, errors=errors, warnings=warnings)


def _batch_candidates(frame: XSpaceFrame, places: np.ndarray, in_plane: np.ndarray) -> list[tuple[tuple, str, list[int]]]:
    """recorded_batch_sizes of a piece: per owner kind with values, (where its first one lies in
    the whole host: kind, plane, line, place), what carries it, the values."""
    raw = frame.raw
    out = []
    for kind, owner in enumerate(("event", "metadata", "plane")):
        v = frame.stat_values(owner, BATCH_SIZE_STAT).filter(pl.col("int") > 0)
        if not len(v):
            continue
        row = int(v["owner"][0])
        if owner == "event":
            ln = int(raw.event_line[row])
            key: tuple = (kind, int(places[raw.line_plane[ln]]), int(in_plane[ln]), row - int(raw.line_first_event[ln]))
            source = raw.em_name[int(frame.events["metadata"][row])]
        elif owner == "metadata":
            em_plane = np.asarray(raw.em_plane)
            p = int(em_plane[row])
            key = (kind, int(places[p]), row - int(np.searchsorted(em_plane, p)))
            source = raw.em_name[row]
        else:
            key, source = (kind, int(places[row])), raw.plane_name[row]
        out.append((key, source, v["int"].unique().to_list()))
    return out


def analyze(run: RunData, host: str | None = None, **_options) -> RunSummary:
    hosts = [host] if host else run.require_hosts()
    out = []
    keep = len(hosts) == 1  # over several hosts, one frame at a time: memory follows the largest host
    for h in hosts:
        hf = run.host_file(h)
        pieces = giant_host.pieces(run, hf.host)
        if pieces is not None:  # a giant host: piece by piece, never its whole frame
            out.append(summarize_pieces(hf.host, hf.path, hf.size, giant_host.piece_frames(run, hf.host, pieces)))
        else:
            out.append(summarize_host(hf.host, hf.path, hf.size, run.frame(hf.host, keep=keep)))
    return RunSummary(run=run.name, hosts=out)


def span_us(s: HostSummary) -> float:
    return 0.0 if not s.span_ps else (s.span_ps[1] - s.span_ps[0]) / 1e6

