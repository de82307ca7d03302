"""The C decoder on two threads gives exactly the one-thread decode, errors included (and its
line count, riegeli's first pass, the one-thread count).

decode_planes(buf, ranges, 2) cuts the selected bytes in two near their middle (inside a plane,
between two of its fields, when the middle falls there), decodes the halves on two threads and
joins their columns. Checked column by column, byte for byte, against threads=1: on every
fixture profile (all planes, and plane subsets so the cut lands in different planes), on planes
built so a cut splits a plane whose id and name come before, after or on both sides of the cut,
and on the seeded mutation corpus of tests/test_wire_semantics.py (same ValueError text when one
thread refuses). Then wire.decode with the two-thread threshold at 0 must still agree with
protobuf on that corpus. Tolerance: none.
"""
from __future__ import annotations

import pytest
from conftest import PROFILES
from helpers.xspace_corpus import corpus, varint
from test_wire_semantics import outcome

from tputui.data import _wire, wire
from tputui.data.raw import decode_with_protobuf


def columns(data: bytes, ranges, threads: int):
    try:
        return {k: bytes(v) for k, v in _wire.decode_planes(data, ranges, threads).items()}
    except ValueError as e:
        return str(e)


def counts(data: bytes, ranges, threads: int):
    try:
        return _wire.count_lines(data, ranges, threads)
    except ValueError as e:
        return str(e)


def same_both_ways(data: bytes, ranges) -> object:
    """The decode and the line count (riegeli's first pass) alike on one and two threads."""
    one = columns(data, ranges, 1)
    assert columns(data, ranges, 2) == one
    assert counts(data, ranges, 2) == counts(data, ranges, 1)
    return one


def tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def ld(field: int, body: bytes) -> bytes:
    return tag(field, 2) + varint(len(body)) + body


def line(i: int, events: int) -> bytes:
    evs = b"".join(ld(4, tag(1, 0) + varint(j % 3 + 1) + tag(2, 0) + varint(j) + ld(4, tag(1, 0) + varint(1)
                                                                                  + tag(4, 0) + varint(j)))
                   for j in range(events))
    return ld(3, tag(1, 0) + varint(i) + ld(2, f"line{i}".encode()) + evs)


def metadata(key: int) -> bytes:
    return ld(4, tag(1, 0) + varint(key) + ld(2, tag(1, 0) + varint(key) + ld(2, f"op{key}".encode())
                                              + tag(6, 0) + varint(key + 1)))


@pytest.mark.parametrize("path", sorted(PROFILES.rglob("*.xplane.pb")), ids=lambda p: p.parent.name + "/" + p.name)
def test_fixture_profiles_decode_the_same_on_two_threads(path):
    data = path.read_bytes()
    planes, *_ = _wire.scan(data)
    ranges = [(off, n) for off, n, _ in planes]
    assert isinstance(same_both_ways(data, ranges), dict)
    for k in range(len(ranges)):  # the cut moves from plane to plane
        same_both_ways(data, ranges[k:])
        same_both_ways(data, ranges[:k + 1])
    same_both_ways(data, ranges[::-1])
    same_both_ways(data, [])


@pytest.mark.parametrize("where", ["id and name first", "id and name last", "name first, id last",
                                   "given on both sides", "empty planes around"])
def test_a_plane_cut_in_two_keeps_its_id_name_and_rows(where):
    body = b"".join(line(i, 40) + metadata(i) for i in range(30)) + ld(6, tag(1, 0) + varint(7) + tag(4, 0) + varint(9))
    head = {"id and name first": tag(1, 0) + varint(5) + ld(2, b"/host:CPU"),
            "id and name last": b"", "name first, id last": ld(2, b"/host:CPU"),
            "given on both sides": tag(1, 0) + varint(4) + ld(2, b"first"),
            "empty planes around": tag(1, 0) + varint(5)}[where]
    tail = {"id and name first": b"", "id and name last": tag(1, 0) + varint(5) + ld(2, b"/host:CPU"),
            "name first, id last": tag(1, 0) + varint(5),
            "given on both sides": tag(1, 0) + varint(6) + ld(2, b"/host:CPU"),
            "empty planes around": b""}[where]
    plane = ld(1, head + body + tail)
    data = (ld(1, b"") + plane + ld(1, b"")) if where == "empty planes around" else plane
    planes, *_ = _wire.scan(data)
    got = same_both_ways(data, [(off, n) for off, n, _ in planes])
    assert isinstance(got, dict)
    raw = wire.decode(data)
    named = [i for i, name in enumerate(raw.plane_name) if name == "/host:CPU"]
    if where != "empty planes around":
        assert named == [len(raw.plane_name) - 1] and int(raw.plane_id[named[0]]) == (6 if "both" in where else 5)
    assert len(raw.line_id) == 30 and len(raw.event_line) == 30 * 40 and len(raw.em_id) == 30


def test_the_mutation_corpus_decodes_the_same_on_two_threads():
    checked = 0
    for data in corpus(PROFILES, 1500, seed=31):
        try:
            planes, *_ = _wire.scan(data)
        except ValueError:
            continue
        same_both_ways(data, [(off, n) for off, n, _ in planes])
        checked += 1
    assert checked > 500


def test_wire_decode_on_two_threads_agrees_with_protobuf(monkeypatch):
    monkeypatch.setattr(wire, "TWO_THREADS_FROM_BYTES", 0)
    monkeypatch.setattr(wire, "_one_thread", [False])
    mismatches = 0
    for data in corpus(PROFILES, 600, seed=32):
        mismatches += outcome(wire.decode, data) != outcome(decode_with_protobuf, data)
    assert mismatches == 0


def test_one_thread_inside_a_map_lane():
    assert not wire._one_thread[0] or len(__import__("os").sched_getaffinity(0)) < 2
    with wire.one_thread():
        assert wire._one_thread[0]
    assert not wire._one_thread[0] or len(__import__("os").sched_getaffinity(0)) < 2
