"""An XLA module as HLO text, the way XLA's printer writes it for XProf's graph viewer `long_txt`.

XProf turns the `Hlo Proto` of a program back into an HloModule and prints it with XLA's default
print options plus large constants and without metadata (xprof/convert/hlo_proto_to_graph_view.cc).
We print from the proto directly, following XLA's printer rules (hlo_module.cc, hlo_computation.cc,
hlo_instruction(s).cc, shape_util.cc, hlo_sharding.cc):
- computations in XLA's computation post order (callees first, in call order), the entry last,
  `ENTRY ` before it; async wrapper computations are left out (async ops print as `<op>-start`);
- instructions in schedule order where the module has a schedule for that computation, else in
  XLA's instruction post order (operands first, depth first from the user-less instructions);
- `%name = shape opcode(operands), attributes...`, operand lists marked `/*index=5*/` every 5.

`HloModel` indexes one module (instructions by name and id, users, callers) for the graph viewer.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from tputui.analysis.hlo_shape import TUPLE, layout_text, shape_text, type_name
from tputui.proto import hlo_pb2
from tputui.proto import xla_data_pb2 as xd

_ASYNC = ("async-start", "async-update", "async-done")
_DIMENSIONS_OPS = {"broadcast", "concatenate", "reduce", "reverse", "transpose", "sort",
                   "get-dimension-size", "set-dimension-size", "map"}
_TO_APPLY_OPS = {"call", "map", "reduce-window", "reduce", "all-reduce", "reduce-scatter",
                 "all-reduce-start", "scatter", "topk", "sort"}
_COLLECTIVES = {"all-reduce", "all-reduce-start", "all-gather", "all-gather-start", "reduce-scatter",
                "all-to-all", "ragged-all-to-all", "collective-broadcast"}
_CHANNEL_OPS = _COLLECTIVES | {"collective-permute", "collective-permute-start", "send", "recv",
                               "send-done", "recv-done"}
_PRECISION = {0: "default", 1: "high", 2: "highest"}
_SHARDING = xd.OpSharding


# --- shapes -------------------------------------------------------------------------------
def shape_str(shape: xd.ShapeProto, layout: bool = True) -> str:
    """ShapeUtil::HumanString[WithLayout]: tuples mark every fifth element `/*index=5*/`."""
    if shape.element_type == TUPLE:
        parts = []
        for i, s in enumerate(shape.tuple_shapes):
            mark = f"/*index={i}*/" if i and i % 5 == 0 else ""
            parts.append(mark + shape_str(s, layout))
        return "(" + ", ".join(parts) + ")"
    text = shape_text(shape, with_layout=False)
    if layout and shape.HasField("layout") and not shape.dimensions:
        lt = layout_text(shape.layout)  # scalars show their layout unless it is empty ("{}")
        return text + ("" if lt == "{}" else lt)
    return text + (layout_text(shape.layout) if layout and shape.HasField("layout") else "")


# --- literals -----------------------------------------------------------------------------
def _fp(value: float, digits: int, max_digits: int, to_type) -> str:
    """RoundTripFpToString: the shorter of %.{digits10}g and %.{max_digits10}g that reads back."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    text = f"{value:.{digits}g}"
    if to_type(float(text)) != to_type(value):
        text = f"{value:.{max_digits}g}"
    return text


def _f32(v: float) -> str:
    return _fp(v, 6, 9, np.float32)


def _f64(v: float) -> str:
    return _fp(v, 15, 17, float)


def _halves(data: bytes, bf16: bool) -> list[str]:
    raw = np.frombuffer(data, dtype="<u2")
    if bf16:
        vals = (raw.astype(np.uint32) << 16).view(np.float32)
        return [_fp(float(v), 2, 4, lambda x: np.float32(x).view(np.uint32) >> 16) for v in vals]
    return [_fp(float(v), 3, 5, np.float16) for v in raw.view(np.float16)]


