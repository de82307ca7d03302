"""Decoding only some events (by metadata id) or no lines at all (issue #28: a tool that reads a few
kinds of event, such as the memory profile's allocator events, decodes only those).

The C decoder's filtered output against protobuf's reference path given the same filter, and
against the full decode restricted to the same events, on every fixture profile; on one thread
and on two.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import PROFILES
from test_xspace import stat_records

from tputui.data import _wire, wire
from tputui.data.raw import decode_with_protobuf
from tputui.data.xspace import XSpaceFrame, decode_raw

FILES = sorted(PROFILES.rglob("*.xplane.pb"))
IDS = [f"{f.relative_to(PROFILES).parts[0]}/{f.parent.name}" for f in FILES]
EVENT_COLUMNS = ("event_metadata_id", "event_offset_ps", "event_num_occurrences", "event_duration_ps")


def _some_ids(raw) -> np.ndarray:
    """Every third metadata id the events use, and one no event uses."""
    used = np.unique(raw.event_metadata_id)
    return np.concatenate([used[::3], [int(used.max()) + 7 if len(used) else 1]])


def _same_raw(a, b) -> None:
    for name in ("plane_id", "line_plane", "line_id", "line_timestamp_ns", "line_first_event", "line_num_events",
                 "event_line", *EVENT_COLUMNS):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.plane_name == b.plane_name and a.line_name == b.line_name
    em = lambda r: sorted(zip(r.em_plane.tolist(), r.em_id.tolist(), r.em_name))  # noqa: E731
    sm = lambda r: sorted(zip(r.sm_plane.tolist(), r.sm_id.tolist(), r.sm_name))  # noqa: E731
    assert em(a) == em(b) and sm(a) == sm(b)
    fa, fb = XSpaceFrame(a), XSpaceFrame(b)
    for owner in ("event", "metadata", "plane"):
        assert stat_records(fa, owner) == stat_records(fb, owner), owner


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_filtered_decode_equals_protobuf_and_the_full_decode_restricted(path):
    data = path.read_bytes()
    full = wire.decode(data)
    ids = _some_ids(full)
    fast, ref = wire.decode(data, event_ids=ids), decode_with_protobuf(data, event_ids=ids)
    assert 0 < fast.num_events < full.num_events
    _same_raw(fast, ref)
    # The same events as the full decode's with those ids, in file order, with their stats.
    keep = np.isin(full.event_metadata_id, ids)
    for name in EVENT_COLUMNS:
        assert np.array_equal(getattr(fast, name), getattr(full, name)[keep]), name
    assert np.array_equal(fast.line_num_events, np.bincount(full.event_line[keep], minlength=len(full.line_id)))
    rows = np.flatnonzero(keep)  # full row of each kept event
    ff, fk = XSpaceFrame(full), XSpaceFrame(fast)
    moved = {(rows[o], n, v): c for (o, n, v), c in stat_records(fk, "event").items()}
    assert moved == {k: c for k, c in stat_records(ff, "event").items() if keep[k[0]]}


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_no_lines_keeps_every_plane_s_metadata(path):
    data = path.read_bytes()
    fast, ref, full = wire.decode(data, lines=False), decode_with_protobuf(data, lines=False), wire.decode(data)
    assert fast.num_events == 0 and len(fast.line_id) == 0
    _same_raw(fast, ref)
    assert sorted(fast.em_name) == sorted(full.em_name) and sorted(fast.sm_name) == sorted(full.sm_name)
    fm, ff = XSpaceFrame(fast), XSpaceFrame(full)
    assert stat_records(fm, "metadata") == stat_records(ff, "metadata")
    assert stat_records(fm, "plane") == stat_records(ff, "plane")


def test_an_empty_filter_keeps_lines_but_no_events():
    data = next((PROFILES / "tf_keras").rglob("*.xplane.pb")).read_bytes()
    raw = decode_raw(data, event_ids=np.zeros(0, np.int64))
    assert raw.num_events == 0 and len(raw.line_id) == len(wire.decode(data).line_id) > 0
    assert not raw.line_num_events.any() and len(raw.event_stats.owner) == 0


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_filtered_decode_on_two_threads(path, monkeypatch):
    data = path.read_bytes()
    ids = _some_ids(wire.decode(data))
    one = wire.decode(data, event_ids=ids)
    monkeypatch.setattr(wire, "TWO_THREADS_FROM_BYTES", 0)
    monkeypatch.setattr(wire, "_one_thread", [False])
    assert wire.threads_for(len(data)) == 2
    _same_raw(wire.decode(data, event_ids=ids), one)
    _same_raw(wire.decode(data, lines=False), wire.decode(data, lines=False, event_ids=ids))


def test_keep_ids_must_be_ascending():
    data = next((PROFILES / "tf_keras").rglob("*.xplane.pb")).read_bytes()
    ranges = [(off, n) for off, n, _ in _wire.scan(data)[0]]
    with pytest.raises(ValueError, match="ascending"):
        _wire.decode_planes(data, ranges, 1, np.array([5, 3], np.int64))
