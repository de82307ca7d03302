"""The Cloud TPU performance guide's checks, on what a profile already holds.

Each check names the ops it found, the figures and what to change:
- layout padding: a tiled layout (e.g. `T(8,128)`) pads the two most-minor dimensions up to the
  tile; padded bytes / logical bytes per materialized buffer (instructions outside fusions); high
  severity when the padding (or one padded buffer) is 25% or more of the TPU's HBM (an OOM risk);
- MXU alignment: dot contraction and output-feature sizes against the MXU (128 through v5e, 256
  on v6e), and the rows (batch) against 8; a convolution's batch against 128 and its input
  features against 8 (the guide's estimate); the share of MXU work that is padding;
- materialized broadcasts: a large `broadcast` outside a fusion (or a fusion that only broadcasts)
  written to memory and read by an elementwise op (XLA could fuse it into the consumer);
- unfused elementwise ops: an elementwise kernel (an elementwise op outside fusions, or a loop
  fusion of elementwise ops alone) that reads a 1 MiB+ result of another from memory;
- host offload: copies between host memory (memory space 5, `S(5)`) and the device, bytes per run;
- input-bound steps: the share of step time waiting on the host / infeed (10% or more, XProf's
  input-bound threshold);
- TensorFlow input (tf_input.py): the dataset iterator called outside the step's Trace context, the
  Python an input pipeline holds (a from_generator source, a tf.py_function / tf.numpy_function),
  files read one at a time (num_parallel_reads), a shard after reading / mapping (shard early), and
  a TensorFlow step run without XLA (jit_compile=True).
`padding_of(shape)` is also used by the op profile's details card.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tputui.analysis import host_map
from tputui.analysis.hbm_capacity import Capacity, tpu_capacity
from tputui.analysis.hlo_modules import hlo_modules
from tputui.analysis.hlo_shape import TUPLE, type_name
from tputui.analysis.hlo_text import HloModel, shape_str
from tputui.analysis.op_stats import OpStats
from tputui.analysis.tf_input import PYTHON_INPUT_CHANGE, python_input_sources
from tputui.data.run_data import RunData
from tputui.proto import xla_data_pb2 as xd

MIB, GIB = 1 << 20, 1 << 30
PADDING_MIN_RATIO, PADDING_MIN_BYTES = 1.25, 1 * MIB
PADDING_OOM_PERCENT = 25.0  # padding (or one padded buffer) this share of the device's HBM: an OOM risk
BROADCAST_MIN_BYTES = 1 * MIB
INPUT_BOUND_PERCENT = 10.0  # XProf's kInfeedPercentageThreshold
HOST_MEMORY_SPACE = 5
ELEMENTWISE = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "select", "compare", "and", "or",
               "xor", "power", "remainder", "atan2", "clamp"}
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
          "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 0.5, "u4": 0.5, "f8e4m3fn": 1, "f8e5m2": 1}
_ANY_TILE = -(1 << 63)  # XLA's Tile::kCombineDimension ("*")


@dataclass
class Finding:
    op: str
    module: str
    figures: dict[str, Any]


@dataclass
class Check:
    name: str
    title: str
    severity: str  # high | medium | info
    detail: str
    change: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ops(self) -> list[str]:
        return [f.op for f in self.findings]

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "title": self.title, "severity": self.severity, "detail": self.detail,
                "what_to_change": self.change,
                "findings": [{"op": f.op, "module": f.module, **f.figures} for f in self.findings]}


def findings_frame(checks: list[Check]) -> pl.DataFrame:
    rows = [{"check": c.name, "op": f.op, "module": f.module, "figures": ", ".join(f"{k}={v}" for k, v in f.figures.items())}
            for c in checks for f in c.findings]
    return pl.DataFrame(rows, schema={"check": pl.String, "op": pl.String, "module": pl.String, "figures": pl.String})


# --- padding ------------------------------------------------------------------------------
def element_bytes(shape: xd.ShapeProto) -> float:
    if shape.HasField("layout") and shape.layout.element_size_in_bits:
        return shape.layout.element_size_in_bits / 8
    return _BYTES.get(type_name(shape.element_type), 0)


def padding_of(shape: xd.ShapeProto) -> tuple[int, int]:
    """(logical bytes, bytes with the layout's first tile padding) of an array shape."""
    if shape.element_type == TUPLE or not shape.dimensions:
        return 0, 0
    dims = list(shape.dimensions)
    nbytes = element_bytes(shape)
    logical = int(np.prod(dims, dtype=np.float64) * nbytes)
    layout = shape.layout if shape.HasField("layout") else None
    if layout is None or not layout.tiles or len(layout.minor_to_major) != len(dims):
        return logical, logical
    physical = [dims[i] for i in reversed(layout.minor_to_major)]  # major -> minor
    tile = [t for t in layout.tiles[0].dimensions]
    for j, t in enumerate(reversed(tile)):
        k = len(physical) - 1 - j
        if k < 0 or t in (_ANY_TILE, 0, 1):
            continue
        physical[k] = -(-physical[k] // t) * t
    return logical, int(np.prod(physical, dtype=np.float64) * nbytes)


_SHAPE_TEXT = re.compile(r"^(\w+)\[([\d,]*)\](?:\{([\d,]*)(?::([^}]*))?\})?$")
_TILE_TEXT = re.compile(r"T\(([\d,*]+)\)")


def padding_of_text(text: str) -> tuple[int, int] | None:
    """padding_of for a shape as XLA prints it ("f32[3,100]{1,0:T(8,128)}"); None for tuples / unknown."""
    m = _SHAPE_TEXT.match(text.strip())
    if not m or not m.group(2):
        return None
    pt = m.group(1).upper()
    if pt not in xd.PrimitiveType.keys():
        return None
    shape = xd.ShapeProto(element_type=xd.PrimitiveType.Value(pt), dimensions=[int(d) for d in m.group(2).split(",")])
    if m.group(3):
        shape.layout.minor_to_major.extend(int(d) for d in m.group(3).split(","))
        tile = _TILE_TEXT.search(m.group(4) or "")
        if tile:
            shape.layout.tiles.add().dimensions.extend(
                _ANY_TILE if d == "*" else int(d) for d in tile.group(1).split(","))
    return padding_of(shape)


def _materialized(model: HloModel):
    """Instructions whose results live in memory: those outside fusion computations."""
    for comp in model.comps.values():
        if not comp.is_fusion_computation:
            yield from comp.instructions


def _padding_check(models: list[tuple[str, HloModel]], capacity: Capacity | None = None) -> Check | None:
    found = []
    for module, m in models:
        for ins in _materialized(m):
            if ins.opcode in ("parameter", "get-tuple-element", "bitcast", "tuple"):
                continue
            logical, padded = padding_of(ins.shape)
            if logical and padded >= PADDING_MIN_RATIO * logical and padded - logical >= PADDING_MIN_BYTES:
                found.append(Finding(ins.name, module, {"shape": shape_str(ins.shape), "logical_bytes": logical,
                                                        "padded_bytes": padded, "expansion": round(padded / logical, 2)}))
    if not found:
        return None
    found.sort(key=lambda f: -(f.figures["padded_bytes"] - f.figures["logical_bytes"]))
    waste = sum(f.figures["padded_bytes"] - f.figures["logical_bytes"] for f in found)
    change = ("Make the two most-minor dimensions multiples of the tile (8 and 128 for f32, 16 and 128 for "
              "bf16): pad or reshape batch / feature sizes, or move a small dimension out of the minor position.")
    worst = found[0]
    # Padding that takes a large share of the device's HBM: the guide's "padding can cause out-of-memory"
    hbm = capacity.bytes if capacity else 0
    share = 100.0 * max(waste, worst.figures["padded_bytes"]) / hbm if hbm else 0.0
    if share >= PADDING_OOM_PERCENT:
        for f in found:
            f.figures["hbm_percent"] = round(100.0 * f.figures["padded_bytes"] / hbm, 1)
        return Check("layout_padding", "Layout padding risks running out of HBM", "high",
                     f"{len(found)} buffers grow at least {PADDING_MIN_RATIO}x once tiled: {waste / GIB:,.2f} GiB of "
                     f"padding in all, {share:.0f}% of this TPU's {hbm / GIB:.0f} GiB HBM "
                     f"(largest: {worst.op}, {worst.figures['logical_bytes'] / MIB:,.0f} MiB of data in "
                     f"{worst.figures['padded_bytes'] / GIB:,.2f} GiB, {worst.figures['expansion']}x).",
                     change + " Until then, a smaller batch keeps it in memory.", found[:50])
    return Check("layout_padding", "Layout padding wastes memory and bandwidth", "medium",
                 f"{len(found)} buffers are at least {PADDING_MIN_RATIO}x their logical size once tiled; "
                 f"{waste / MIB:,.1f} MiB of padding in all (largest: {worst.op}, "
                 f"{worst.figures['expansion']}x).", change, found[:50])


# --- MXU alignment ------------------------------------------------------------------------
def mxu_size(device_type: str) -> int:
    """The MXU edge of a TPU generation: 256 on v6e (Trillium), 128 before."""
    t = device_type.lower()
    return 256 if ("v6" in t or "trillium" in t or "v7" in t) else 128


def _roundup(n: int, k: int) -> int:
    return -(-n // k) * k


CONV_BATCH_TILE, CONV_FEATURE_TILE = 128, 8  # the guide's convolution example: batch -> 128, features -> 8


def _conv_findings(module: str, m: HloModel) -> list[Finding]:
    """Convolutions whose batch or input features pad the MXU tile, as the performance guide
    estimates them: batch padded to a multiple of 128, input features to a multiple of 8 (its
    example: batch 16 and 3 features use 16 x 3 / (128 x 8), about 5%)."""
    out = []
    for ins in m.instrs.values():
        if ins.opcode != "convolution" or not ins.operand_ids:
            continue
        lhs = m.instrs.get(ins.operand_ids[0])
        if lhs is None or not ins.HasField("convolution_dimension_numbers"):
            continue
        d, dims = ins.convolution_dimension_numbers, list(lhs.shape.dimensions)
        if max(d.input_batch_dimension, d.input_feature_dimension) >= len(dims):
            continue
        batch, feat = dims[d.input_batch_dimension], dims[d.input_feature_dimension]
        if batch <= 0 or feat <= 0:
            continue
        done = _roundup(batch, CONV_BATCH_TILE) * _roundup(feat, CONV_FEATURE_TILE)
        if done > batch * feat:
            out.append(Finding(ins.name, module, {"batch": batch, "input_features": feat,
                                                  "padded_to": f"{_roundup(batch, CONV_BATCH_TILE)} x "
                                                               f"{_roundup(feat, CONV_FEATURE_TILE)}",
                                                  "mxu_utilization_percent": round(100.0 * batch * feat / done, 1),
                                                  "mxu_waste_percent": round(100.0 * (1 - batch * feat / done), 1)}))
    return out


def _mxu_what(found: list[Finding], mxu: int) -> str:
    convs = sum(1 for f in found if "input_features" in f.figures)
    dots = len(found) - convs
    parts = []
    if dots:
        parts.append(f"{dots} dots have contraction or feature sizes that are not multiples of {mxu} (or rows not a "
                     "multiple of 8)")
    if convs:
        parts.append(f"{convs} convolutions have a batch that is not a multiple of {CONV_BATCH_TILE} or input "
                     f"features not a multiple of {CONV_FEATURE_TILE}")
    return "; ".join(parts)


def _mxu_check(models: list[tuple[str, HloModel]], device_type: str, on_tpu: bool) -> Check | None:
    mxu = mxu_size(device_type)
    found = []
    for module, m in models:
        for ins in m.instrs.values():
            if ins.opcode != "dot" or len(ins.operand_ids) < 2:
                continue
            lhs, rhs = m.instrs.get(ins.operand_ids[0]), m.instrs.get(ins.operand_ids[1])
            if lhs is None or rhs is None:
                continue
            d = ins.dot_dimension_numbers
            ldims, rdims = list(lhs.shape.dimensions), list(rhs.shape.dimensions)
            k = int(np.prod([ldims[i] for i in d.lhs_contracting_dimensions if i < len(ldims)], dtype=np.int64))
            rows = int(np.prod([v for i, v in enumerate(ldims) if i not in d.lhs_contracting_dimensions
                                and i not in d.lhs_batch_dimensions], dtype=np.int64))
            n = int(np.prod([v for i, v in enumerate(rdims) if i not in d.rhs_contracting_dimensions
                             and i not in d.rhs_batch_dimensions], dtype=np.int64))
            if k <= 0 or n <= 0 or rows <= 0:
                continue
            useful = k * n * rows
            done = _roundup(k, mxu) * _roundup(n, mxu) * _roundup(rows, 8)
            if done > useful:
                found.append(Finding(ins.name, module, {"rows": rows, "contraction": k, "features": n, "mxu": mxu,
                                                        "mxu_waste_percent": round(100.0 * (1 - useful / done), 1)}))
        found += _conv_findings(module, m)
    if not found:
        return None
    found.sort(key=lambda f: -f.figures["mxu_waste_percent"])
    where = f"the {mxu}x{mxu} MXU of this {device_type}" if on_tpu else f"a {mxu}x{mxu} TPU MXU (this profile ran on CPU)"
    return Check("mxu_alignment", "Matmul sizes not aligned to the MXU", "medium" if on_tpu else "info",
                 f"{_mxu_what(found, mxu)} for {where}; worst: {found[0].op}, "
                 f"{found[0].figures['mxu_waste_percent']}% of its MXU work is padding.",
                 f"Use feature / hidden sizes that are multiples of {mxu} and per-core batch sizes that are multiples "
                 "of 8; after sharding, check the per-core batch (global batch / data-parallel cores).",
                 found[:50])


# --- broadcasts, unfused elementwise ops and host offload --------------------------------------
UNARY = {"abs", "ceil", "cosine", "exponential", "exponential-minus-one", "floor", "log", "log-plus-one", "logistic",
         "negate", "not", "round-nearest-afz", "round-nearest-even", "rsqrt", "sign", "sine", "sqrt", "cbrt", "tan",
         "tanh", "erf", "convert", "is-finite", "real", "imag"}
PASS_THROUGH = {"opt-barrier", "get-tuple-element", "tuple", "bitcast", "copy", "reshape"}
UNFUSED_MIN_BYTES = 1 * MIB


def _fused_ops(m: HloModel, ins) -> list:
    """The instructions a fusion computes (its called computation, parameters left out)."""
    comp = m.comps.get(ins.called_computation_ids[0]) if ins.called_computation_ids else None
    return [i for i in comp.instructions if i.opcode != "parameter"] if comp is not None else []


def is_elementwise_kernel(m: HloModel, ins) -> bool:
    """An op that runs as a kernel of its own and only computes elementwise: an elementwise op outside
    any fusion, or a loop fusion of elementwise ops alone (XLA wraps an op it did not fuse in one)."""
    if ins.opcode in ELEMENTWISE or ins.opcode in UNARY:
        return True
    if ins.opcode != "fusion" or ins.fusion_kind != "kLoop":
        return False
    ops = _fused_ops(m, ins)
    return bool(ops) and all(i.opcode in ELEMENTWISE or i.opcode in UNARY or i.opcode == "constant" for i in ops)


def is_broadcast_kernel(m: HloModel, ins) -> bool:
    """A broadcast written to memory: the op itself outside fusions, or a fusion that only broadcasts."""
    if ins.opcode == "broadcast":
        return True
    if ins.opcode != "fusion":
        return False
    ops = _fused_ops(m, ins)
    return bool(ops) and any(i.opcode == "broadcast" for i in ops) and all(
        i.opcode in ("broadcast", "constant") for i in ops)


def _consumers(m: HloModel, ins, depth: int = 3) -> list:
    """The ops that read `ins`'s result, through ops that only pass it on (barriers, tuples, bitcasts)."""
    out = []
    for u in (m.instrs[i] for i in m.users.get(ins.id, [])):
        if u.opcode in PASS_THROUGH and depth > 0:
            out += _consumers(m, u, depth - 1)
        else:
            out.append(u)
    return out


def _broadcast_check(models: list[tuple[str, HloModel]]) -> Check | None:
    found = []
    for module, m in models:
        for ins in _materialized(m):
            if not is_broadcast_kernel(m, ins):
                continue
            logical, _ = padding_of(ins.shape)
            feeds = [u.name for u in _consumers(m, ins) if u.opcode in ELEMENTWISE or u.opcode in UNARY
                     or u.opcode == "fusion"]
            if logical >= BROADCAST_MIN_BYTES and feeds:
                found.append(Finding(ins.name, module, {"bytes": logical, "shape": shape_str(ins.shape),
                                                        "feeds": ", ".join(feeds[:4])}))
    if not found:
        return None
    found.sort(key=lambda f: -f.figures["bytes"])
    return Check("materialized_broadcast", "Large broadcasts written to memory", "medium",
                 f"{len(found)} broadcasts outside fusions materialize {sum(f.figures['bytes'] for f in found) / MIB:,.1f} "
                 f"MiB that elementwise ops then read back (largest: {found[0].op}).",
                 "Let XLA fuse the broadcast into its consumer (avoid optimization barriers / custom calls between "
                 "them), or broadcast inside the jitted function where the consumer is.", found[:50])


def _unfused_check(models: list[tuple[str, HloModel]]) -> Check | None:
    """Elementwise kernels that read another elementwise kernel's result from memory: XLA would
    normally fuse the two into one pass, saving the write and the read of the intermediate."""
    found = []
    for module, m in models:
        for ins in _materialized(m):
            if not is_elementwise_kernel(m, ins):
                continue
            for producer in (m.instrs.get(i) for i in ins.operand_ids):
                if producer is None or not is_elementwise_kernel(m, producer):
                    continue
                nbytes, _ = padding_of(producer.shape)
                if nbytes >= UNFUSED_MIN_BYTES:
                    found.append(Finding(ins.name, module, {"reads": producer.name, "bytes": nbytes,
                                                            "shape": shape_str(producer.shape)}))
    if not found:
        return None
    found.sort(key=lambda f: -f.figures["bytes"])
    moved = sum(2 * f.figures["bytes"] for f in found)
    return Check("unfused_elementwise", "Elementwise ops that XLA did not fuse", "medium",
                 f"{len(found)} elementwise ops read an intermediate another elementwise op wrote to memory: "
                 f"{moved / MIB:,.1f} MiB written and read back per run (largest: {found[0].figures['reads']} -> "
                 f"{found[0].op}).",
                 "Keep the chain inside one jitted function with nothing between the ops (optimization barriers, host "
                 "callbacks, custom calls), and check that no XLA flag turns fusion off "
                 "(--xla_disable_hlo_passes).", found[:50])


def _memory_space(shape: xd.ShapeProto) -> int:
    if shape.element_type == TUPLE:
        return max((_memory_space(s) for s in shape.tuple_shapes), default=0)
    return shape.layout.memory_space if shape.HasField("layout") else 0


def _host_offload_check(models: list[tuple[str, HloModel]]) -> Check | None:
    found = []
    for module, m in models:
        for ins in _materialized(m):
            if ins.opcode != "copy-done" or not ins.operand_ids:
                continue
            start = m.instrs.get(ins.operand_ids[0])
            src = start.shape.tuple_shapes[1] if start is not None and start.shape.tuple_shapes else None
            to_host = _memory_space(ins.shape) == HOST_MEMORY_SPACE
            from_host = src is not None and _memory_space(src) == HOST_MEMORY_SPACE
            if to_host or from_host:
                logical, _ = padding_of(ins.shape)
                found.append(Finding(ins.name, module, {"direction": "device->host" if to_host else "host->device",
                                                        "bytes": logical}))
    if not found:
        return None
    total = sum(f.figures["bytes"] for f in found)
    return Check("host_offload", "Host offload traffic", "info",
                 f"{len(found)} copies move {total / MIB:,.1f} MiB between host memory (S(5)) and the device per "
                 "run of their program.",
                 "Host offload trades HBM for PCIe time: check in the trace viewer that the copies overlap compute; "
                 "if they stall the step, offload less (e.g. fewer remat / optimizer-state offloads).", found[:50])


# --- sharding and the op mix ------------------------------------------------------------------
def per_core_dims(shape: xd.ShapeProto, sharding: xd.OpSharding) -> list[int] | None:
    """A tiled parameter's shape on one core (dims divided by the tile counts, rounded up)."""
    if sharding.type != xd.OpSharding.OTHER or not sharding.tile_assignment_dimensions:
        return None
    tiles = list(sharding.tile_assignment_dimensions)[:len(shape.dimensions)]
    return [-(-d // t) for d, t in zip(shape.dimensions, tiles)]


def is_partitioned(m: HloModel) -> bool:
    """An SPMD-partitioned program (XLA renames its entry `<name>_spmd`): its parameters already have
    one core's shape, their sharding says how the global array was split."""
    entry = m.comps.get(m.proto.entry_computation_id)
    return entry is not None and entry.name.endswith("_spmd")


def batch_rule_ok(batch: int, features: int) -> bool:
    """The guide's batch rules, per core: batch a multiple of 8 with features a multiple of 128, or
    batch a multiple of 128 with features a multiple of 8 (64 / 1024 over a v2 / v3 device's 8 cores)."""
    return (batch % 8 == 0 and features % 128 == 0) or (batch % 128 == 0 and features % 8 == 0)


def _per_core_batch_check(models: list[tuple[str, HloModel]]) -> Check | None:
    found = []
    for module, m in models:
        entry = m.comps.get(m.proto.entry_computation_id)
        partitioned = is_partitioned(m)
        for ins in entry.instructions if entry is not None else ():
            if ins.opcode != "parameter" or not ins.HasField("sharding") or len(ins.shape.dimensions) < 2:
                continue
            local = list(ins.shape.dimensions) if partitioned else per_core_dims(ins.shape, ins.sharding)
            tiles = list(ins.sharding.tile_assignment_dimensions)
            if local is None or not tiles or tiles[0] <= 1 or (not partitioned and ins.shape.dimensions[0] < tiles[0]):
                continue  # the leading dimension is not split across cores
            batch, features = local[0], local[-1]
            if batch == 1:
                continue  # one row per core: a stacked device axis (pmap, psum over devices), not a batch
            if batch < 8 or not batch_rule_ok(batch, features):
                shape = ([d * t for d, t in zip(local, tiles)] if partitioned else list(ins.shape.dimensions))
                found.append(Finding(ins.name, module, {"global_shape": "x".join(map(str, shape)),
                                                        "per_core_batch": batch, "per_core_features": features,
                                                        "per_core_dims": "x".join(map(str, local)),
                                                        "partitioned": partitioned}))
    if not found:
        return None
    return Check("per_core_batch", "Per-core batch after sharding is small or unaligned", "info",
                 f"{len(found)} sharded inputs leave each core a batch and feature size outside the guide's rules "
                 f"(batch a multiple of 8 with features a multiple of 128, or batch a multiple of 128 with features "
                 f"a multiple of 8; e.g. {found[0].op}: {found[0].figures['per_core_dims']} per core).",
                 "Choose the global batch as a multiple of 8 (or 128) x the data-parallel cores and feature sizes as "
                 "multiples of 128 (or 8), or shard another dimension.",
                 found[:50])


TAIL_TOP, TAIL_SHARE, LOW_FLOPS_FRACTION = 10, 0.2, 0.1


def long_tail_check(ops: pl.DataFrame, peak_tflops: float) -> Check | None:
    """Device ops past the top TAIL_TOP by self time that run under 10% of the peak FLOP rate and
    together take TAIL_SHARE or more of the op time: the overhead of many small ops."""
    ops = ops.filter(pl.col("name") != "IDLE").sort("self_time_ps", descending=True)
    total = float(ops["self_time_ps"].sum()) if ops.height else 0.0
    if total <= 0 or peak_tflops <= 0 or ops.height <= TAIL_TOP:
        return None
    tail = ops.slice(TAIL_TOP).with_columns(
        rate=pl.col("flops") / (pl.col("self_time_ps").cast(pl.Float64) * 1e-12).clip(lower_bound=1e-30))
    low = tail.filter(pl.col("rate") < LOW_FLOPS_FRACTION * peak_tflops * 1e12)
    share = float(low["self_time_ps"].sum()) / total
    if share < TAIL_SHARE:
        return None
    found = [Finding(r["name"], "", {"time_percent": round(100 * r["self_time_ps"] / total, 2),
                                     "tflops": round(r["rate"] / 1e12, 3), "occurrences": r["occurrences"]})
             for r in low.head(50).iter_rows(named=True)]
    return Check("low_flops_tail", "A long tail of small, low-FLOPS ops", "medium",
                 f"{low.height} ops outside the top {TAIL_TOP} run under {LOW_FLOPS_FRACTION:.0%} of the peak FLOP "
                 f"rate and take {share:.1%} of device op time together.",
                 "Fuse them: fewer, larger ops (jit larger functions, avoid host round trips and Python loops of "
                 "small ops; scan instead of unrolled loops).", found)


# --- input-bound ------------------------------------------------------------------------------
def _input_check(stats: OpStats) -> Check | None:
    steps = stats.steps.per_step()
    if not len(steps):
        return None
    total = float(steps["duration_ps"].sum())
    waiting = sum(float(steps[c].sum()) for c in ("host_wait_input_ps", "host_to_device_ps", "device_wait_host_ps")
                  if c in steps.columns)
    percent = 100.0 * waiting / total if total else 0.0
    if percent < INPUT_BOUND_PERCENT:
        return None
    worst = steps.with_columns(w=sum(pl.col(c) for c in ("host_wait_input_ps", "host_to_device_ps", "device_wait_host_ps")
                                     if c in steps.columns)).sort("w", descending=True).row(0, named=True)
    return Check("input_bound", "Steps wait on the input pipeline", "high",
                 f"{percent:.1f}% of step time is spent waiting for input (host input, host-to-device copies, "
                 f"device waiting on the host); step {worst['step']} waits longest.",
                 "Confirm it first: run a few steps on synthetic data (one batch fed again and again); if the step "
                 "time drops, the input is the bottleneck. Then see the input pipeline analyzer and the tf.data "
                 "bottleneck: prefetch, parallelize map / interleave, read files in parallel "
                 "(TFRecordDataset(num_parallel_reads=...)), shard the dataset early (before shuffle and map), cast to "
                 "the compute type after spatial augmentation, give tf.data enough threads (tf.config.threading), "
                 "cache or preprocess offline; feed larger batches per host. In TensorFlow, compile the step with XLA "
                 "(tf.function(jit_compile=True)).",
                 [Finding(str(worst["name"] or worst["step"]), "", {"input_percent": round(percent, 1)})])


# --- TensorFlow input (tf_input.py's facts, from the op-stats map) ---------------------------------
def _iterator_outside_step_check(stats: OpStats) -> Check | None:
    found = [(h.host, h.tf_input) for h in stats.per_host if h.tf_input is not None and h.tf_input.iterator_outside_steps]
    if not found:
        return None
    host, f = found[0]
    return Check("iterator_outside_step", "The dataset iterator is called outside the step", "medium",
                 f"{f.outside_calls} of {f.iterator_calls} tf.data GetNext calls on thread {f.outside_thread} "
                 f"({host}) fall outside every step event ({f.outside_ps / 1e9:,.2f} ms): the input time lands "
                 "between steps, so the step-time breakdown and the input pipeline analyzer do not count it as "
                 "waiting for input.",
                 "Fetch the batch inside the step's context: `with tf.profiler.experimental.Trace('train', "
                 "step_num=step, _r=1): x, y = next(iterator); train_step(x, y)` (or iterate inside the "
                 "tf.function), so each step's input wait is measured with it.",
                 [Finding(h, "", {"outside_calls": t.outside_calls, "iterator_calls": t.iterator_calls,
                                  "outside_ms": round(t.outside_ps / 1e9, 3), "thread": t.outside_thread})
                  for h, t in found])


def _python_input_check(stats: OpStats) -> Check | None:
    found = [(h.host, kind, what, evidence) for h in stats.per_host if h.tf_input is not None
             for kind, what, evidence in python_input_sources(h.tf_input)]
    if not found:
        return None
    kinds = list(dict.fromkeys(k for _, k, _, _ in found))
    whats = list(dict.fromkeys(w for _, _, w, _ in found))
    return Check("python_input", "The input pipeline runs Python: " + ", ".join(whats), "medium",
                 "The tf.data pipeline holds " + "; ".join(f"{w} ({e})" for _, _, w, e in found[:4]) + ".",
                 "; ".join(PYTHON_INPUT_CHANGE[k] for k in kinds) + ".",
                 [Finding(e, "", {"host": h, "kind": k}) for h, k, _, e in found])


def _sequential_reads_check(stats: OpStats) -> Check | None:
    found = [(h.host, n) for h in stats.per_host if h.tf_input is not None for n in h.tf_input.sequential_reads]
    if not found:
        return None
    reader = found[0][1].split("::")[-1]
    return Check("sequential_file_reads", f"{reader} files are read one at a time", "info",
                 f"The pipeline reads its files one after the other ({found[0][1]}): no parallel interleave above "
                 "the reader, so reading waits on one file's I/O at a time.",
                 f"Read several files at once: {reader}Dataset(files, num_parallel_reads=tf.data.AUTOTUNE), or "
                 "files.interleave(..., num_parallel_calls=tf.data.AUTOTUNE, deterministic=False); shards of "
                 "100+ MB each.",
                 [Finding(n, "", {"host": h}) for h, n in found])


def _late_shard_check(stats: OpStats) -> Check | None:
    found = [(h.host, n) for h in stats.per_host if h.tf_input is not None for n in h.tf_input.late_shards]
    if not found:
        return None
    return Check("shard_late", "The dataset is sharded after it is read and transformed", "info",
                 f"{found[0][1]}: what feeds the Shard is already read, mapped or shuffled, so every worker does "
                 "all of that work and keeps one part of it.",
                 "Shard early: shard the list of files before reading (Dataset.list_files(...).shard(num_workers, "
                 "worker_index), then interleave the readers), before any map or shuffle; with tf.distribute, "
                 "auto-sharding by FILE does it.",
                 [Finding(n, "", {"host": h}) for h, n in found])


def _tf_without_xla_check(stats: OpStats) -> Check | None:
    found = [(h.host, h.tf_input.tf_function_calls) for h in stats.per_host
             if h.tf_input is not None and h.tf_input.tf_function_calls and not h.hlo_module_names]
    if not found:
        return None
    return Check("tf_without_xla", "The TensorFlow step runs without XLA", "info",
                 f"{sum(n for _, n in found):,} tf.function runs and no XLA program in the profile: the step's ops "
                 "run one kernel at a time, each result written to memory.",
                 "Compile the step with XLA: tf.function(jit_compile=True) (Keras: model.compile(jit_compile=True)), "
                 "which fuses the ops into fewer kernels; on TPUs TensorFlow always compiles with XLA.",
                 [Finding(h, "", {"tf_function_calls": n}) for h, n in found])


def checks(run: RunData, host: str | None = None) -> list[Check]:
    models = [(m.name, HloModel.build(m.parse())) for m in hlo_modules(run, host)]
    stats = host_map.run_op_stats(run, host)  # the per-host op-stats, cached: the tools share it
    on_tpu = stats.hardware_type == "TPU"
    device_type = stats.device_type if on_tpu else "TPU"
    tail = None
    if on_tpu and any(h.device_ops is not None and h.device_ops.db.ops.height > 0
                      for h in host_map.host_op_stats(run, host)):  # a TPU profile may hold no XLA ops
        ops = host_map.run_device_ops(run, host)
        tail = long_tail_check(ops.ops, ops.perf.peak_tflops)
    capacity = tpu_capacity(stats.device_type) if on_tpu else None
    found = [_input_check(stats), _mxu_check(models, device_type, on_tpu), _padding_check(models, capacity), tail,
             _per_core_batch_check(models),
             _broadcast_check(models), _unfused_check(models), _host_offload_check(models),
             _iterator_outside_step_check(stats), _python_input_check(stats), _sequential_reads_check(stats),
             _late_shard_check(stats), _tf_without_xla_check(stats)]
    return by_severity([c for c in found if c is not None])


def by_severity(found: list[Check]) -> list[Check]:
    """Most severe first (stable: each severity keeps its order)."""
    order = {"high": 0, "medium": 1, "info": 2}
    return sorted(found, key=lambda c: order[c.severity])