def literal_values(lit: xd.LiteralProto, element_type: int) -> list[str]:
    name = type_name(element_type)
    if name == "pred":
        return ["true" if b else "false" for b in lit.preds]
    if name in ("s32", "s64", "u32", "u64"):
        return [str(v) for v in getattr(lit, name + "s")]
    if name in ("s8", "u8"):
        return [str(v) for v in np.frombuffer(getattr(lit, name + "s"), dtype=np.int8 if name == "s8" else np.uint8)]
    if name in ("s16", "u16"):
        return [str(v) for v in np.frombuffer(getattr(lit, name + "s"), dtype="<i2" if name == "s16" else "<u2")]
    if name == "f32":
        return [_f32(v) for v in lit.f32s]
    if name == "f64":
        return [_f64(v) for v in lit.f64s]
    if name in ("bf16", "f16"):
        return _halves(getattr(lit, name + "s"), name == "bf16")
    return []


def literal_text(lit: xd.LiteralProto, shape: xd.ShapeProto) -> str:
    """Literal::PrintWithoutShapeOneline: `1`, `{1, 2}`, `{ { 1, 2 }, { 3, 4 } }`, tuples `( a, b )`."""
    if shape.element_type == TUPLE:
        parts = [literal_text(t, s) for t, s in zip(lit.tuple_literals, shape.tuple_shapes)]
        return "( " + ", ".join(parts) + " )"
    values = literal_values(lit, shape.element_type)
    dims = list(shape.dimensions)
    if not dims:
        return values[0] if values else "{...}"
    if len(values) != int(np.prod(dims)):
        return "{...}"

    def block(level: int, start: int) -> tuple[str, int]:
        if level == len(dims) - 1:
            row = values[start:start + dims[level]]
            inner = ", ".join(row)
            return ("{" + inner + "}" if len(dims) == 1 else "{ " + inner + " }"), start + dims[level]
        parts = []
        for _ in range(dims[level]):
            text, start = block(level + 1, start)
            parts.append(text)
        return "{ " + ", ".join(parts) + " }", start

    return block(0, 0)[0]


# --- attribute pieces -----------------------------------------------------------------------
def _ints(values) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"


def lexes_as_json_dict(text: str) -> bool:
    """XLA prints backend configs and attribute values bare when they look like `{...}`."""
    s = text.strip()
    if not s.startswith("{"):
        return False
    depth, i, n = 0, 0, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            if i >= n:
                return False
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i == n - 1
        i += 1
    return False


def _c_escape(data: bytes) -> str:
    out = []
    for b in data:
        ch = chr(b)
        if ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ch in "\"'\\":
            out.append("\\" + ch)
        elif 32 <= b < 127:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


def frontend_attributes_text(attrs: xd.FrontendAttributes) -> str:
    items = sorted(attrs.map.items())
    return "{" + ",".join(f"{k}={v}" if lexes_as_json_dict(v) else f'{k}="{v}"' for k, v in items) + "}"


def _iota_text(dims, reshape, perm) -> str:
    text = "[" + ",".join(map(str, dims)) + "]<=[" + ",".join(map(str, reshape)) + "]"
    if list(perm) and list(perm) != list(range(len(perm))):
        text += "T(" + ",".join(map(str, perm)) + ")"
    return text


def sharding_text(s: xd.OpSharding) -> str:
    """HloSharding::ToString (without metadata)."""
    if s.type == _SHARDING.TUPLE:
        return "{" + ", ".join(sharding_text(t) for t in s.tuple_shardings) + "}"
    group = ""
    if s.is_shard_group:
        group = f" shard_{'like' if s.shard_group_type == 1 else 'as'} {s.shard_group_id}"
    if s.type == _SHARDING.REPLICATED:
        return "{replicated" + group + "}"
    if s.type == _SHARDING.MANUAL:
        return "{manual" + group + "}"
    if s.type == _SHARDING.UNKNOWN:
        return "{unknown" + group + "}"
    if s.type == _SHARDING.UNREDUCED:
        return "{unreduced" + group + "}"
    if s.type == _SHARDING.MAXIMAL:
        dev = s.tile_assignment_devices[0] if s.tile_assignment_devices else 0
        return "{maximal device=" + str(dev) + group + "}"
    dims = list(s.tile_assignment_dimensions)
    if s.iota_reshape_dims:
        tiles = _iota_text(dims, s.iota_reshape_dims, s.iota_transpose_perm)
    else:
        tiles = "[" + ",".join(map(str, dims)) + "]" + ",".join(map(str, s.tile_assignment_devices))
    text = "{devices=" + tiles
    if s.replicate_on_last_tile_dim:
        text += " last_tile_dim_replicate"
    if s.last_tile_dims:
        names = {v: k.lower() for k, v in _SHARDING.Type.items()}
        text += " last_tile_dims={" + ", ".join(names[t] for t in s.last_tile_dims) + "}"
    return text + group + "}"


