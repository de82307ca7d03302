"""Reading a few fields of a small serialized protobuf message without a full parse.

For messages tucked inside stats or replies (CoreDetails, the header of an HloProto, the top
level of a ProfileResponse) where a full parse would copy megabytes or need a schema we do
not compile. Values: an int for varints, the raw bytes (a slice of the input) otherwise.
"""
from __future__ import annotations

from collections.abc import Iterator


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def varint(buf, i: int) -> tuple[int, int]:
    """(value, index after it) of the varint at buf[i]."""
    value = shift = 0
    while True:
        try:
            b = buf[i]
        except IndexError:
            raise WireError("truncated varint") from None
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift >= 70:
            raise WireError("varint too long")


def encode_varint(value: int) -> bytes:
    """The varint bytes of a non-negative int (the inverse of `varint`)."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(buf) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for every field, in wire order."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            length, i = varint(buf, i)
            value, i = buf[i:i + length], i + length
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise WireError(f"wire type {wire}")
        if i > n:
            raise WireError("truncated message")
        yield number, wire, value


def varint_fields(buf) -> dict[int, int]:
    """The varint fields of a message (the last value where a number repeats)."""
    return {number: value for number, wire, value in fields(buf) if wire == 0 and isinstance(value, int)}


def first_bytes_field(buf, number: int):
    """The first length-delimited field `number` (None if absent or unreadable)."""
    try:
        for num, wire, value in fields(buf):
            if num == number and wire == 2:
                return value
    except WireError:
        return None
    return None
