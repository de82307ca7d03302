"""XLA shapes (`xla.ShapeProto`) as text and bytes, the way XLA itself prints and sizes them.

`shape_text` follows ShapeUtil::HumanStringWithLayout ("f32[784,256]{1,0}",
"f32[8,128]{1,0:T(8,128)S(1)}", "(f32[], s32[2]{0})"); `unpadded_bytes` follows
ShapeUtil::ByteSizeOf on the shape with its default (untiled) layout and 8-byte pointers,
which is how XProf's memory viewer gets a buffer's size without layout padding.
"""
from __future__ import annotations

from tputui.proto import xla_data_pb2 as xd

_PT = xd.PrimitiveType

# Lower-case type names as XLA prints them (primitive_util::LowercasePrimitiveTypeName).
_TYPE_NAMES = {
    _PT.Value(name): name.lower() for name in _PT.keys()
}
_TYPE_NAMES[_PT.Value("PRIMITIVE_TYPE_INVALID")] = "invalid"
_TYPE_NAMES[_PT.Value("OPAQUE_TYPE")] = "opaque"

# Bits per element (primitive_util::BitWidth); byte sizes round sub-byte types up to 1.
_BITS = {
    "PRED": 8, "S1": 1, "S2": 2, "S4": 4, "S8": 8, "S16": 16, "S32": 32, "S64": 64,
    "U1": 1, "U2": 2, "U4": 4, "U8": 8, "U16": 16, "U32": 32, "U64": 64,
    "F16": 16, "F32": 32, "BF16": 16, "F64": 64,
    "F8E5M2": 8, "F8E4M3": 8, "F8E4M3FN": 8, "F8E4M3B11FNUZ": 8, "F8E3M4": 8,
    "F8E5M2FNUZ": 8, "F8E4M3FNUZ": 8, "F4E2M1FN": 4, "F8E8M0FNU": 8,
    "C64": 64, "C128": 128,
}
_ELEMENT_BITS = {_PT.Value(k): v for k, v in _BITS.items()}
_INTEGRAL = {_PT.Value(k) for k in _BITS if k[0] in "SU"}

TUPLE, OPAQUE, TOKEN = _PT.Value("TUPLE"), _PT.Value("OPAQUE_TYPE"), _PT.Value("TOKEN")
POINTER_BYTES = 8


def type_name(element_type: int) -> str:
    return _TYPE_NAMES.get(element_type, f"type{element_type}")


def _layout_text(layout: xd.LayoutProto) -> str:
    parts = ""
    if layout.tiles:
        parts += "T" + "".join(
            "(" + ",".join("*" if d == -9223372036854775808 else str(d) for d in t.dimensions) + ")"
            for t in layout.tiles)
    if layout.tail_padding_alignment_in_elements not in (0, 1):
        parts += f"L({layout.tail_padding_alignment_in_elements})"
    for mark, pt in (("#", layout.index_primitive_type), ("*", layout.pointer_primitive_type)):
        if pt:
            parts += f"{mark}({type_name(pt) if pt in _INTEGRAL else 'invalid'})"
    if layout.element_size_in_bits:
        parts += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        parts += f"S({layout.memory_space})"
    if layout.split_configs:
        parts += "SC" + "".join(
            f"({s.dimension}:{','.join(map(str, s.split_indices))})" for s in layout.split_configs)
    if layout.HasField("physical_shape"):
        parts += f"P({shape_text(layout.physical_shape)})"
    if layout.dynamic_shape_metadata_prefix_bytes > 0:
        parts += f"M({layout.dynamic_shape_metadata_prefix_bytes})"
    head = ",".join(map(str, layout.minor_to_major))
    return "{" + head + (":" + parts if parts else "") + "}"


def layout_text(layout: xd.LayoutProto) -> str:
    """XLA's text for one layout, e.g. "{1,0:T(8,128)S(1)}" (scalars print "{:T(128)}")."""
    return _layout_text(layout)


def shape_text(shape: xd.ShapeProto, with_layout: bool = True) -> str:
    """XLA's human string for a shape (with its layout, as the memory viewer shows it)."""
    if shape.element_type == TUPLE:
        return "(" + ", ".join(shape_text(s, with_layout) for s in shape.tuple_shapes) + ")"
    dyn = list(shape.is_dynamic_dimension)
    dims = ",".join(
        ("<=" if i < len(dyn) and dyn[i] else "") + str(d) for i, d in enumerate(shape.dimensions))
    text = f"{type_name(shape.element_type)}[{dims}]"
    # XLA prints no "{}" layout for scalars (and none for tokens / opaque values).
    if with_layout and shape.HasField("layout") and len(shape.dimensions) > 0:
        text += _layout_text(shape.layout)
    return text


def element_count(shape: xd.ShapeProto) -> int:
    n = 1
    for d in shape.dimensions:
        n *= d
    return n


def unpadded_bytes(shape: xd.ShapeProto) -> int:
    """ByteSizeOf(shape) with a default layout: no tiling padding; tuples count their pointers."""
    if shape.element_type == TUPLE:
        return POINTER_BYTES * len(shape.tuple_shapes)
    if shape.element_type == TOKEN:
        return 0
    if shape.element_type == OPAQUE:
        return POINTER_BYTES
    bits = _ELEMENT_BITS.get(shape.element_type)
    if bits is None:
        return 0
    return element_count(shape) * max(1, bits // 8) if bits >= 8 else element_count(shape)


def subshape(shape: xd.ShapeProto, shape_index) -> xd.ShapeProto:
    """The subshape a logical buffer is defined at (XProf resolves only the last index)."""
    if len(shape_index):
        i = shape_index[-1]
        if i < len(shape.tuple_shapes):
            return shape.tuple_shapes[i]
    return shape
