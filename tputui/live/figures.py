"""The monitor's figures for one captured window (an XSpaceFrame): device, busy / idle, steps,
infeed, top ops. Textual-free and columnar.

Steps come from tputui/analysis/steps.py and device figures (idle %, duty cycle, top ops, infeed)
from tputui/analysis/op_metrics.py, so the live pane and the overview agree by construction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tputui.data.xspace import XSpaceFrame

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
    step_names: list[str] = field(default_factory=list)  # "train 75", as XProf names them
    # Input share: per core (time in infeed ops) for devices, per step (XProf's "Input") for hosts.
    infeed_pct: list[float] = field(default_factory=list)
    top_ops: list[TopOp] = field(default_factory=list)
    # Matrix-unit utilization from the window itself (TPU): device op FLOPs over the cores' time at
    # their peak FLOP rate, the overview's FLOPS figure for a window; None without a peak or ops.
    mxu_pct: float | None = None

    @property
    def host_only(self) -> bool:
        return self.cores is None


def window_steps(fr: XSpaceFrame) -> tuple[list[str], list[float], list[float]]:
    """(step names, step times in ms, input % per step) as XProf's step database finds them.

    Input is XProf's "Input" column of the step breakdown: waiting for input plus host-to-device.
    """
    from tputui.analysis.steps import steps

    per = steps(fr).per_step()
    if per.is_empty():
        return [], [], []
    dur = per["duration_ps"].to_numpy().astype(float)
    inp = (per["host_wait_input_ps"] + per["host_to_device_ps"]).to_numpy().astype(float)
    pct = [100.0 * i / d if d > 0 else 0.0 for i, d in zip(inp, dur)]
    return per["name"].to_list(), (dur / 1e9).tolist(), pct


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


def _device_figures(fr: XSpaceFrame, names: list[str], steps: list[float]) -> WindowFigures | None:
    """TPU / GPU windows through the shared op metrics (XProf's OpMetricsDb and duty cycle)."""
    from tputui.analysis.op_metrics import (
        combine,
        device_plane_op_metrics,
        duty_cycle,
        gpu_plane_op_metrics,
        gpu_planes,
        tensor_core_planes,
        tf_op_metrics,
    )

    tpu = tensor_core_planes(fr)
    planes = tpu or gpu_planes(fr)
    if not planes:
        return None
    per_core = [device_plane_op_metrics(fr, p) if tpu else gpu_plane_op_metrics(fr, p) for p in planes]
    db = combine(per_core)
    idle = 100.0 * db.idle_ratio if db.total_time_ps else None
    busy = None if idle is None else 100.0 - idle
    if tpu:
        b, i = duty_cycle(fr, tpu)
        busy = 100.0 * b / (b + i) if b + i else busy
    infeed = [100.0 * float(c.ops.filter(pl.col("category") == "infeed")["self_time_ps"].sum()) / c.total_time_ps
              for c in per_core if c.total_time_ps]
    # As XProf's overview: framework ops (rolled up by provenance), share of op time (IDLE excluded).
    total = float(db.total_op_time_ps) or 1.0
    top = tf_op_metrics(db).ops.sort(["self_time_ps", "name"], descending=[True, False]).head(TOP_OPS)
    top_ops = [TopOp(r["name"], r["self_time_ps"] / 1e9, 100.0 * r["self_time_ps"] / total, int(r["occurrences"]))
               for r in top.iter_rows(named=True)]
    dtype = str(fr.plane_stat_map(planes[0]).get("device_type_string") or ("TPU" if tpu else "GPU"))
    mxu = window_mxu_pct(db, fr.plane_stat_map(planes[0]).get("peak_teraflops_per_second")) if tpu else None
    return WindowFigures(dtype, len(planes), busy, idle, steps, names, infeed, top_ops, mxu)


MXU_SOURCE = "from the profile window: device op FLOPs / (the cores' time x peak FLOP rate)"


def window_mxu_pct(db, peak_tflops) -> float | None:
    """Device op FLOPs over the window's core time at the peak rate, in % (ops that may hold inner
    ops left out, as the overview does)."""
    from tputui.analysis.utilization import INNER_OPS

    try:
        peak = float(peak_tflops)
    except (TypeError, ValueError):
        return None
    if peak <= 0 or not db.total_time_ps:
        return None
    ops = db.ops.filter(~pl.col("category").is_in(list(INNER_OPS)) & (pl.col("occurrences") > 0))
    flops = float(ops["flops"].sum()) if ops.height else 0.0
    return 100.0 * flops / (db.total_time_ps * 1e-12 * peak * 1e12)


def window_figures(fr: XSpaceFrame) -> WindowFigures:
    names, steps, input_pct = window_steps(fr)
    dev = _device_figures(fr, names, steps)
    if dev is not None:
        return dev
    # Host only (CPU): XLA's CPU thunks carry the `hlo_op` stat; time is event time.
    op_rows = np.unique(fr.stat_values("event", "hlo_op")["owner"].to_numpy())
    return WindowFigures("CPU", None, None, None, steps, names, input_pct, _top(fr, op_rows))
