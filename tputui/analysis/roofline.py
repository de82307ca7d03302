"""Roofline model: each op's operational intensity and measured rates against the device's peaks.

XProf's SetRooflineMetrics (op_metrics_to_record.h) and op_stats_to_roofline_model.cc, vectorized:
rates are per op over its total time (GFLOP/s = flops / time in ns; GiB/s); HBM bytes come from
the memory-access breakdown (all of bytes_accessed when an op has none); the op is bound by the
resource with the highest utilization (compute, HBM, and on TPU CMEM / VMEM read / write).
Rows: a `Program` row (ops that may contain others are not summed into it) then the ops by self
time, once including and once excluding infeed/outfeed ops; XProf's per-step and `Average`
rows need step markers (with none, `Average` is a single all-zero Program row, as XProf shows).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import hlo_ops, host_map
from tputui.analysis.hlo_ops import IDLE, DeviceOps, PerfEnv
from tputui.analysis.op_roofline import GIB, execution_times, is_infeed_or_outfeed, roofline_metrics, source_text
from tputui.data.run_data import RunData

INNER_OP_CATEGORIES = ("call", "conditional", "while", "megacore fusion")  # XProf's MayHaveInnerOps

COLUMNS = [
    "step", "rank", "category", "operation", "occurrences", "total_time", "avg_time", "total_self_time",
    "avg_self_time", "total_self_time_percent", "cumulative_total_self_time_percent", "dma_stall_percent",
    "measured_flop_rate", "model_flop_rate", "measured_memory_bw", "hbm_bw", "cmem_read_bw",
    "cmem_write_bw", "vmem_read_bw", "vmem_write_bw", "operational_intensity", "hbm_operational_intensity",
    "cmem_read_operational_intensity", "cmem_write_operational_intensity", "vmem_read_operational_intensity",
    "vmem_write_operational_intensity", "bottleneck_operational_intensity", "bound_by", "total_time_per_core",
    "total_time_in_percentage", "optimal_flop_rate", "roofline_efficiency", "compute_efficiency",
    "max_mem_bw_utilization", "include_infeed_outfeed", "hlo_module_id", "source_info",
]


def _program_row(ops: pl.DataFrame, total_ps: int) -> pl.DataFrame:
    inner = ops.filter(~pl.col("category").is_in(INNER_OP_CATEGORIES))
    sums = {c: int(inner[c].sum()) for c in ("flops", "model_flops", "bytes_accessed") + hlo_ops.MEM_COLUMNS}
    sums["mem_entries"] = int((inner["mem_entries"] > 0).sum())
    return pl.DataFrame([{
        "program_id": 0, "name": "Program", "category": "Program", "occurrences": 1, "time_ps": total_ps,
        "self_time_ps": 0, "source_file": "", "source_line": 0, "dma_stall_ps": 0, **sums,
    }], schema_overrides={"program_id": pl.UInt64})


def _records(ops: pl.DataFrame, total_ps: int, perf: PerfEnv, step: str, include: bool) -> pl.DataFrame:
    """Program row + ops (by self time, at most 1000) for one include_infeed_outfeed setting."""
    prog = _program_row(ops, total_ps)
    body = hlo_ops.sorted_by_self_time(ops.filter(pl.col("occurrences") > 0)).head(1000)
    cols = ["program_id", "name", "category", "occurrences", "time_ps", "self_time_ps", "flops",
            "model_flops", "bytes_accessed", "source_file", "source_line", "dma_stall_ps", *hlo_ops.MEM_COLUMNS]
    both = pl.concat([prog.select(cols), body.select(cols)], how="vertical_relaxed")
    both = execution_times(roofline_metrics(both, perf))
    total_us = total_ps / 1e6
    frac = (pl.col("total_self_time") / total_us) if total_us else pl.lit(0.0)
    both = both.with_columns(
        step=pl.lit(step), rank=pl.int_range(pl.len()).cast(pl.Float64),
        operation=pl.col("name"),
        total_self_time_percent=pl.when(pl.int_range(pl.len()) == 0).then(0.0).otherwise(frac),
        dma_stall_percent=pl.when(pl.col("time_ps") > 0).then(pl.col("dma_stall_ps") / pl.col("time_ps")).otherwise(0.0),
        total_time_per_core=pl.col("total_time") / perf.core_count if perf.core_count else pl.lit(0.0),
        total_time_in_percentage=(pl.col("time_ps") / total_ps) if total_ps else pl.lit(0.0),
        include_infeed_outfeed=pl.lit(include), hlo_module_id=pl.col("program_id").cast(pl.String),
        source_info=source_text(both),
    ).with_columns(cumulative_total_self_time_percent=pl.col("total_self_time_percent").cum_sum())
    peak_flops = perf.peak_tflops * 1000.0
    hbm_u = pl.col("hbm_bw") / (perf.peak_bw_gbps(0) * 1e9 / GIB) if perf.peak_bw_gbps(0) else pl.lit(0.0)
    mem_u = [hbm_u]
    if perf.has_cmem:
        mem_u += [pl.col("cmem_read_bw") / (perf.peak_bw_gbps(3) * 1e9 / GIB),
                  pl.col("cmem_write_bw") / (perf.peak_bw_gbps(4) * 1e9 / GIB)]
    elif perf.has_merged_vmem and perf.peak_bw_gbps(5):
        mem_u += [pl.col("vmem_read_bw") / (perf.peak_bw_gbps(5) * 1e9 / GIB),
                  pl.col("vmem_write_bw") / (perf.peak_bw_gbps(6) * 1e9 / GIB)]
    flop_u = pl.col("measured_flop_rate") / peak_flops if peak_flops else pl.lit(0.0)
    both = both.with_columns(compute_efficiency=flop_u, max_mem_bw_utilization=pl.max_horizontal(mem_u)).with_columns(
        roofline_efficiency=pl.max_horizontal("compute_efficiency", "max_mem_bw_utilization")).with_columns(
        optimal_flop_rate=pl.when(pl.col("roofline_efficiency") > 0).then(
            pl.col("measured_flop_rate") / pl.col("roofline_efficiency")).otherwise(0.0))
    return both.select(COLUMNS)


@dataclass
class RooflineModel:
    # Shares held as fractions (XProf's JSON); CSV writes them as percents (export.csv_text).
    fraction_columns = frozenset({"total_self_time_percent", "cumulative_total_self_time_percent",
                                  "dma_stall_percent", "total_time_in_percentage"})
    rows: pl.DataFrame
    perf: PerfEnv
    diagnostics: list[str]

    @property
    def properties(self) -> dict[str, Any]:
        p = self.perf
        peak_hbm = p.peak_bw_gbps(0) * 1e9 / GIB
        vr = p.peak_bw_gbps(5) * 1e9 / GIB if p.has_merged_vmem and not p.has_cmem else 0.0
        vw = p.peak_bw_gbps(6) * 1e9 / GIB if p.has_merged_vmem and not p.has_cmem else 0.0
        cr = p.peak_bw_gbps(3) * 1e9 / GIB if p.has_cmem else 0.0
        cw = p.peak_bw_gbps(4) * 1e9 / GIB if p.has_cmem else 0.0
        flops = p.peak_tflops * 1000.0

        def ridge(bw_gib):  # XProf divides by the bandwidth in GB/s
            return flops / (bw_gib * GIB / 1e9) if bw_gib else 0.0

        return {"device_type": p.device_type, "peak_flop_rate": flops, "peak_hbm_bw": peak_hbm,
                "peak_cmem_read_bw": cr, "peak_cmem_write_bw": cw, "peak_vmem_read_bw": vr,
                "peak_vmem_write_bw": vw, "hbm_ridge_point": ridge(peak_hbm),
                "cmem_read_ridge_point": ridge(cr), "cmem_write_ridge_point": ridge(cw),
                "vmem_read_ridge_point": ridge(vr), "vmem_write_ridge_point": ridge(vw),
                "megacore": p.has_megacore, "has_cmem": p.has_cmem, "has_merged_vmem": p.has_merged_vmem}

    def ops(self, include_infeed_outfeed: bool = True, step: str = "Total") -> pl.DataFrame:
        return self.rows.filter((pl.col("include_infeed_outfeed") == include_infeed_outfeed)
                                & (pl.col("step") == step) & (pl.col("category") != "Program"))

    def to_json(self) -> dict[str, Any]:
        return {"properties": self.properties, "rows": self.rows.to_dicts(), "diagnostics": self.diagnostics}

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"roofline_model": self.rows}


NO_STEPS = ("No step marker observed and hence the step time is unknown. This may happen if (1) training "
            "steps are not instrumented (e.g., if you are not using Keras) or (2) the profiling duration "
            "is shorter than the step time. For (1), you need to add step instrumentation; for (2), you "
            "may try to profile longer.")


def from_device_ops(db: DeviceOps, has_steps: bool = False) -> RooflineModel:
    ops = db.ops.filter(~((pl.col("name") == IDLE) & (pl.col("program_id") == 0)))
    parts = []
    for include in (True, False):
        sel, total = ops, db.total_time_ps
        if not include:
            feed = ops.filter(is_infeed_or_outfeed(pl.col("category")))
            total -= int(feed["time_ps"].sum())
            sel = ops.filter(~is_infeed_or_outfeed(pl.col("category")))
        parts.append(_records(sel, total, db.perf, "Total", include))
        if not has_steps:  # XProf's complete-steps database is empty: one zero Program row
            parts.append(_records(sel.clear(), 0, db.perf, "Average", include))
    return RooflineModel(rows=pl.concat(parts, how="vertical_relaxed"), perf=db.perf,
                         diagnostics=[] if has_steps else [NO_STEPS])


def analyze(run: RunData, host: str | None = None, **options) -> RooflineModel:
    return from_device_ops(host_map.run_device_ops(run, host))


def has_data(run: RunData) -> bool:
    return host_map.has_device_ops(run)
