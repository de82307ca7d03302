"""One decoder semantics: the C fast path accepts exactly what protobuf's parser (upb, our
reference path) accepts, with the same content.

The oracle is protobuf itself (`decode_with_protobuf`). First the cases the reliability audit
found, one by one; then a seeded corpus of structure-aware mutants of small XSpaces cut from
the fixtures (tests/helpers/xspace_corpus.py), where both paths must accept or reject alike
and give the same columns when they accept. Tolerance: none (exact equality).
"""
from __future__ import annotations

import collections

import pytest
from conftest import PROFILES
from helpers.xspace_corpus import corpus, varint

from tputui.data import _wire, wire
from tputui.data.raw import KIND_BYTES, KIND_STR, RawXSpace, decode_with_protobuf


def tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def ld(field: int, body: bytes) -> bytes:
    return tag(field, 2) + varint(len(body)) + body


def entry(key: int, *values: bytes, extra: bytes = b"") -> bytes:
    return ld(4, tag(1, 0) + varint(key) + b"".join(ld(2, v) for v in values) + extra)


def outcome(decode, data: bytes):
    try:
        return canonical(decode(data))
    except ValueError:
        return "rejected"


def canonical(raw: RawXSpace):
    """Everything a decoder says about a file, in a form where map order does not matter."""
    def stats(cols, owner: int) -> list:
        rows = [i for i in range(len(cols.owner)) if cols.owner[i] == owner]
        return [(int(cols.stat[i]), int(cols.kind[i]), value(cols, i)) for i in rows]

    def value(cols, i):
        kind, v = int(cols.kind[i]), int(cols.value[i])
        return raw.strings[v] if kind == KIND_STR else raw.blobs[v] if kind == KIND_BYTES else v

    columns = {name: getattr(raw, name).tolist() for name in (
        "plane_id", "line_plane", "line_id", "line_display_id", "line_timestamp_ns", "line_duration_ps",
        "line_first_event", "line_num_events", "event_line", "event_metadata_id", "event_offset_ps",
        "event_num_occurrences", "event_duration_ps")}
    em = sorted((int(raw.em_plane[r]), int(raw.em_id[r]), raw.em_name[r], raw.em_display_name[r],
                 raw.blobs[raw.em_metadata[r]] if raw.em_metadata[r] >= 0 else b"",
                 sorted(int(c) for o, c in zip(raw.em_child_owner, raw.em_child_id) if o == r),
                 stats(raw.metadata_stats, r)) for r in range(len(raw.em_id)))
    sm = sorted(zip(raw.sm_plane.tolist(), raw.sm_id.tolist(), raw.sm_name, raw.sm_description))
    return (columns, raw.plane_name, raw.line_name, raw.line_display_name, raw.hostnames, raw.errors, raw.warnings,
            em, sm, [stats(raw.event_stats, e) for e in range(raw.num_events)],
            [stats(raw.plane_stats, p) for p in range(len(raw.plane_id))])


def agree(data: bytes):
    fast, ref = outcome(wire.decode, data), outcome(decode_with_protobuf, data)
    assert fast == ref
    return fast


