"""The overview's FLOPS and HBM-bandwidth utilization of combined op stats, shared by the overview
page and the smart-suggestion rules (which read XProf's overview figures).

Facts from XProf (op_stats_to_overview_page.cc): TPU with steps only; device ops minus those that
may hold inner ops, over the summed step time; FLOPS against the roofline at the ops' arithmetic
intensity, bandwidth against the peak HBM bandwidth.
"""
from __future__ import annotations

import polars as pl

from tputui.analysis.op_stats import OpStats

INNER_OPS = {"call", "conditional", "while", "megacore fusion"}  # XProf's MayHaveInnerOps


def flops_and_bandwidth(stats: OpStats, steps: pl.DataFrame) -> tuple[float, float]:
    """(FLOPS vs roofline %, HBM bandwidth vs peak %) over the steps (per_step() rows)."""
    if stats.hardware_type != "TPU" or not len(steps) or not stats.peak_teraflops or not stats.peak_hbm_gbps:
        return 0.0, 0.0
    ops = stats.device_db.ops.filter(~pl.col("category").is_in(list(INNER_OPS)) & (pl.col("occurrences") > 0))
    flops = float(ops["flops"].sum())
    nbytes = float(ops["bytes_accessed"].sum())
    time_ns = float(stats.steps.steps["duration_ps"].sum()) / 1000.0
    if time_ns <= 0:
        return 0.0, 0.0
    gflops, gbps = flops / time_ns, nbytes / time_ns
    intensity = flops / nbytes if nbytes else 0.0
    optimal = min(intensity * stats.peak_hbm_gbps, stats.peak_teraflops * 1000.0)
    return (100.0 * gflops / optimal if optimal else 0.0), 100.0 * gbps / stats.peak_hbm_gbps
