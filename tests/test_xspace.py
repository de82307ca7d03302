"""The decoder against protobuf's own parse, on every real profile in tests/fixtures.

The fast C decoder and the protobuf reference path must give the same columns exactly:
counts per line, names, times, and every stat value (compared after resolving each stat to
(owner, name, value), because map order in protobuf is not defined).
"""
from __future__ import annotations

import collections

import numpy as np
import pytest
from conftest import PROFILES

from tputui.data import wire
from tputui.data.raw import decode_with_protobuf
from tputui.data.xspace import DecodeError, XSpaceFrame, decode, decode_raw
from tputui.proto import xplane_pb2

FILES = sorted(PROFILES.rglob("*.xplane.pb"))
IDS = [f"{f.relative_to(PROFILES).parts[0]}/{f.parent.name}" for f in FILES]


def stat_records(frame: XSpaceFrame, owner: str) -> collections.Counter:
    """(owner key, stat name, python value) for every stat; owner keyed by names, not rows."""
    cols = getattr(frame.raw, f"{owner}_stats")
    out = collections.Counter()
    r = frame.raw
    stat_rows, _ = frame._ref_rows[owner]
    text = frame._text_ids(owner, np.arange(len(cols.owner)))
    for i in range(len(cols.owner)):
        o = int(cols.owner[i])
        if owner == "metadata":
            key = (int(r.em_plane[o]), int(r.em_id[o]))
        else:
            key = o
        name = r.sm_name[stat_rows[i]]
        value = frame._python_value(int(cols.kind[i]), int(cols.value[i]), int(text[i]))
        out[(key, name, value)] += 1
    return out


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_fast_decoder_equals_protobuf(path):
    data = path.read_bytes()
    fast, ref = XSpaceFrame(wire.decode(data)), XSpaceFrame(decode_with_protobuf(data))
    a, b = fast.raw, ref.raw
    assert a.num_events > 0
    for name in ("plane_id", "line_plane", "line_id", "line_display_id", "line_timestamp_ns", "line_duration_ps",
                 "line_first_event", "line_num_events", "event_line", "event_metadata_id", "event_offset_ps",
                 "event_num_occurrences", "event_duration_ps"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.plane_name == b.plane_name and a.line_name == b.line_name
    assert a.line_display_name == b.line_display_name
    assert (a.hostnames, a.errors, a.warnings) == (b.hostnames, b.errors, b.warnings)
    # Metadata maps: same entries (order may differ).
    em = lambda r: sorted(zip(r.em_plane.tolist(), r.em_id.tolist(), r.em_name, r.em_display_name))
    sm = lambda r: sorted(zip(r.sm_plane.tolist(), r.sm_id.tolist(), r.sm_name, r.sm_description))
    assert em(a) == em(b)
    assert sm(a) == sm(b)
    # Event names resolve identically, event by event.
    assert fast.metadata_names(fast.events["metadata"].to_numpy()).to_list() == \
        ref.metadata_names(ref.events["metadata"].to_numpy()).to_list()
    for owner in ("event", "metadata", "plane"):
        assert stat_records(fast, owner) == stat_records(ref, owner), owner


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_counts_per_line_match_protobuf_message(path):
    """Straight from protobuf's message objects: events per line and the line names."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    frame = decode(path.read_bytes())
    expected = [(p.name, l.name, len(l.events)) for p in space.planes for l in p.lines]
    got = [(frame.raw.plane_name[p], n, c) for p, n, c in
           zip(frame.raw.line_plane.tolist(), frame.raw.line_name, frame.raw.line_num_events.tolist())]
    assert got == expected
    # Event start times: line.timestamp_ns * 1000 + offset_ps.
    starts = [l.timestamp_ns * 1000 + e.offset_ps for p in space.planes for l in p.lines for e in l.events]
    assert frame.start_ps.tolist() == starts


def test_stat_values_are_typed_and_refs_resolved():
    frame = decode((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb").__next__().read_bytes())
    tpu0 = frame.plane_index("/device:TPU:0")
    stats = frame.plane_stat_map(tpu0)
    assert stats["device_type_string"] == "TPU v6 Lite"
    assert stats["peak_teraflops_per_second"] == pytest.approx(918.0)
    cat = frame.stat_values("metadata", "hlo_category")
    assert cat.height > 0 and (cat["text_id"] >= 0).all()
    assert {"loop fusion", "all-reduce", "copy-start"} <= {frame.text(t) for t in cat["text_id"].to_list()}


@pytest.mark.parametrize("kind,column", [("int", "int"), ("float", "float"), ("text", "text_id"), ("any", None)])
def test_stat_arrays_equal_stat_values(kind, column):
    frame = decode((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb").__next__().read_bytes())
    checked = 0
    for name in sorted(set(frame.raw.sm_name)):
        owners, vals = frame.stat_arrays("event", name, kind)
        sv = frame.stat_values("event", name).sort("owner", maintain_order=True)
        if column is None:  # "any": text ids for text values, ints for ints, 0 otherwise
            want = np.where(sv["text_id"].to_numpy() >= 0, sv["text_id"].to_numpy(), sv["int"].fill_null(0).to_numpy())
        else:
            sv = sv.filter(sv[column].is_not_null() & ((sv[column] >= 0) if kind == "text" else True))
            want = sv[column].to_numpy()
        np.testing.assert_array_equal(owners, sv["owner"].to_numpy())
        np.testing.assert_array_equal(vals, want)
        assert (np.diff(owners) >= 0).all()
        checked += len(owners)
    assert checked > 0


def test_plane_selection_decodes_only_those_planes():
    data = next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes()
    full = decode(data)
    tpu = decode(data, planes=["/device:TPU:"])
    assert tpu.raw.plane_name == [n for n in full.raw.plane_name if n.startswith("/device:TPU:")]
    tpu_planes = [i for i, n in enumerate(full.raw.plane_name) if n.startswith("/device:TPU:")]
    assert tpu.num_events == full.events.filter(full.events["plane"].is_in(tpu_planes)).height == 2317 + 3 * 1712


@pytest.mark.parametrize("cut", [1, 100, 5000, -7])
def test_truncated_file_is_a_decode_error(cut):
    data = next((PROFILES / "jax_mlp").rglob("*.xplane.pb")).read_bytes()
    with pytest.raises(DecodeError, match="truncated or corrupt|not a valid"):
        decode_raw(data[:cut])


def test_not_an_xspace_is_a_decode_error():
    with pytest.raises(DecodeError):
        decode_raw(b"\x0b\x0c\x0d" * 10)
    with pytest.raises(DecodeError):
        decode_raw(b'{"traceEvents": []}')


def test_bytes_stats_are_reachable_as_blobs():
    frame = decode(next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes())
    mab = frame.stat_values("metadata", "memory_access_breakdown")
    assert mab.height > 0 and (mab["blob_id"] >= 0).all() and (mab["text_id"] == -1).all()
    first = mab.row(0, named=True)
    assert frame.blob(first["blob_id"]) == frame.metadata_stat_map(first["owner"])["memory_access_breakdown"]
    core = frame.stat_values("plane", "core_details")
    assert frame.blob(core["blob_id"][0]) == frame.plane_stat_map(int(core["owner"][0]))["core_details"]


def test_a_dropped_frame_is_freed_at_once():
    """No reference cycle keeps a frame alive: dropping the last reference frees it without the
    garbage collector (multi-host runs drop each host's frame after its map)."""
    import gc
    import weakref

    path = next(PROFILES.rglob("t1v-tpu-host.xplane.pb"))
    frame = XSpaceFrame(wire.decode(path.read_bytes()))
    frame.stat_values("event", "run_id")  # fills the lazy per-owner tables
    gone = weakref.ref(frame)
    gc.disable()
    try:
        del frame
        assert gone() is None
    finally:
        gc.enable()


def test_big_columns_in_their_own_mappings_decode_count_and_free():
    """Columns past 1 MB grow in mappings of their own (_wire.c col_reserve): a decode and a line
    count that big give the right rows, and their buffers are released (munmap) when dropped."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "op"
    for i in range(30_000):  # 30k lines x 48 bytes of counts and 60k events: past 1 MB each
        line = plane.lines.add(id=i, timestamp_ns=i)
        line.events.add(metadata_id=1, offset_ps=1, duration_ps=2)
        line.events.add(metadata_id=1, offset_ps=5, duration_ps=2)
    data = space.SerializeToString()
    c_wire = pytest.importorskip("tputui.data._wire")
    planes = c_wire.scan(data)[0]
    counts = np.frombuffer(c_wire.count_lines(data, [(o, n) for o, n, _ in planes]), np.int64).reshape(-1, 6)
    assert len(counts) == 30_000 and (counts[:, 4] == 2).all()
    frame = decode(data)
    assert frame.num_events == 60_000 and int(frame.start_ps[-1]) == 29_999 * 1000 + 5
    del frame, counts


def test_event_planes_repeat_the_line_planes_and_fall_back_when_not_grouped():
    """Each event's plane comes from its line's plane repeated by the event counts; a raw whose
    lines do not tile the events (a hand-edited cache entry) takes the per-event lookup instead."""
    import dataclasses

    from tputui.data.xspace import _event_planes

    raw = decode_raw(next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes())
    assert len(set(raw.line_plane.tolist())) > 1
    assert np.array_equal(_event_planes(raw), raw.line_plane[raw.event_line])
    lines = len(raw.line_plane)
    moved = dataclasses.replace(raw, line_first_event=raw.line_first_event[::-1].copy(),
                                line_num_events=raw.line_num_events[::-1].copy(),
                                event_line=(lines - 1 - raw.event_line).astype(np.int32))
    got = _event_planes(moved)
    assert got.dtype == np.int32 and np.array_equal(got, raw.line_plane[moved.event_line])


def test_str_stat_texts_are_kept_once_in_first_use_order():
    """The decoder interns str stat values (the C side makes and looks up each text): every text
    once in `strings`, numbered in the order the event, metadata and plane stats first use them."""
    from tputui.data.raw import KIND_STR

    raw = wire.decode(next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes())
    codes = np.concatenate([s.value[s.kind == KIND_STR] for s in (raw.event_stats, raw.metadata_stats,
                                                                  raw.plane_stats)])
    assert len(codes) > 10 * len(raw.strings) > 0 and len(set(raw.strings)) == len(raw.strings)
    _, first = np.unique(codes, return_index=True)
    assert codes[np.sort(first)].tolist() == list(range(len(raw.strings)))