PLANE = ld(2, b"/device:TPU:0")
CASES = {
    # Field 2^32 + 2 was truncated to field 2 (the plane name); protobuf refuses keys over 32 bits.
    "field number over 32 bits": ld(1, varint((2**32 + 2) << 3 | 2) + varint(3) + b"bad" + PLANE),
    "5-byte key (allowed)": ld(1, varint(2 << 3 | 2, pad_to=5) + varint(3) + b"abc"),
    "6-byte key": ld(1, varint(2 << 3 | 2, pad_to=6) + varint(3) + b"abc"),
    "6-byte length": ld(1, tag(2, 2) + varint(3, pad_to=6) + b"abc"),
    # Unknown groups (wire types 3/4) were rejected by C; protobuf skips them.
    "unknown group": ld(1, PLANE + tag(9, 3) + tag(1, 0) + varint(7) + ld(2, b"x") + tag(9, 4)),
    "nested groups at the limit": tag(9, 3) * 100 + tag(9, 4) * 100 + ld(4, b"h"),
    "nested groups over the limit": tag(9, 3) * 101 + tag(9, 4) * 101 + ld(4, b"h"),
    "group end that does not match": tag(9, 3) + tag(10, 4),
    "end group outside a group": ld(1, tag(9, 4)),
    # Found by scripts/fuzz_wire.py: inside an unknown group protobuf lets field number 0 pass.
    "field 0 inside an unknown group": ld(1, PLANE + tag(8, 3) + b"\x01" + b"12345678" + tag(0, 0) + b"\x05"
                                          + tag(0, 3) + tag(0, 4) + tag(8, 4)),
    "field 0 ending a group of field 9": tag(9, 3) + tag(0, 4),
    "unterminated group": tag(9, 3) + ld(4, b"h"),
    # Duplicate map keys: protobuf keeps the last entry; C kept every entry.
    "duplicate map keys": ld(1, PLANE + entry(5, ld(2, b"first") + ld(5, tag(1, 0) + varint(1)) + tag(6, 0) + varint(9))
                              + entry(5, ld(2, b"last")) + ld(5, tag(1, 0) + varint(1) + ld(2, ld(2, b"s1")))
                              + ld(5, tag(1, 0) + varint(1) + ld(2, ld(2, b"s2")))),
    # A map entry with an unknown field: upb drops the entry (C kept it), but still checks its value.
    "map entry with an unknown field": ld(1, PLANE + entry(5, ld(2, b"gone"), extra=tag(7, 0) + varint(1))
                                          + entry(6, ld(2, b"kept"))),
    "dropped entry still checked": ld(1, entry(5, ld(2, b"\xff"), extra=tag(7, 0) + varint(1))),
    "map key with another wire type": ld(1, ld(4, ld(1, b"") + ld(2, ld(2, b"x")))),
    # A value given twice in one entry is merged by protobuf (C kept only the last one).
    "map value given twice": ld(1, entry(5, ld(2, b"a") + ld(5, tag(1, 0) + varint(3)) + tag(6, 0) + varint(1),
                                         ld(4, b"d") + ld(5, tag(1, 0) + varint(4)) + tag(6, 0) + varint(2))),
    # Invalid UTF-8 in string fields: protobuf rejects, C replaced it with U+FFFD.
    "invalid UTF-8 plane name": ld(1, ld(2, b"/device:\xff")),
    "surrogate in a line name": ld(1, ld(3, ld(2, b"\xed\xa0\x80"))),
    "invalid UTF-8 hostname": ld(4, b"\xc0\xaf"),
    "invalid UTF-8 str stat": ld(1, ld(6, tag(1, 0) + varint(1) + ld(5, b"\xf4\x90\x80\x80"))),
    "invalid UTF-8 in bytes fields is fine": ld(1, entry(5, ld(3, b"\xff\xfe") + ld(2, b"ok"))
                                               + ld(6, ld(6, b"\xff"))),
    "non-ASCII UTF-8": ld(1, ld(2, "/device:é€😀".encode()) + ld(3, ld(2, "line\u2028".encode()))),
    "known field with another wire type": ld(1, tag(1, 2) + varint(1) + b"x" + tag(2, 0) + varint(5)),
    "field number 0": ld(1, tag(0, 0) + varint(1)),
    "packed and unpacked child ids": ld(1, entry(5, ld(6, varint(1) + varint(2)) + tag(6, 0) + varint(3))),
    "oneof: the last value wins": ld(1, ld(3, ld(4, tag(2, 0) + varint(5) + tag(5, 0) + varint(7)))
                                     + ld(6, ld(5, b"s") + tag(3, 0) + varint(9))),
    "10-byte varint": ld(1, tag(1, 0) + b"\xff" * 9 + b"\x7f"),
    "11-byte varint": ld(1, tag(1, 0) + b"\xff" * 10 + b"\x01"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_case_the_audit_found(name):
    got = agree(CASES[name])
    expect_rejected = name in {"field 0 ending a group of field 9",
                               "field number over 32 bits", "6-byte key", "6-byte length", "nested groups over the limit",
                               "group end that does not match", "end group outside a group", "unterminated group",
                               "dropped entry still checked", "invalid UTF-8 plane name", "surrogate in a line name",
                               "invalid UTF-8 hostname", "invalid UTF-8 str stat", "field number 0", "11-byte varint"}
    assert (got == "rejected") == expect_rejected


def test_map_semantics_in_detail():
    em = {row[1]: row for row in agree(CASES["duplicate map keys"])[7]}
    assert em[5][2] == "last" and em[5][5] == [] and em[5][6] == []  # the first entry's children / stats went
    sm = agree(CASES["duplicate map keys"])[8]
    assert [row[2] for row in sm] == ["s2"]
    assert [row[2] for row in agree(CASES["map entry with an unknown field"])[7]] == ["kept"]
    (merged,) = agree(CASES["map value given twice"])[7]
    assert merged[2:4] == ("a", "d") and merged[5] == [1, 2] and [s[0] for s in merged[6]] == [3, 4]


def test_a_plane_range_past_the_buffer_is_refused_without_overflow():
    """`off + len` overflowed before the range check (a segfault); no file reaches this, ranges
    come from scan, but the check must hold for any caller."""
    data = next(PROFILES.rglob("*.xplane.pb")).read_bytes()
    for bad in [(2**62, 2**62), (2**63 - 1, 1), (1, 2**63 - 1), (len(data), 1), (-1, 1)]:
        with pytest.raises(ValueError, match="plane range outside the buffer"):
            _wire.decode_planes(data, [bad])


def test_mutation_corpus_both_decoders_agree():
    """3,000 seeded mutants: accept / reject alike, identical content when accepted."""
    seen = collections.Counter()
    mismatches = []
    for i, data in enumerate(corpus(PROFILES, 3000, seed=18)):
        fast, ref = outcome(wire.decode, data), outcome(decode_with_protobuf, data)
        seen["rejected" if ref == "rejected" else "accepted"] += 1
        if fast != ref:
            mismatches.append((i, data[:64].hex(), "C rejects" if fast == "rejected" else
                               "C accepts" if ref == "rejected" else "content differs"))
    assert mismatches == []
    assert seen["accepted"] > 500 and seen["rejected"] > 500  # both sides of the contract are exercised