def replica_groups_text(ins: hlo_pb2.HloInstructionProto) -> str:
    """`{{0,1},{2,3}}`. XProf 2.24 prints `{}` for an iota device list (seen on the v6e all-reduce
    whose proto has `[4,2]<=[2,4]T(1,0)`), so only explicit groups are shown, as it does."""
    groups = ins.collective_device_list.replica_groups or ins.replica_groups
    return "{" + ",".join(_ints(g.replica_ids) for g in groups) + "}"


def window_text(window: xd.Window) -> str:
    dims = list(window.dimensions)

    def field_(heading: str, fmt) -> str:
        return heading + "=" + "x".join(fmt(d) for d in dims)

    parts = [field_("size", lambda d: str(d.size))] if dims else []
    if any(d.stride != 1 for d in dims):
        parts.append(field_("stride", lambda d: str(d.stride)))
    if any(d.padding_low or d.padding_high for d in dims):
        parts.append(field_("pad", lambda d: f"{d.padding_low}_{d.padding_high}"))
    if any(d.base_dilation != 1 for d in dims):
        parts.append(field_("lhs_dilate", lambda d: str(d.base_dilation)))
    if any(d.window_dilation != 1 for d in dims):
        parts.append(field_("rhs_dilate", lambda d: str(d.window_dilation)))
    if any(d.window_reversal for d in dims):
        parts.append(field_("rhs_reversal", lambda d: "1" if d.window_reversal else "0"))
    return " ".join(parts)


def conv_dim_labels(c: xd.ConvolutionDimensionNumbers) -> str:
    """ConvolutionDimensionNumbersToString, e.g. `b01f_01io->b01f`."""
    def labels(n: int, first: tuple[int, str], second: tuple[int, str], spatial) -> str:
        out = ["?"] * n
        out[first[0]] = first[1]
        out[second[0]] = second[1]
        for i, d in enumerate(spatial):
            out[d] = str(i)
        return "".join(out)

    n_sp = len(c.input_spatial_dimensions)
    lhs = labels(n_sp + 2, (c.input_batch_dimension, "b"), (c.input_feature_dimension, "f"),
                 c.input_spatial_dimensions)
    rhs = labels(len(c.kernel_spatial_dimensions) + 2, (c.kernel_input_feature_dimension, "i"),
                 (c.kernel_output_feature_dimension, "o"), c.kernel_spatial_dimensions)
    out = labels(len(c.output_spatial_dimensions) + 2, (c.output_batch_dimension, "b"),
                 (c.output_feature_dimension, "f"), c.output_spatial_dimensions)
    return f"{lhs}_{rhs}->{out}"


def _default_comparison_type(element_type: int) -> str:
    name = type_name(element_type)
    if name[0] == "s":
        return "SIGNED"
    if name[0] in "up":
        return "UNSIGNED"
    return "FLOAT"


