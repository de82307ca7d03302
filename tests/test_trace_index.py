"""TraceIndex: nesting rows, the level-of-detail pyramid's exactness, search and navigation.

Checked against brute force on random events and on the real fixtures: every pixel column the
pyramid marks busy has an event in it and vice versa, at every zoom.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import xplane

from tputui.analysis.trace import (
    TraceIndex,
    _nesting_depth,
    _track_time_order,
    index_for,
    remember_index,
)
from tputui.analysis.trace_events import trace_events
from tputui.data.xspace import decode


def tree_depth_reference(track, start, end):
    """Sequential reference: parent = nearest earlier event of the track ending no earlier."""
    depth = []
    for i in range(len(start)):
        p = -1
        for j in range(i - 1, -1, -1):
            if track[j] != track[i]:
                break
            if end[j] >= end[i] and end[j] > start[j]:  # instants hold nothing
                p = j
                break
        depth.append(0 if p < 0 else depth[p] + 1)
    return depth


def random_events(rng, n, ntracks=3):
    track = rng.integers(0, ntracks, n)
    start = rng.integers(0, 100, n)
    dur = rng.integers(0, 40, n)
    return track, start, dur


def test_track_time_order_is_a_lexsort():
    rng = np.random.default_rng(1)
    for _ in range(500):
        track, start, dur = random_events(rng, int(rng.integers(1, 80)), 4)
        assert _track_time_order(track, start, dur, 4).tolist() == np.lexsort((-dur, start, track)).tolist()


def test_track_time_order_of_lines_already_in_order_is_a_lexsort():
    """Each track one run in (start, longest first) order, as decoded lines come: no sort needed."""
    from tputui.analysis.trace import _runs_in_order

    rng = np.random.default_rng(3)
    for _ in range(300):
        ntr = int(rng.integers(1, 6))
        parts = []
        for t in rng.permutation(ntr).tolist():
            m = int(rng.integers(0, 30))
            start, dur = rng.integers(0, 50, m), rng.integers(0, 20, m)
            o = np.lexsort((-dur, start))
            parts.append((np.full(m, t), start[o], dur[o]))
        track, start, dur = (np.concatenate(c) for c in zip(*parts))
        if not len(track):
            continue
        assert _runs_in_order(track, start, dur) is not None
        assert _track_time_order(track, start, dur, ntr).tolist() == np.lexsort((-dur, start, track)).tolist()
    # A track in two runs, or a run out of order: the general path.
    assert _runs_in_order(np.array([0, 1, 0]), np.array([1, 2, 3]), np.array([1, 1, 1])) is None
    assert _runs_in_order(np.array([0, 0]), np.array([2, 1]), np.array([1, 1])) is None
    assert _runs_in_order(np.array([0, 0]), np.array([1, 1]), np.array([1, 2])) is None


def test_nesting_depth_matches_the_sequential_tree():
    rng = np.random.default_rng(2)
    for _ in range(1000):
        track, start, dur = random_events(rng, int(rng.integers(1, 60)))
        o = np.lexsort((-dur, start, track))
        track, start, end = track[o], start[o], start[o] + dur[o]
        depth, _ = _nesting_depth(track, start, end, 3)
        assert depth.tolist() == tree_depth_reference(track, start, end)


def test_properly_nested_tracks_take_the_fast_path():
    # step > two ops > one sub-op each, twice; an instant at the very end of an op is inside it.
    start = np.array([0, 0, 1, 5, 5, 6, 9, 20, 20, 30])
    end = np.array([10, 5, 3, 9, 8, 7, 9, 40, 30, 35])
    track = np.zeros(len(start), np.int64)
    depth, improper = _nesting_depth(track, start, end, 1, exact=False)
    assert not improper
    assert depth.tolist() == [0, 1, 2, 1, 2, 3, 2, 0, 1, 1]


@pytest.fixture(scope="module")
def jax_index():
    return TraceIndex(trace_events(decode(xplane("jax_mlp").read_bytes())))


@pytest.fixture(scope="module")
def tpu_index():
    ix = TraceIndex(trace_events(decode(xplane("tpu_v6e_inference").read_bytes())))
    ix.build_pyramid()
    return ix


def test_steps_sit_above_their_ops(jax_index):
    ix = jax_index
    python = next(t for t in ix.tracks if t.name == "python")
    steps = [i for i in range(ix.num_events) if ix.event_name(i).startswith("train ")]
    assert len(steps) == 20
    for i in steps:
        row = int(ix.event_row[i])
        assert python.first_row <= row < python.first_row + python.num_rows
        # None of the step's own events shares its row: they are all on rows below. (A Python
        # frame that merely overlaps the step's start may share it: it is not inside the step.)
        sl = ix.row_events(row)
        inside = [j for j in range(sl.start, sl.stop) if j != i and ix.start[j] >= ix.start[i]
                  and ix.end[j] <= ix.end[i]]
        assert not inside, [ix.event_name(j) for j in inside]


def test_quick_index_refines_to_the_exact_one():
    ev = trace_events(decode(xplane("jax_mlp").read_bytes()))
    quick = TraceIndex(ev, exact=False)
    exact = quick.refined()
    assert not quick.exact and exact.exact and exact is not quick
    assert sorted(quick.ev_row.tolist()) == sorted(exact.ev_row.tolist()) == list(range(len(ev)))
    pos = exact.positions_of(quick, np.arange(quick.num_events))
    assert (exact.start[pos] == quick.start).all() and (exact.name[pos] == quick.name).all()


def busy_columns_brute(ix, row, edges):
    sl = ix.row_events(row)
    s, e = ix.start[sl], ix.end[sl]
    busy = np.zeros(len(edges) - 1, bool)
    for a, b in zip(s.tolist(), e.tolist()):
        # A column is busy when an event overlaps it, or an instant lies in it.
        lo = np.searchsorted(edges, a, "right") - 1
        hi = np.searchsorted(edges, b, "left") if b > a else lo + 1
        busy[max(lo, 0):min(max(hi, lo + 1), len(busy))] = True
    return busy


@pytest.mark.parametrize("width", [37, 200])
def test_pyramid_draws_exactly_the_busy_columns(tpu_index, width):
    ix = tpu_index
    rng = np.random.default_rng(width)
    span = ix.t_max - ix.t_min
    for _ in range(12):
        zoom = 10 ** rng.uniform(-6, 0)
        t0 = ix.t_min + rng.uniform(-0.05, 1.0) * span
        edges = np.linspace(t0, t0 + zoom * span, width + 1).round().astype(np.int64)
        level = ix.level_for((edges[-1] - edges[0]) / width)
        for row in rng.choice(ix.num_rows, 25, replace=False).tolist():
            drawn = ix.row_columns(row, edges, level) >= 0
            assert (drawn == busy_columns_brute(ix, row, edges)).all(), (row, level.gap)


def test_pyramid_levels_shrink_and_keep_every_event(tpu_index):
    ix = tpu_index
    sizes = [len(lv.start) for lv in ix.levels]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= ix.num_rows
    for lv in ix.levels:
        assert int(lv.events.sum()) == ix.num_events
        # Blocks cover their events, and their representative is one of them.
        assert ((ix.start[lv.rep] >= lv.start) & (ix.end[lv.rep] <= lv.end)).all()
        assert (lv.rep >= lv.first_event).all() and (lv.rep < lv.first_event + lv.events).all()


def test_search_is_a_case_insensitive_substring_in_time_order(tpu_index):
    ix = tpu_index
    hits = ix.search("ALL-REDUCE")
    assert len(hits) == int(sum(1 for i in range(ix.num_events) if "all-reduce" in ix.event_name(i).lower()))
    assert (np.diff(ix.start[hits]) >= 0).all()
    level = ix.levels[-2]
    m = ix.block_matches(level)
    assert m.sum() >= 1 and m.sum() <= len(hits)
    assert len(ix.search("no such event name")) == 0


def test_event_at_and_neighbours(jax_index):
    ix = jax_index
    row = next(t for t in ix.tracks if t.name == "python").first_row
    sl = ix.row_events(row)
    i = sl.start + 3
    t = int((ix.start[i] + ix.end[i]) // 2)
    assert ix.event_at(row, t) == i
    assert ix.neighbour(i, 1) == i + 1 and ix.neighbour(i, -1) == i - 1
    assert ix.neighbour(sl.start, -1) == sl.start and ix.neighbour(sl.stop - 1, 1) == sl.stop - 1


def test_index_is_cached_with_the_frame():
    frame = decode(xplane("jax_mlp").read_bytes())
    quick = index_for(frame, exact=False)
    assert index_for(frame) is quick
    exact = quick.refined()
    remember_index(frame, exact)
    assert index_for(frame) is exact
