"""Selection figures for the trace viewer, against a plain per-event count on a real profile."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from conftest import xplane

from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_events import trace_events
from tputui.analysis.trace_selection import earliest, events_of, selection_stats, self_share
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