# --- the model ------------------------------------------------------------------------------
@dataclass
class HloModel:
    """One module's computations and instructions, indexed for printing and graph walks."""

    proto: hlo_pb2.HloModuleProto
    comps: dict[int, hlo_pb2.HloComputationProto] = field(default_factory=dict)
    instrs: dict[int, hlo_pb2.HloInstructionProto] = field(default_factory=dict)
    comp_of: dict[int, int] = field(default_factory=dict)  # instruction id -> computation id
    users: dict[int, list[int]] = field(default_factory=dict)
    callers: dict[int, list[int]] = field(default_factory=dict)  # computation id -> instruction ids
    by_name: dict[str, int] = field(default_factory=dict)
    comp_by_name: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, hlo: hlo_pb2.HloProto | hlo_pb2.HloModuleProto) -> HloModel:
        module = hlo.hlo_module if isinstance(hlo, hlo_pb2.HloProto) else hlo
        m = cls(module)
        for c in module.computations:
            m.comps[c.id] = c
            m.comp_by_name[c.name] = c.id
            for ins in c.instructions:
                m.instrs[ins.id] = ins
                m.comp_of[ins.id] = c.id
                m.by_name[ins.name] = ins.id
                m.users.setdefault(ins.id, [])
        for c in module.computations:
            for ins in c.instructions:
                for op in dict.fromkeys(ins.operand_ids):
                    m.users.setdefault(op, []).append(ins.id)
                for cid in ins.called_computation_ids:
                    m.callers.setdefault(cid, []).append(ins.id)
        return m

    # -- orders --
    def computation_post_order(self) -> list[int]:
        """HloModule::MakeComputationPostOrder over computations sorted by proto id."""
        order: list[int] = []
        added: set[int] = set()
        ids = sorted(self.comps)
        called = {cid for c in self.comps.values() for i in c.instructions for cid in i.called_computation_ids}
        for cid in ids:
            if cid in called:
                continue
            for e in self._embedded(cid):
                if e not in added:
                    added.add(e)
                    order.append(e)
            if cid not in added:
                added.add(cid)
                order.append(cid)
        order += [c for c in ids if c not in added]
        return order

    def _embedded(self, cid: int) -> list[int]:
        """HloComputation::MakeEmbeddedComputationsList: an explicit stack, callees pushed in
        reverse and marked visited when pushed (not the same as plain recursion)."""
        visited: set[int] = set()
        post: list[int] = []
        for ins in self.comps[cid].instructions:
            stack: list[list] = []

            def push(called, stack=stack):
                for c in reversed(called):
                    if c in self.comps and c not in visited:
                        visited.add(c)
                        stack.append([c, 0])

            push(list(ins.called_computation_ids))
            while stack:
                top = stack[-1]
                body = self.comps[top[0]].instructions
                if top[1] == len(body):
                    stack.pop()
                    post.append(top[0])
                else:
                    nxt = body[top[1]]
                    top[1] += 1
                    push(list(nxt.called_computation_ids))
        return post

    def instruction_post_order(self, cid: int) -> list[int]:
        """HloComputation::MakeInstructionPostOrder: a DFS stack from each user-less instruction,
        operands pushed in reverse (first operand first), control predecessors after them."""
        comp = self.comps[cid]
        visited: dict[int, bool] = {}  # id -> finished
        post: list[int] = []
        for ins in comp.instructions:
            if self.users.get(ins.id) or ins.id in visited:
                continue
            stack = [ins.id]
            while stack:
                cur = stack[-1]
                if cur in visited:
                    stack.pop()
                    if not visited[cur]:
                        visited[cur] = True
                        post.append(cur)
                    continue
                visited[cur] = False
                node = self.instrs[cur]
                stack.extend(reversed(node.operand_ids))
                stack.extend(node.control_predecessor_ids)
        return post

    def instruction_order(self, cid: int) -> list[int]:
        seq = self.proto.schedule.sequences.get(cid) if self.proto.HasField("schedule") else None
        if seq is not None and seq.instruction_ids:
            return list(seq.instruction_ids)
        return self.instruction_post_order(cid)

    # -- queries --
    def is_async_computation(self, cid: int) -> bool:
        callers = self.callers.get(cid, [])
        return bool(callers) and all(self.instrs[i].opcode in _ASYNC for i in callers)

    def parameters(self, cid: int) -> list[hlo_pb2.HloInstructionProto]:
        params = [i for i in self.comps[cid].instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number)

    def wrapped_single(self, ins: hlo_pb2.HloInstructionProto) -> hlo_pb2.HloInstructionProto | None:
        """The one instruction an async op wraps, when XLA's `<op>-start` sugar applies."""
        if ins.opcode not in _ASYNC or not ins.called_computation_ids:
            return None
        comp = self.comps.get(ins.called_computation_ids[0])
        if comp is None:
            return None
        body = [i for i in comp.instructions if i.opcode != "parameter"]
        if len(body) != 1 or body[0].id != comp.root_id:
            return None
        params = {i.id for i in comp.instructions if i.opcode == "parameter"}
        return body[0] if all(o in params for o in body[0].operand_ids) else None

    def root_of(self, ins: hlo_pb2.HloInstructionProto) -> bool:
        return self.comps[self.comp_of[ins.id]].root_id == ins.id


