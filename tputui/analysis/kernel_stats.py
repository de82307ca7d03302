"""GPU kernel stats: one row per (kernel, launch configuration, op), as XProf's `kernel_stats`.

XProf's rules (xplane_to_kernel_stats_db.cc, kernel_stats_utils.cc): kernels are the events of
`/device:GPU:<n>` planes with a `kernel_details` stat and a non-zero duration in whole
nanoseconds; launch parameters are parsed from `kernel_details`; the op is the framework op of
the `tf_op` stat; a kernel uses Tensor Cores when its name holds a known pattern (h884, s1688,
16816, hmma, xmma_gemm, ...); its op is Tensor Core eligible for einsums with two inputs, a
list of conv / matmul op names, or when the kernel uses Tensor Cores anyway. Rows merge across
GPUs and hosts, sorted by total duration (ties by kernel name, dims, ...), at most 1000.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tputui.analysis import host_map
from tputui.analysis.result import NoDataError
from tputui.data.run_data import RunData

MAX_KERNELS = 1000
COLUMNS = ["rank", "kernel_name", "registers_per_thread", "shmem_bytes", "block_dim", "grid_dim",
           "occupancy_pct", "is_op_tensor_core_eligible", "is_kernel_using_tensor_core", "op_name",
           "occurrences", "total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us"]


KEY = ["kernel_name", "grid0", "grid1", "grid2", "block0", "block1", "block2", "registers_per_thread",
       "static_shmem", "dynamic_shmem", "is_kernel_using_tensor_core", "is_op_tensor_core_eligible", "op_name"]


@dataclass
class KernelStats:
    rows: pl.DataFrame

    def top_kernels(self, n: int = 10) -> list[tuple[str, float]]:
        return list(zip(self.rows["kernel_name"].head(n).to_list(), self.rows["total_duration_us"].head(n).to_list()))

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows.to_dicts()}

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"kernel_stats": self.rows}


def from_kernel_tables(tables: list[pl.DataFrame | None]) -> KernelStats:
    """The reduce: each host's kernel table (gpu_kernels.frame_kernels; None: no GPU plane) merged."""
    parts = [k for k in tables if k is not None]
    if not parts:
        raise NoDataError("no GPU planes in this profile (kernel stats need /device:GPU planes)")
    parts = [p for p in parts if p.height]
    if not parts:
        return KernelStats(rows=pl.DataFrame(schema={c: pl.String for c in COLUMNS}))
    allk = pl.concat(parts, how="vertical_relaxed")
    g = allk.group_by(KEY, maintain_order=True).agg(
        pl.col("occupancy_pct").first(), pl.col("occurrences").sum(), pl.col("total_ns").sum(),
        pl.col("min_ns").min(), pl.col("max_ns").max())
    # Total duration descending, then XProf's tuple order (name, grid, block, regs, ...) ascending.
    g = g.sort(["total_ns"] + KEY, descending=[True] + [False] * len(KEY)).head(MAX_KERNELS)
    rows = g.with_columns(
        rank=pl.int_range(1, pl.len() + 1),
        shmem_bytes=pl.col("static_shmem") + pl.col("dynamic_shmem"),
        block_dim=pl.format("{},{},{}", "block0", "block1", "block2"),
        grid_dim=pl.format("{},{},{}", "grid0", "grid1", "grid2"),
        total_duration_us=pl.col("total_ns") / 1000.0,
        avg_duration_us=(pl.col("total_ns") // pl.col("occurrences")) / 1000.0,
        min_duration_us=pl.col("min_ns") / 1000.0, max_duration_us=pl.col("max_ns") / 1000.0,
    ).select(COLUMNS)
    return KernelStats(rows=rows)


def analyze(run: RunData, host: str | None = None, **options) -> KernelStats:
    return from_kernel_tables([h.kernels for h in host_map.host_op_stats(run, host)])


def has_data(run: RunData) -> bool:
    return host_map.has_gpu_kernels(run)
