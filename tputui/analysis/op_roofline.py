"""Per-op rates, intensities and bound-by (XProf's SetRooflineMetrics and SetExecutionTimes).

Shared by the roofline model, HLO stats and framework op stats (op_metrics_to_record.h): rates are
per op over its total time (GFLOP/s = flops / time in ns; GiB/s); HBM bytes come from the
memory-access breakdown (all of bytes_accessed when an op has none); the op is bound by the
resource with the highest utilization (compute, HBM, and on TPU CMEM / VMEM read / write).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from tputui.analysis.hlo_ops import PerfEnv

GIB = float(1 << 30)


def safe_div(a: np.ndarray, b) -> np.ndarray:
    a = np.asarray(a, np.float64)
    b = np.broadcast_to(np.asarray(b, np.float64), a.shape)
    out = np.zeros_like(a)
    np.divide(a, b, out=out, where=b != 0)
    return out


def is_infeed_or_outfeed(category: pl.Expr) -> pl.Expr:
    return category.str.contains("infeed") | category.str.contains("outfeed")


def roofline_metrics(ops: pl.DataFrame, perf: PerfEnv) -> pl.DataFrame:
    """Per-op rates, intensities and bound-by (XProf's SetRooflineMetrics) as new columns."""
    t_ns = ops["time_ps"].to_numpy().astype(np.float64) / 1000.0
    flops = ops["flops"].to_numpy().astype(np.float64)
    model = ops["model_flops"].to_numpy().astype(np.float64)
    nbytes = ops["bytes_accessed"].to_numpy().astype(np.float64)
    legacy = ops["mem_entries"].to_numpy() == 0
    hbm = np.where(legacy, nbytes, ops["mem_hbm"].to_numpy().astype(np.float64))
    mem = {k: ops[f"mem_{k}"].to_numpy().astype(np.float64)
           for k in ("cmem_rd", "cmem_wr", "vmem_rd", "vmem_wr")}
    out = {
        "measured_flop_rate": safe_div(flops, t_ns), "model_flop_rate": safe_div(model, t_ns),
        "measured_memory_bw": safe_div(nbytes, t_ns) * 1e9 / GIB,
        "operational_intensity": safe_div(flops, nbytes),
        "hbm_bw": safe_div(hbm, t_ns) * 1e9 / GIB, "hbm_operational_intensity": safe_div(flops, hbm),
    }
    for k, name in (("cmem_rd", "cmem_read"), ("cmem_wr", "cmem_write"),
                    ("vmem_rd", "vmem_read"), ("vmem_wr", "vmem_write")):
        out[f"{name}_bw"] = safe_div(mem[k], t_ns) * 1e9 / GIB
        out[f"{name}_operational_intensity"] = safe_div(flops, mem[k])
    n = len(t_ns)
    bound = np.full(n, "Unknown", object)
    util = np.zeros(n)
    bott = np.zeros(n)

    def consider(label, u, oi, mask=None):
        better = util < u if mask is None else (util < u) & mask
        bound[better], util[better], bott[better] = label, u[better], oi[better]

    consider("Compute", safe_div(out["measured_flop_rate"], perf.peak_tflops * 1000.0), out["operational_intensity"])
    consider("HBM", safe_div(out["hbm_bw"], perf.peak_bw_gbps(0) * 1e9 / GIB), out["hbm_operational_intensity"])
    if perf.hardware == "TPU":
        for idx, k, name, label in ((3, "cmem_rd", "cmem_read", "CMEM Read"), (4, "cmem_wr", "cmem_write", "CMEM Write"),
                                    (5, "vmem_rd", "vmem_read", "VMEM Read"), (6, "vmem_wr", "vmem_write", "VMEM Write")):
            peak = perf.peak_bw_gbps(idx)
            if peak:
                consider(label, safe_div(out[f"{name}_bw"], peak * 1e9 / GIB),
                         out[f"{name}_operational_intensity"], mem[k] > 0)
    out["bound_by"] = bound.astype(str)
    out["bottleneck_operational_intensity"] = bott
    return ops.with_columns(*[pl.Series(k, v) for k, v in out.items()])


def execution_times(ops: pl.DataFrame) -> pl.DataFrame:
    """XProf's SetExecutionTimes: totals and averages in microseconds."""
    occ = pl.col("occurrences").cast(pl.Float64)
    return ops.with_columns(
        total_time=pl.col("time_ps") / 1e6, total_self_time=pl.col("self_time_ps") / 1e6,
    ).with_columns(
        avg_time=pl.when(occ > 0).then(pl.col("total_time") / occ).otherwise(0.0),
        avg_self_time=pl.when(occ > 0).then(pl.col("total_self_time") / occ).otherwise(0.0),
    )


def source_text(ops: pl.DataFrame) -> pl.Expr:
    return pl.when(pl.col("source_file") != "").then(
        pl.format("{}:{}", pl.col("source_file"), pl.col("source_line"))).otherwise(pl.lit(""))