# --- printing -----------------------------------------------------------------------------
def _name(model: HloModel, iid: int) -> str:
    ins = model.instrs.get(iid)
    return "%" + (ins.name if ins is not None else f"<id {iid}>")


def _comp_name(model: HloModel, cid: int) -> str:
    c = model.comps.get(cid)
    return "%" + (c.name if c is not None else f"<computation {cid}>")


def operands_text(model: HloModel, ins: hlo_pb2.HloInstructionProto) -> str:
    if ins.opcode == "parameter":
        return str(ins.parameter_number)
    if ins.opcode == "constant":
        return literal_text(ins.literal, ins.shape) if ins.HasField("literal") else "{...}"
    parts = []
    for i, op in enumerate(ins.operand_ids):
        mark = f"/*index={i}*/" if i and i % 5 == 0 else ""
        parts.append(mark + _name(model, op))
    return ", ".join(parts)


def _own_attributes(model: HloModel, ins: hlo_pb2.HloInstructionProto) -> list[str]:
    """PrintExtraAttributesImpl of the instruction's class, in XLA's order."""
    op, a = ins.opcode, []
    if op in _CHANNEL_OPS and ins.channel_id > 0:
        a.append(f"channel_id={ins.channel_id}")
    if op in _COLLECTIVES:
        a.append("replica_groups=" + replica_groups_text(ins))
        if ins.constrain_layout:
            a.append("constrain_layout=true")
        if op in ("all-reduce", "all-reduce-start", "reduce-scatter", "all-gather", "all-gather-start") \
                and ins.use_global_device_ids:
            a.append("use_global_device_ids=true")
        if op in ("all-gather", "all-gather-start", "reduce-scatter", "all-to-all") and ins.dimensions:
            a.append("dimensions=" + _ints(ins.dimensions))
    if op in ("collective-permute", "collective-permute-start"):
        a.append("source_target_pairs={" + ",".join(f"{{{p.source},{p.target}}}" for p in ins.source_target_pairs) + "}")
    if op in ("send", "recv", "send-done", "recv-done") and ins.is_host_transfer:
        a.append("is_host_transfer=true")
    if op in _DIMENSIONS_OPS and op != "map":
        a.append("dimensions=" + _ints(ins.dimensions))
        if op == "sort" and ins.is_stable:
            a.append("is_stable=true")
    elif op == "slice":
        a.append("slice={" + ", ".join(
            f"[{d.start}:{d.limit}]" if d.stride == 1 else f"[{d.start}:{d.limit}:{d.stride}]"
            for d in ins.slice_dimensions) + "}")
    elif op == "dynamic-slice":
        a.append("dynamic_slice_sizes=" + _ints(ins.dynamic_slice_sizes))
    elif op == "get-tuple-element":
        a.append(f"index={ins.tuple_index}")
    elif op == "iota":
        a.append(f"iota_dimension={ins.dimensions[0] if ins.dimensions else 0}")
    elif op == "compare":
        a.append(f"direction={ins.comparison_direction}")
        operand = model.instrs.get(ins.operand_ids[0]) if ins.operand_ids else None
        default = _default_comparison_type(operand.shape.element_type) if operand is not None else ""
        if ins.comparison_type and ins.comparison_type != default:
            a.append(f"type={ins.comparison_type}")
    elif op == "fusion":
        a.append(f"kind={ins.fusion_kind}")
        if ins.output_operand_aliasing:
            a.append("output_to_operand_aliasing=" + _aliasing_text(ins))
    elif op in ("dot", "convolution"):
        if op == "convolution":
            if ins.window.dimensions:
                a.append("window={" + window_text(ins.window) + "}")
            a.append("dim_labels=" + conv_dim_labels(ins.convolution_dimension_numbers))
            if ins.feature_group_count not in (0, 1):
                a.append(f"feature_group_count={ins.feature_group_count}")
            if ins.batch_group_count not in (0, 1):
                a.append(f"batch_group_count={ins.batch_group_count}")
        else:
            d = ins.dot_dimension_numbers
            for label, vals in (("lhs_batch_dims", d.lhs_batch_dimensions),
                                ("lhs_contracting_dims", d.lhs_contracting_dimensions),
                                ("rhs_batch_dims", d.rhs_batch_dimensions),
                                ("rhs_contracting_dims", d.rhs_contracting_dimensions)):
                if vals or label.endswith("contracting_dims"):
                    a.append(f"{label}={_ints(vals)}")
        precisions = list(ins.precision_config.operand_precision)
        if any(p != 0 for p in precisions):
            a.append("operand_precision={" + ",".join(_PRECISION.get(p, str(p)) for p in precisions) + "}")
    elif op in ("reduce-window", "select-and-scatter"):
        a.append("window={" + window_text(ins.window) + "}")
    elif op == "pad":
        dims = ins.padding_config.dimensions
        interior = any(d.interior_padding for d in dims)
        a.append("padding=" + "x".join(
            f"{d.edge_padding_low}_{d.edge_padding_high}" + (f"_{d.interior_padding}" if interior else "")
            for d in dims))
    elif op == "reduce-precision":
        a.append(f"exponent_bits={ins.exponent_bits}")
        a.append(f"mantissa_bits={ins.mantissa_bits}")
    elif op == "gather":
        g = ins.gather_dimension_numbers
        a.append(f"offset_dims={_ints(g.offset_dims)}")
        a.append(f"collapsed_slice_dims={_ints(g.collapsed_slice_dims)}")
        a.append(f"start_index_map={_ints(g.start_index_map)}")
        if g.operand_batching_dims:
            a.append(f"operand_batching_dims={_ints(g.operand_batching_dims)}")
            a.append(f"start_indices_batching_dims={_ints(g.start_indices_batching_dims)}")
        a.append(f"index_vector_dim={g.index_vector_dim}")
        a.append(f"slice_sizes={_ints(ins.gather_slice_sizes)}")
        if ins.indices_are_sorted:
            a.append("indices_are_sorted=true")
    elif op == "scatter":
        s = ins.scatter_dimension_numbers
        a.append(f"update_window_dims={_ints(s.update_window_dims)}")
        a.append(f"inserted_window_dims={_ints(s.inserted_window_dims)}")
        a.append(f"scatter_dims_to_operand_dims={_ints(s.scatter_dims_to_operand_dims)}")
        if s.input_batching_dims:
            a.append(f"input_batching_dims={_ints(s.input_batching_dims)}")
            a.append(f"scatter_indices_batching_dims={_ints(s.scatter_indices_batching_dims)}")
        a.append(f"index_vector_dim={s.index_vector_dim}")
        if ins.indices_are_sorted:
            a.append("indices_are_sorted=true")
        if ins.unique_indices:
            a.append("unique_indices=true")
    elif op == "custom-call":  # convolution-like attributes first, as in cuDNN calls
        if ins.window.dimensions:
            a.append("window={" + window_text(ins.window) + "}")
        if ins.HasField("convolution_dimension_numbers"):
            a.append("dim_labels=" + conv_dim_labels(ins.convolution_dimension_numbers))
        if ins.feature_group_count > 1:
            a.append(f"feature_group_count={ins.feature_group_count}")
        if ins.batch_group_count > 1:
            a.append(f"batch_group_count={ins.batch_group_count}")
        a.append(f'custom_call_target="{_c_escape(ins.custom_call_target.encode())}"')
        if ins.constrain_layout:
            a.append("operand_layout_constraints={" + ", ".join(shape_str(s) for s in ins.operand_shapes_with_layout) + "}")
        if ins.custom_call_has_side_effect:
            a.append("custom_call_has_side_effect=true")
        if ins.output_operand_aliasing:
            a.append("output_to_operand_aliasing=" + _aliasing_text(ins))
        if ins.custom_call_schedule in _SCHEDULES:
            a.append(f"schedule={_SCHEDULES[ins.custom_call_schedule]}")
        if ins.custom_call_api_version in _API_VERSIONS:
            a.append(f"api_version={_API_VERSIONS[ins.custom_call_api_version]}")
    elif op == "topk":
        a.append(f"k={ins.k}")
        if ins.largest:
            a.append("largest=true")
    elif op in ("batch-norm-training", "batch-norm-inference", "batch-norm-grad"):
        a.append(f"epsilon={_f32(ins.epsilon)}")
        a.append(f"feature_index={ins.feature_index}")
    elif op == "copy-start" and ins.HasField("cross_program_prefetch_index"):
        a.append(f"cross_program_prefetch_index={ins.cross_program_prefetch_index}")
    elif op == "infeed" and ins.infeed_config:
        a.append(f'infeed_config="{_c_escape(ins.infeed_config)}"')
    elif op == "outfeed":
        a.append("outfeed_shape=" + shape_str(model.instrs[ins.operand_ids[0]].shape) if ins.operand_ids else "")
        if ins.outfeed_config:
            a.append(f'outfeed_config="{_c_escape(ins.outfeed_config)}"')
    return a


