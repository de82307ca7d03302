"""The small protobuf field reader agrees with protobuf's own encoder."""
from __future__ import annotations

import pytest

from tputui.data import pbwire
from tputui.proto import xplane_pb2


def test_fields_of_an_encoded_message():
    md = xplane_pb2.XEventMetadata(id=300, name="dot.1", display_name="dot", child_id=[1, 2 ** 40])
    got = list(pbwire.fields(md.SerializeToString()))
    assert (1, 0, 300) in got and (2, 2, b"dot.1") in got and (4, 2, b"dot") in got
    assert pbwire.varint_fields(md.SerializeToString())[1] == 300
    assert pbwire.first_bytes_field(md.SerializeToString(), 4) == b"dot"
    assert pbwire.first_bytes_field(md.SerializeToString(), 9) is None


def test_negative_int64_is_a_ten_byte_varint():
    line = xplane_pb2.XLine(id=-5)
    assert pbwire.varint_fields(line.SerializeToString())[1] == (1 << 64) - 5


@pytest.mark.parametrize("bad", [b"\x08", b"\x12\x05ab", b"\x0f", b"\x08" + b"\xff" * 11])
def test_malformed_input_is_a_wire_error(bad):
    with pytest.raises(pbwire.WireError):
        list(pbwire.fields(bad))
    assert pbwire.first_bytes_field(bad, 2) is None
