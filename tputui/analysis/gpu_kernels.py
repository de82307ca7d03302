"""GPU kernels of one host, one row per kernel launch configuration and op (the map of kernel stats).

XProf's rules (xplane_to_kernel_stats_db.cc, kernel_stats_utils.cc): kernels are the events of
`/device:GPU:<n>` planes with a `kernel_details` stat and a non-zero duration in whole
nanoseconds; launch parameters are parsed from `kernel_details`; the op is the framework op of
the `tf_op` stat; a kernel uses Tensor Cores when its name holds a known pattern (h884, s1688,
16816, hmma, xmma_gemm, ...); its op is Tensor Core eligible for einsums with two inputs, a
list of conv / matmul op names, or when the kernel uses Tensor Cores anyway.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import op_metrics
from tputui.data.xspace import XSpaceFrame

DERIVED_LINE_ID_MIN = 0xDEADBEEF  # XProf's derived (synthetic) lines are not streams
TENSOR_CORE_PATTERNS = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
)

def uses_tensor_core(kernel_name: str) -> bool:
    return any(p in kernel_name for p in TENSOR_CORE_PATTERNS)


def op_tensor_core_eligible(op_name: str) -> bool:
    ends = ("Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D", "DepthwiseConv2dNative",
            "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "/MatMul",
            "FusedMatMul", "/CudnnRNN", "XlaDot", "XlaDotV2")
    contains = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")
    return op_name.endswith(ends) or any(c in op_name for c in contains)


def einsum_tensor_core_eligible(equation: str) -> bool:
    parts = equation.split("->") if equation else []
    return len(parts) == 2 and len(parts[0].split(",")) == 2


def _uint(s: str) -> int | None:
    s = s.strip()
    if s.startswith("+"):
        s = s[1:]
    return int(s) if s.isdigit() and int(s) < 1 << 32 else None


def parse_launch(details: str) -> dict[str, Any]:
    """`kernel_details` ("regs:32 static_shared:0 ... grid:1,1,1 block:128,1,1 occ_pct:50") -> fields."""
    out = {"regs": 0, "static_shared": 0, "dynamic_shared": 0, "grid": (1, 1, 1), "block": (1, 1, 1), "occ": 0.0}
    for tok in details.replace("\n", " ").split(" "):
        kv = tok.split(":")
        if len(kv) != 2:
            continue
        key, val = kv
        if key in ("regs", "static_shared", "dynamic_shared"):
            v = _uint(val)
            if v is not None:
                out[key] = v
        elif key in ("grid", "block"):
            dims = [_uint(x) for x in val.split(",")]
            if len(dims) == 3 and all(d is not None for d in dims):
                out[key] = tuple(dims)
        elif key == "occ_pct":
            try:
                out["occ"] = float(val)
            except ValueError:
                pass
    return out


def gpu_planes(fr: XSpaceFrame) -> list[int]:
    return op_metrics.gpu_planes(fr)


def frame_kernels(fr: XSpaceFrame) -> pl.DataFrame | None:
    planes = gpu_planes(fr)
    if not planes:
        return None
    raw = fr.raw
    lines = [ln for p in planes for ln in fr.lines_of(p) if raw.line_id[ln] < DERIVED_LINE_ID_MIN]
    rows = np.concatenate([np.arange(fr.line_events(ln).start, fr.line_events(ln).stop) for ln in lines]
                          + [np.zeros(0, np.int64)]).astype(np.int64)
    dur_ns = raw.event_duration_ps[rows] // 1000
    has_k, k_text = op_metrics.event_stat(fr, "kernel_details", rows, kind="text")
    keep = has_k & (dur_ns > 0)
    if not keep.any():
        return pl.DataFrame()
    rows, dur_ns, k_text = rows[keep], dur_ns[keep], k_text[keep]
    _, tf_text = op_metrics.event_stat(fr, "tf_op", rows, kind="text")
    _, eq_text = op_metrics.event_stat(fr, "equation", rows, kind="text")
    md = fr.events["metadata"].to_numpy()[rows]
    ev = pl.DataFrame({"md": md.astype(np.int64), "k": k_text, "tf": tf_text, "eq": eq_text, "dur": dur_ns})
    # Names, details and ops are few: resolve them once per distinct combination.
    g = ev.group_by("md", "k", "tf", "eq", maintain_order=True).agg(
        occurrences=pl.len().cast(pl.Int64), total=pl.col("dur").sum(), mn=pl.col("dur").min(), mx=pl.col("dur").max())
    out = []
    for r in g.iter_rows(named=True):
        name = raw.em_name[r["md"]] if r["md"] >= 0 else ""
        p = parse_launch(fr.text(r["k"]))
        tf_full = fr.text(r["tf"]) if r["tf"] >= 0 else ""
        using = uses_tensor_core(name)
        op_name, eligible = "", False
        if tf_full:
            op_name = op_metrics.parse_tf_op(tf_full)[1]
            eligible = (einsum_tensor_core_eligible(fr.text(r["eq"]) if r["eq"] >= 0 else "")
                        or op_tensor_core_eligible(op_name) or using)
        out.append({
            "kernel_name": name, "grid0": p["grid"][0], "grid1": p["grid"][1], "grid2": p["grid"][2],
            "block0": p["block"][0], "block1": p["block"][1], "block2": p["block"][2],
            "registers_per_thread": p["regs"], "static_shmem": p["static_shared"],
            "dynamic_shmem": p["dynamic_shared"], "is_kernel_using_tensor_core": using,
            "is_op_tensor_core_eligible": eligible, "op_name": op_name, "occupancy_pct": p["occ"],
            "occurrences": r["occurrences"], "total_ns": r["total"], "min_ns": r["mn"], "max_ns": r["mx"],
        })
    return pl.DataFrame(out)