_SCHEDULES = {1: "SCHEDULE_LATEST", 2: "SCHEDULE_EARLIEST"}  # SCHEDULE_NONE is not printed
_API_VERSIONS = {2: "API_VERSION_STATUS_RETURNING", 3: "API_VERSION_STATUS_RETURNING_UNIFIED",
                 4: "API_VERSION_TYPED_FFI"}  # API_VERSION_ORIGINAL (the default) is not printed


def _aliasing_text(ins: hlo_pb2.HloInstructionProto) -> str:
    """`{{0}: (0, {})}`: output shape index -> (operand number, operand shape index)."""
    return "{" + ", ".join(
        f"{{{','.join(map(str, a.output_shape_index))}}}: ({a.operand_index}, {{{','.join(map(str, a.operand_shape_index))}}})"
        for a in ins.output_operand_aliasing) + "}"


def attributes(model: HloModel, ins: hlo_pb2.HloInstructionProto) -> list[str]:
    """HloInstruction::PrintExtraAttributes, then the backend config."""
    op, a = ins.opcode, []
    wrapped = model.wrapped_single(ins)
    a += _own_attributes(model, wrapped if wrapped is not None else ins)
    called = list(ins.called_computation_ids)
    if op == "while" and len(called) >= 2:
        # the proto lists body then condition (XLA's while order); the printer shows condition first
        a += [f"condition={_comp_name(model, called[1])}", f"body={_comp_name(model, called[0])}"]
    elif op == "select-and-scatter" and len(called) >= 2:
        a += [f"select={_comp_name(model, called[0])}", f"scatter={_comp_name(model, called[1])}"]
    elif op == "conditional":
        first = model.instrs.get(ins.operand_ids[0]) if ins.operand_ids else None
        if first is not None and type_name(first.shape.element_type) == "pred" and len(called) == 2:
            a += [f"true_computation={_comp_name(model, called[0])}",
                  f"false_computation={_comp_name(model, called[1])}"]
        else:
            a.append("branch_computations={" + ", ".join(_comp_name(model, c) for c in called) + "}")
    elif op in _TO_APPLY_OPS:
        if called:
            a.append(f"to_apply={_comp_name(model, called[0])}")
        if op == "call" and ins.is_composite:
            a.append("is_composite=true")
    elif op == "custom-call":
        if called:
            a.append("called_computations={" + ", ".join(_comp_name(model, c) for c in called) + "}")
    elif op in _ASYNC:
        if wrapped is None and op == "async-start":
            a.append("calls=" + ", ".join(_comp_name(model, c) for c in called))
        thread = ins.async_execution_thread
        if thread and thread != "main":
            a.append(f'async_execution_thread="{thread}"')
    elif called:
        a.append("calls=" + ", ".join(_comp_name(model, c) for c in called))
    if ins.HasField("sharding"):
        a.append("sharding=" + sharding_text(ins.sharding))
    if ins.frontend_attributes.map:
        a.append("frontend_attributes=" + frontend_attributes_text(ins.frontend_attributes))
    if ins.control_predecessor_ids:
        a.append("control-predecessors={" + ", ".join(_name(model, p) for p in ins.control_predecessor_ids) + "}")
    config = ins.backend_config
    if config:
        text = config.decode("utf-8", "replace")
        a.append("backend_config=" + (text if lexes_as_json_dict(text) else f'"{_c_escape(config)}"'))
    return a


