"""Selection figures for the trace viewer, against a plain per-event count on a real profile."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from conftest import xplane

from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_events import trace_events
from tputui.analysis.trace_selection import earliest, events_of, range_stats, selection_stats, self_share
from tputui.data.xspace import decode


@pytest.fixture(scope="module")
def ix() -> TraceIndex:
    return TraceIndex(trace_events(decode(xplane("jax_mlp").read_bytes())))


def test_selection_stats_match_a_plain_count(ix):
    sel = np.arange(0, ix.num_events, 7)  # every 7th event: many names, many tracks
    st = selection_stats(ix, sel)
    count: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for i in sel.tolist():
        name = ix.names[int(ix.name[i])]
        count[name] += 1
        total[name] += int(ix.end[i]) - int(ix.start[i])
    assert st.count == len(sel) and st.total_ps == sum(total.values())
    assert st.start_ps == min(int(ix.start[i]) for i in sel) and st.end_ps == max(int(ix.end[i]) for i in sel)
    assert {n.name: n.count for n in st.per_name} == count  # exact
    assert {n.name: n.total_ps for n in st.per_name} == pytest.approx(total, rel=1e-12)  # float sums
    assert [n.total_ps for n in st.per_name] == sorted((n.total_ps for n in st.per_name), reverse=True)
    assert st.average_ps == pytest.approx(st.total_ps / st.count)


def test_events_of_rows_and_names(ix):
    name = ix.names[int(ix.name[0])]
    by_name = events_of(ix, names=[name])
    assert len(by_name) and all(ix.names[int(ix.name[i])] == name for i in by_name)
    raw = np.flatnonzero(ix.kind == 0)[:5]
    by_row = events_of(ix, frame_rows=tuple(int(ix.source[i]) for i in raw))
    assert set(raw.tolist()) <= set(by_row.tolist())
    first = earliest(ix, by_name)
    assert int(ix.start[first]) == int(ix.start[by_name].min())
    assert len(events_of(ix)) == 0


def test_self_share_is_duration_minus_children(ix):
    durations = ix.end - ix.start
    i = int(np.flatnonzero(durations > 0)[0])
    own, share = self_share(ix, i)
    assert own == ix.self_time(i) and share == pytest.approx(own / int(durations[i]))


@pytest.mark.parametrize("part", [(0.1, 0.35), (0.5, 0.5001), (0.0, 1.0), (0.35, 0.1)])
def test_range_stats_match_a_plain_walk_over_the_events(ix, part):
    """Per name: events overlapping the range (instants inside it), time inside the range, min,
    max, share; the marks may come in either order."""
    span = ix.t_max - ix.t_min
    a, b = (ix.t_min + int(span * f) for f in part)
    st = range_stats(ix, a, b)
    lo, hi = min(a, b), max(a, b)
    inside: dict[str, list[int]] = defaultdict(list)
    for i in range(ix.num_events):
        s, e = int(ix.start[i]), int(ix.end[i])
        if (s < hi and e > lo) or (s == e and lo <= s <= hi):
            inside[ix.names[int(ix.name[i])]].append(min(e, hi) - max(s, lo))
    assert (st.start_ps, st.end_ps, st.span_ps) == (lo, hi, hi - lo)
    assert st.count == sum(len(v) for v in inside.values())
    got = {n.name: n for n in st.per_name}
    assert set(got) == set(inside)
    for name, parts in inside.items():
        n = got[name]
        assert (n.count, n.total_ps, n.min_ps, n.max_ps) == (len(parts), sum(parts), min(parts), max(parts)), name
        assert n.share == pytest.approx(sum(parts) / (hi - lo)) and n.average_ps == pytest.approx(sum(parts) / len(parts))
    totals = [n.total_ps for n in st.per_name]
    assert totals == sorted(totals, reverse=True)


def test_range_stats_of_some_rows_and_of_an_empty_range(ix):
    span = ix.t_max - ix.t_min
    a, b = ix.t_min + span // 4, ix.t_min + span // 2
    row = int(np.argmax(ix.row_count))
    only = range_stats(ix, a, b, rows=np.array([row]))
    sl = ix.row_events(row)
    s, e = np.asarray(ix.start[sl]), np.asarray(ix.end[sl])
    assert only.count == int((((s < b) & (e > a)) | ((s == e) & (s >= a) & (s <= b))).sum())
    empty = range_stats(ix, ix.t_max + 10, ix.t_max + 20)
    assert empty.count == 0 and empty.per_name == []


def test_moving_one_end_of_an_interval():
    from tputui.analysis.trace_selection import move_interval_end

    assert move_interval_end(10, 50, "end", 70) == (10, 70, "end")
    assert move_interval_end(10, 50, "start", 30) == (30, 50, "start")
    assert move_interval_end(10, 50, "start", 50) == (50, 50, "start")  # empty, not swapped
    assert move_interval_end(10, 50, "start", 80) == (50, 80, "end")  # past the end: it is the end now
    assert move_interval_end(10, 50, "end", 4) == (4, 10, "start")
    with pytest.raises(ValueError):
        move_interval_end(10, 50, "middle", 20)
