"""HLO stats: one row per HLO op with XProf's `hlo_stats` columns (op_stats_to_hlo_stats.cc).

Rows are the device ops (IDLE excluded) by self time; percentages are of the device database's
total time (idle included), the way XProf computes them; rates come from the roofline rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import hlo_ops, host_map
from tputui.analysis.hlo_ops import DeviceOps
from tputui.analysis.op_roofline import execution_times, roofline_metrics, source_text
from tputui.data.run_data import RunData

COLUMNS = [
    "rank", "program_id", "category", "hlo_op_name", "hlo_op_expression", "tf_op_name", "occurrences",
    "total_time", "avg_time", "total_self_time", "avg_self_time", "total_self_time_percent",
    "cumulative_total_self_time_percent", "dma_stall_percent", "model_flop_rate", "normalized_flop_rate",
    "measured_memory_bw", "hbm_bw", "cmem_read_bw", "cmem_write_bw", "operational_intensity", "bound_by",
    "hlo_rematerialization", "outside_compilation", "autotuned", "source_info", "core_type",
    "parent_op_name",
]


@dataclass
class HloStats:
    fraction_columns = frozenset({"dma_stall_percent"})  # a fraction in XProf's JSON; CSV writes percents
    rows: pl.DataFrame
    total_time_ps: int

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows.to_dicts()}

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"hlo_stats": self.rows}


def _yes_no(expr: pl.Expr) -> pl.Expr:
    return pl.when(expr).then(pl.lit("Yes")).otherwise(pl.lit("No"))


def from_device_ops(db: DeviceOps) -> HloStats:
    ops = hlo_ops.sorted_by_self_time(db.ops.filter(pl.col("occurrences") > 0))
    ops = execution_times(roofline_metrics(ops, db.perf))
    total_us = db.total_time_ps / 1e6
    expr = pl.when(pl.col("long_name") != "").then(pl.col("long_name")).otherwise(pl.col("name"))
    pct = (pl.col("total_self_time") / total_us * 100.0) if total_us else pl.lit(0.0)
    # Remat: ".remat" in the op name part of the HLO text, or a rematted framework scope.
    head = expr.str.split("=").list.first()
    rows = ops.with_columns(
        rank=pl.int_range(1, pl.len() + 1).cast(pl.Float64),
        program_id=pl.col("program_id").cast(pl.String),
        hlo_op_name=expr.str.split(" = ").list.first().str.strip_prefix("%"),
        hlo_op_expression=expr, tf_op_name=pl.col("provenance"),
        total_self_time_percent=pct,
        dma_stall_percent=pl.when(pl.col("time_ps") > 0).then(pl.col("dma_stall_ps") / pl.col("time_ps")).otherwise(0.0),
        normalized_flop_rate=pl.col("measured_flop_rate"),
        hlo_rematerialization=_yes_no(head.str.contains(".remat", literal=True)
                                      | pl.col("provenance").str.contains("/rematted_computation/", literal=True)),
        outside_compilation=_yes_no(pl.col("provenance").str.ends_with(":XlaSendToHost") | (
            pl.col("long_name").str.contains("send-done", literal=True)
            & pl.col("long_name").str.contains("is_host_transfer=true", literal=True))),
        autotuned=pl.lit("No"), source_info=source_text(ops), core_type=pl.lit("TensorCore"),
        parent_op_name=pl.lit(""),
    ).with_columns(cumulative_total_self_time_percent=pl.col("total_self_time_percent").cum_sum())
    return HloStats(rows=rows.select(COLUMNS), total_time_ps=db.total_time_ps)


def analyze(run: RunData, host: str | None = None, **options) -> HloStats:
    return from_device_ops(host_map.run_device_ops(run, host))


def has_data(run: RunData) -> bool:
    return host_map.has_device_ops(run)
