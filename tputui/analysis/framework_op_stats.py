"""Framework op stats (XProf's `framework_op_stats`, formerly "TensorFlow Stats").

One row per framework op: device rows first (device ops rolled up to their framework op via the
`tf_op` provenance), then host rows (TF / tf.data / JAX ops on the host threads), each side by
self time with XProf's rank and cumulative self-time fractions (op_stats_to_tf_stats.cc). Two
tables like XProf's: with the IDLE rows and without them (then fractions exclude idle time).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import hlo_ops, host_map, op_metrics
from tputui.analysis.hlo_ops import IDLE, MEM_COLUMNS, PerfEnv
from tputui.analysis.op_roofline import execution_times, roofline_metrics
from tputui.analysis.op_stats import HostOpStats
from tputui.analysis.result import NoDataError
from tputui.data.run_data import RunData

MAX_OPS = 500  # XProf shows at most 500 device and 500 host ops

COLUMNS = [
    "rank", "host_or_device", "type", "operation", "occurrences", "total_time", "avg_time",
    "total_self_time", "avg_self_time", "device_total_self_time_percent",
    "device_cumulative_total_self_time_percent", "host_total_self_time_percent",
    "host_cumulative_total_self_time_percent", "measured_flop_rate", "model_flop_rate",
    "measured_memory_bw", "operational_intensity", "bound_by", "eager",
]
# Export names the issue fixes (plus the rest of the columns as they are).
EXPORT_RENAMES = {"host_or_device": "host_or_device", "type": "op_type", "operation": "op_name",
                  "total_time": "total_time_us", "total_self_time": "total_self_time_us",
                  "avg_time": "avg_time_us", "avg_self_time": "avg_self_time_us"}


def _side(db: op_metrics.OpMetricsDb, on_device: bool, exclude_idle: bool, perf: PerfEnv) -> pl.DataFrame:
    ops = db.with_idle()
    if exclude_idle:
        ops = ops.filter(~((pl.col("name") == IDLE) & (pl.col("category") == IDLE)))
    ops = hlo_ops.sorted_by_self_time(ops).head(MAX_OPS)
    # Framework ops carry no memory breakdown: XProf then counts all bytes as HBM bytes.
    ops = ops.with_columns(*[pl.lit(0, pl.Int64).alias(c) for c in MEM_COLUMNS])
    ops = execution_times(roofline_metrics(ops, perf))
    total_ps = db.total_op_time_ps if exclude_idle else db.total_time_ps
    total_us = total_ps / 1e6
    frac = (pl.col("total_self_time") / total_us) if total_us else pl.lit(0.0)
    side, other = ("device", "host") if on_device else ("host", "device")
    return ops.with_columns(
        host_or_device=pl.lit("Device" if on_device else "Host"), type=pl.col("category"),
        operation=pl.col("name"), eager=pl.when(pl.col("is_eager")).then(pl.lit("Eager")).otherwise(pl.lit("Function")),
        **{f"{side}_total_self_time_percent": frac, f"{other}_total_self_time_percent": pl.lit(0.0),
           f"{other}_cumulative_total_self_time_percent": pl.lit(0.0)},
    ).with_columns(**{f"{side}_cumulative_total_self_time_percent": pl.col(f"{side}_total_self_time_percent").cum_sum()})


def _table(device: op_metrics.OpMetricsDb | None, host: op_metrics.OpMetricsDb, exclude_idle: bool,
           perf: PerfEnv) -> pl.DataFrame:
    parts = []
    if device is not None:
        parts.append(_side(device, True, exclude_idle, perf))
    parts.append(_side(host, False, exclude_idle, perf))
    out = pl.concat([p.select([c for c in COLUMNS if c != "rank"]) for p in parts], how="vertical_relaxed")
    return out.with_columns(rank=pl.int_range(1, pl.len() + 1)).select(COLUMNS)


@dataclass
class FrameworkOpStats:
    # Shares held as fractions (XProf's JSON); CSV writes them as percents (export.csv_text).
    fraction_columns = frozenset({"device_total_self_time_percent", "device_cumulative_total_self_time_percent",
                                  "host_total_self_time_percent", "host_cumulative_total_self_time_percent"})
    with_idle: pl.DataFrame
    without_idle: pl.DataFrame

    def table(self, include_idle: bool = True) -> pl.DataFrame:
        return self.with_idle if include_idle else self.without_idle

    def self_time_by_type(self, host_or_device: str, include_idle: bool = True) -> pl.DataFrame:
        """Self time per op type on one side (the pie chart XProf draws), largest first."""
        t = self.table(include_idle).filter(pl.col("host_or_device") == host_or_device)
        return t.group_by("type").agg(pl.col("total_self_time").sum()).sort("total_self_time", descending=True)

    @property
    def sides_with_ops(self) -> list[str]:
        """"Host" / "Device", the sides where ops (not IDLE) took any self time."""
        ops = self.with_idle.filter(pl.col("operation") != "IDLE")
        return [s for s in ("Host", "Device") if ops.filter(pl.col("host_or_device") == s)["total_self_time"].sum() > 0]

    def self_time_shares(self, side: str, by: str = "operation", include_idle: bool = True,
                         top: int = 8) -> list[tuple[str, float]]:
        """XProf's pie charts: (op or op type, percent of the side's self time), the `top` largest."""
        rows = self.table(include_idle).filter(pl.col("host_or_device") == side)
        total = float(rows["total_self_time"].sum() or 0.0)
        if by == "type":
            rows = self.self_time_by_type(side, include_idle)
        head = rows.head(top)
        return [(label, (v / total * 100) if total else 0.0)
                for label, v in zip(head[by].to_list(), head["total_self_time"].to_list())]

    def to_json(self) -> dict[str, Any]:
        def rows(df):
            return df.rename(EXPORT_RENAMES).to_dicts()
        return {"rows": rows(self.with_idle), "rows_without_idle": rows(self.without_idle)}

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"framework_op_stats": self.with_idle.rename(EXPORT_RENAMES),
                "framework_op_stats_without_idle": self.without_idle.rename(EXPORT_RENAMES)}


def from_op_stats(hosts: list[HostOpStats]) -> FrameworkOpStats:
    """The reduce: host ops of every host, device ops of the TPU hosts, rolled up to framework ops."""
    perf = hlo_ops.combine_perf([h.perf for h in hosts])
    host = op_metrics.combine([h.host_db for h in hosts], update_num_cores=False)
    dev_dbs = [h.device_db for h in hosts if h.has_tpu_planes and h.device_db is not None]
    device = op_metrics.tf_op_metrics(op_metrics.combine(dev_dbs), with_idle=True) if dev_dbs else None
    if device is None and host.ops.is_empty() and not host.total_time_ps:
        # XProf still shows a single empty IDLE row here; we say why there is nothing.
        if not any(h.has_host_plane for h in hosts):
            raise NoDataError("no host or device ops in this profile")
    return FrameworkOpStats(with_idle=_table(device, host, False, perf),
                            without_idle=_table(device, host, True, perf))


def analyze(run: RunData, host: str | None = None, **options) -> FrameworkOpStats:
    return from_op_stats(host_map.host_op_stats(run, host))


def has_data(run: RunData) -> bool:
    return True