def instruction_text(model: HloModel, ins: hlo_pb2.HloInstructionProto) -> str:
    wrapped = model.wrapped_single(ins)
    opcode = ins.opcode
    if wrapped is not None:
        opcode = wrapped.opcode + ins.opcode[len("async"):]
    head = f"%{ins.name} = {shape_str(ins.shape)} {opcode}({operands_text(model, ins)})"
    attrs = attributes(model, ins)
    return head + "".join(", " + x for x in attrs if x)


def computation_header(model: HloModel, cid: int) -> str:
    comp = model.comps[cid]
    params = ", ".join(f"{p.name}: {shape_str(p.shape, layout=False)}" for p in model.parameters(cid))
    root = model.instrs.get(comp.root_id)
    result = shape_str(root.shape, layout=False) if root is not None else "()"
    return f"%{comp.name} ({params}) -> {result} {{"


def computation_text(model: HloModel, cid: int) -> list[str]:
    comp = model.comps[cid]
    lines = [("ENTRY " if cid == model.proto.entry_computation_id else "") + computation_header(model, cid)]
    for iid in model.instruction_order(cid):
        ins = model.instrs[iid]
        lines.append("  " + ("ROOT " if iid == comp.root_id else "") + instruction_text(model, ins))
    lines.append("}")
    return lines


