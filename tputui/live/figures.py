"""The monitor's figures for one captured window (an XSpaceFrame): device, busy / idle, steps,
infeed, top ops. Textual-free and columnar.

Interim: step times come from host step markers (events with `step_num` and the `_r` root
stat; XProf drops the first and last step of a window) and device busy time from the union of
each core's `XLA Ops` intervals. These move to tputui/analysis/steps.py and op_metrics.py when
those land, so the live pane and the overview agree by construction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.data.xspace import XSpaceFrame

DEVICE_PREFIXES = ("/device:TPU:", "/device:GPU:")
TOP_OPS = 10


@dataclass
class TopOp:
    name: str
    time_ms: float
    percent: float  # of all op time in the window
    count: int


@dataclass
class WindowFigures:
    device_type: str  # "TPU v6 Lite", "GPU", "CPU"
    cores: int | None  # device planes (TPU cores / GPUs); None when host only
    busy_pct: float | None  # device busy share of the window (duty cycle); None host only
    idle_pct: float | None
    step_ms: list[float] = field(default_factory=list)  # complete steps, in order
    step_nums: list[int] = field(default_factory=list)
    infeed_pct: list[float] = field(default_factory=list)  # per core, share of time in infeed ops
    top_ops: list[TopOp] = field(default_factory=list)

    @property
    def host_only(self) -> bool:
        return self.cores is None


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total length covered by intervals [start, end) (overlaps counted once)."""
    if len(start) == 0:
        return 0
    o = np.argsort(start, kind="stable")
    s, e = start[o], end[o]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    seg_end = np.maximum.reduceat(e, first)
    return int((seg_end - s[first]).sum())


def device_planes(fr: XSpaceFrame) -> list[int]:
    return [p for prefix in DEVICE_PREFIXES for p in fr.planes_named(prefix)]


def _line_rows(fr: XSpaceFrame, plane: int, name: str) -> slice | None:
    for ln in fr.lines_of(plane):
        if fr.raw.line_name[ln] == name:
            return fr.line_events(ln)
    return None


def host_steps(fr: XSpaceFrame) -> tuple[list[int], list[float]]:
    """(step numbers, step times in ms) of the complete host steps in the window."""
    sv = fr.stat_values("event", ["step_num", "_r"])
    if sv.is_empty():
        return [], []
    marked = sv.group_by("owner").agg(
        step_num=pl.col("int").filter(pl.col("stat_name") == "step_num").first(),
        root=(pl.col("stat_name") == "_r").any(),
    ).filter(pl.col("root") & pl.col("step_num").is_not_null())
    rows = marked["owner"].to_numpy()
    if len(rows) == 0:
        return [], []
    start = fr.start_ps[rows]
    dur = fr.raw.event_duration_ps[rows]
    o = np.argsort(start, kind="stable")
    nums, dur = marked["step_num"].to_numpy()[o], dur[o]
    if len(o) > 2:  # the first and last step are cut by the window edges
        nums, dur = nums[1:-1], dur[1:-1]
    return nums.astype(int).tolist(), (dur / 1e9).tolist()


def _op_names(fr: XSpaceFrame, md_rows: np.ndarray) -> pl.Series:
    """Short op names: display_name where set (TPU XLA Ops carry full HLO text as the name)."""
    names = fr.metadata_names(md_rows).cast(pl.String)
    disp = fr.metadata_names(md_rows, display=True).cast(pl.String)
    short = names.str.split(" = ").list.first().str.strip_prefix("%")
    return pl.select(op=pl.when(disp != "").then(disp).otherwise(short)).to_series()


def _top(fr: XSpaceFrame, rows: np.ndarray) -> list[TopOp]:
    if len(rows) == 0:
        return []
    df = pl.DataFrame({"op": _op_names(fr, fr.events["metadata"].to_numpy()[rows]),
                       "dur": fr.raw.event_duration_ps[rows]})
    total = float(df["dur"].sum()) or 1.0
    agg = df.group_by("op").agg(pl.col("dur").sum(), pl.len().alias("n")).sort(["dur", "op"], descending=[True, False])
    return [TopOp(r["op"], r["dur"] / 1e9, 100.0 * r["dur"] / total, int(r["n"]))
            for r in agg.head(TOP_OPS).iter_rows(named=True)]


def window_figures(fr: XSpaceFrame) -> WindowFigures:
    nums, steps = host_steps(fr)
    devs = device_planes(fr)
    if not devs:
        # Host only (CPU): XLA's CPU thunks carry the `hlo_op` stat.
        op_rows = np.unique(fr.stat_values("event", "hlo_op")["owner"].to_numpy())
        return WindowFigures("CPU", None, None, None, steps, nums, [], _top(fr, op_rows))
    dtype = str(fr.plane_stat_map(devs[0]).get("device_type_string") or
                fr.raw.plane_name[devs[0]].split(":")[1])
    busy = span = 0
    infeed, op_rows = [], []
    names = fr.metadata_names(fr.events["metadata"].to_numpy()).cast(pl.String)
    for p in devs:
        sl = _line_rows(fr, p, "XLA Ops")
        if sl is None or sl.stop == sl.start:
            continue
        s = fr.start_ps[sl]
        e = s + fr.raw.event_duration_ps[sl]
        b, w = union_length(s, e), int(e.max() - s.min())
        busy, span = busy + b, span + w
        rows = np.arange(sl.start, sl.stop)
        op_rows.append(rows)
        is_infeed = names[sl.start:sl.stop].str.contains(r"(?i)(^|%)infeed").to_numpy()
        infeed.append(100.0 * union_length(s[is_infeed], e[is_infeed]) / w if w else 0.0)
    busy_pct = 100.0 * busy / span if span else None
    idle = None if busy_pct is None else 100.0 - busy_pct
    rows = np.concatenate(op_rows) if op_rows else np.zeros(0, np.int64)
    return WindowFigures(dtype, len(devs), busy_pct, idle, steps, nums, infeed, _top(fr, rows))
