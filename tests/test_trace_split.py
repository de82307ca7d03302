"""split_trace_events: the export's events with the raw events' columns left in the frame.

Joined, they are trace_events' table; the JSON written from them block by block is the bytes
written from that table (C writer and Polars reference, blocks of a few rows included)."""
from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import PROFILES

from tputui.analysis import trace_export, trace_json
from tputui.analysis.trace_events import SplitEvents, split_trace_events, trace_events
from tputui.analysis.trace_export import TraceExport, analyze
from tputui.analysis.trace_flows import CONTEXT_TYPES, FLOW_NAMES
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

CASES = [PROFILES / "tpu_v6e_inference", PROFILES.parent / "flows" / "gpu_launch",
         PROFILES.parent / "pod" / "pod_v5e_single", PROFILES.parent / "counters" / "v6e_counters"]


def _run(root) -> RunData:
    return RunData(open_logdir(str(root)).runs[0], use_cache=False)


@pytest.mark.parametrize("root", CASES, ids=lambda p: p.name)
def test_split_events_joined_are_the_trace_events(root):
    frame = _run(root).frame()
    whole, split = trace_events(frame), split_trace_events(frame)
    assert len(split) == len(whole) and len(split.raw) > 0
    joined = split.joined()
    for col in ("pid", "tid", "start_ps", "duration_ps", "name", "source", "kind"):
        assert np.array_equal(getattr(joined, col), getattr(whole, col)), col
    assert joined.names == whole.names
    assert joined.threads.equals(whole.threads) and joined.processes.equals(whole.processes)
    for col in ("src", "dst", "kind", "category"):
        assert np.array_equal(getattr(joined.flows, col), getattr(whole.flows, col)), col
    assert np.array_equal(joined.counters.value, whole.counters.value)
    assert np.array_equal(joined.counters.t_ps, whole.counters.t_ps)
    pos = np.arange(0, len(split.raw), max(1, len(split.raw) // 50))
    for got, want in zip(split.take(pos), whole.take(pos)):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("links_first", [False, True], ids=["flows-beside", "flows-first"])
@pytest.mark.parametrize("use_c", [True, False], ids=["c", "polars"])
@pytest.mark.parametrize("root", CASES, ids=lambda p: p.name)
def test_split_events_write_the_same_json(root, use_c, links_first, monkeypatch):
    """Whether the flows are built beside the events' writing or before it (large profiles),
    in one block or many, the document is the one trace_events' table gives."""
    if use_c and trace_json._trace_json is None:
        pytest.skip("the _trace_json extension is not built")
    monkeypatch.setattr(trace_export, "FLOWS_FIRST_EVENTS", 0 if links_first else 10**12)
    result = analyze(_run(root))
    assert isinstance(result.parts, SplitEvents)  # the export path splits
    whole = trace_events(_run(root).frame())
    for block_rows in (trace_json.BLOCK_ROWS, 7):  # one block, then many (instant events kept across them)
        monkeypatch.setattr(trace_json, "BLOCK_ROWS", block_rows)
        got = b"".join(trace_json.event_chunks(result.parts, use_c=use_c, rows=5))
        assert got == b"".join(trace_json.event_chunks(whole, use_c=use_c, rows=5))
    assert (b"".join(trace_json.flow_lines(result.parts, FLOW_NAMES, CONTEXT_TYPES, use_c=use_c))
            == b"".join(trace_json.flow_lines(whole, FLOW_NAMES, CONTEXT_TYPES, use_c=use_c)))
    for rows in (trace_json.CHUNK_ROWS, 3):  # counter samples in one chunk, then in many
        assert (b"".join(trace_json.counter_chunks(result.parts, use_c=use_c, rows=rows))
                == trace_json.counter_lines(whole, use_c=use_c))
    a, b = io.StringIO(), io.StringIO()
    result.write_json(a)
    TraceExport(whole).write_json(b)
    assert a.getvalue() == b.getvalue() and a.getvalue().count('"ph":"X"') > 0
    assert result.events.name.tolist() == whole.name.tolist()  # `events`: the joined table


def test_raw_columns_apply_changed_durations_in_any_block():
    """A step whose end moved keeps its new duration in whichever block gathers it."""
    frame = _run(PROFILES / "tpu_v6e_inference").frame()
    raw = split_trace_events(frame).raw
    n = len(raw)
    raw.changed = np.array([0, 1, n // 2, n - 1], np.int64)
    raw.changed_ps = np.array([11, 22, 33, 44], np.int64)
    want = frame.raw.event_duration_ps[raw.rows].copy()
    want[raw.changed] = raw.changed_ps
    for step in (7, n // 2, n):
        got = np.concatenate([raw.columns(a, min(a + step, n))[3] for a in range(0, n, step)])
        assert np.array_equal(got, want), step