def _alias_text(module: hlo_pb2.HloModuleProto) -> str:
    kinds = {1: "may-alias", 2: "must-alias"}
    parts = []
    for e in module.input_output_alias.entries:
        parts.append(f"{{{','.join(map(str, e.output_shape_index))}}}: ({e.parameter_number}, "
                     f"{{{','.join(map(str, e.parameter_shape_index))}}}, {kinds.get(e.kind, 'may-alias')})")
    return ", ".join(parts)


def module_header(module: hlo_pb2.HloModuleProto) -> str:
    text = f"HloModule {module.name}"
    if module.HasField("schedule"):
        text += ", is_scheduled=true"
    alias = _alias_text(module)
    if alias:
        text += ", input_output_alias={ " + alias + " }"
    if module.HasField("host_program_shape"):
        ps = module.host_program_shape
        params = []
        for i, p in enumerate(ps.parameters):
            params.append((f"/*index={i}*/" if i and i % 5 == 0 else "") + shape_str(p))
        text += ", entry_computation_layout={(" + ", ".join(params) + ")->" + shape_str(ps.result) + "}"
    if module.frontend_attributes.map:
        text += ", frontend_attributes=" + frontend_attributes_text(module.frontend_attributes)
    return text


def module_text(hlo: hlo_pb2.HloProto | hlo_pb2.HloModuleProto, model: HloModel | None = None) -> str:
    """XProf's graph viewer `long_txt` of one module (HloModule::ToString)."""
    model = model or HloModel.build(hlo)
    out = [module_header(model.proto), ""]
    for cid in model.computation_post_order():
        if model.is_async_computation(cid):
            continue
        out += computation_text(model, cid)
        out.append("")
    return "\n".join(out) + "\n"


def computation_spans(model: HloModel) -> list[tuple[str, int, int]]:
    """(computation name, first line, last line) of each computation in `module_text`, for folding."""
    spans, line = [], 2
    for cid in model.computation_post_order():
        if model.is_async_computation(cid):
            continue
        n = len(model.comps[cid].instructions) + 2
        spans.append((model.comps[cid].name, line, line + n - 1))
        line += n + 1
    return spans


def backend_config_json(ins: hlo_pb2.HloInstructionProto) -> object:
    try:
        return json.loads(ins.backend_config) if ins.backend_config else None
    except ValueError:
        return ins.backend_config.decode("utf-8", "replace")


