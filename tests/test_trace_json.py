"""trace_json: the C writer (_trace_json) and the Polars reference give the same bytes.

On the fixtures' trace viewer events (with flows and counters) and on made-up columns that reach
every number form: zero, the exponent form below 1e-4 us, negatives, six fixed decimals from
1000 s on, escaped and non-ASCII names, non-integral counter values.
"""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from conftest import PROFILES

from tputui.analysis import trace_json
from tputui.analysis.trace_counters import build
from tputui.analysis.trace_export import analyze
from tputui.analysis.trace_flows import CONTEXT_TYPES, FLOW_NAMES, FlowTable
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

needs_c = pytest.mark.skipif(trace_json._trace_json is None, reason="the _trace_json extension is not built")

EDGE_PS = [0, 1, 5, 9, 10, 12, 50, 99, 100, 101, 999, 123_456, 1_000_000, 1_500_000, 10**15 - 1, 10**15,
           10**15 + 5, 2 * 10**15 + 1, 10**16 + 123_456_789, -1, -12, -100, -1_500_000, -(10**15) - 3, 2**62]


def _all(chunks) -> bytes:
    return b"".join(chunks)


def test_us_text_equals_us_per_value():
    rng = np.random.default_rng(7)
    ps = np.concatenate([EDGE_PS, rng.integers(-10**17, 10**17, 5000), rng.integers(-10**4, 10**4, 5000)])
    assert trace_json.us_text(ps).to_list() == [trace_json.us(int(v)) for v in ps.tolist()]
    assert trace_json.us(50) == "5e-05" and trace_json.us(1_500_000) == "1.5" and trace_json.us(10**15) == "1000000000.000000"
    if trace_json._trace_json is not None:
        assert [trace_json._trace_json.us(int(v)) for v in ps.tolist()] == [trace_json.us(int(v)) for v in ps.tolist()]


def _synthetic():
    """Events, flows and counters over EDGE_PS (a stand-in for TraceEvents with every form)."""
    from tputui.analysis.trace_events import TraceEvents

    n = len(EDGE_PS)
    start = np.array(EDGE_PS, np.int64)
    dur = np.array(EDGE_PS[::-1], np.int64)
    dur[::4] = 0  # instants among them
    names = ['plain', 'quote " and \\ back', "tab\tnew\nline", "naïve µs ✓", ""]
    import polars as pl

    ev = TraceEvents(pid=np.arange(n, dtype=np.uint32) % 3 + 1, tid=(np.arange(n, dtype=np.uint32) * 7919) | 2**31,
                     start_ps=start, duration_ps=dur, name=(np.arange(n) % len(names)).astype(np.int32),
                     source=np.full(n, -1, np.int64), kind=np.zeros(n, np.uint8), names=names,
                     processes=pl.DataFrame({"pid": [1], "name": ["p"]}),
                     threads=pl.DataFrame({"pid": [1], "tid": [1], "name": ["t"]}))
    src = np.arange(0, n - 1, dtype=np.int64)
    ev.flows = FlowTable(src, src + 1, (src % 3).astype(np.uint8), (src % len(CONTEXT_TYPES)).astype(np.uint8),
                         src.astype(np.uint64))
    value = np.array([0.0, -0.0, 1.0, -3.0, 0.5, 1e-7, 2.0**63, 1e300, -2.5, 123456789.125] * 3)
    ev.counters = build(["Memory in use: 0", "naïve \"counter\""], [701, 3], np.arange(len(value)) % 2,
                        np.array(EDGE_PS[:len(value)] + [7] * (len(value) - len(EDGE_PS[:len(value)])), np.int64),
                        value)
    return ev


def _events_of(root) -> object:
    return analyze(RunData(open_logdir(str(root)).runs[0])).events


CASES = ["synthetic", PROFILES / "tpu_v6e_inference", PROFILES.parent / "flows" / "gpu_launch",
         PROFILES.parent / "pod" / "pod_v5e_single"]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c if isinstance(c, str) else c.name)
def events(request):
    return _synthetic() if request.param == "synthetic" else _events_of(request.param)


@needs_c
def test_c_writer_equals_reference(events):
    for rows in (trace_json.CHUNK_ROWS, 3):  # chunk edges anywhere give the same bytes
        assert _all(trace_json.event_chunks(events, rows=rows)) == _all(trace_json.event_chunks(events, False, rows))
    whole = _all(trace_json.flow_lines(events, FLOW_NAMES, CONTEXT_TYPES))
    assert whole == _all(trace_json.flow_lines(events, FLOW_NAMES, CONTEXT_TYPES, use_c=False))
    assert whole == _all(trace_json.flow_lines(events, FLOW_NAMES, CONTEXT_TYPES, rows=3))  # ids go on across chunks
    assert whole == _all(trace_json.flow_lines(events, FLOW_NAMES, CONTEXT_TYPES, use_c=False, rows=3))
    assert trace_json.counter_lines(events) == trace_json.counter_lines(events, use_c=False)


def test_lines_are_json_with_the_events_values(events):
    """Every line parses; complete events first, then instants; values as the columns hold them."""
    for use_c in (False, True) if trace_json._trace_json is not None else (False,):
        lines = _all(trace_json.event_chunks(events, use_c)).decode().splitlines()
        got = [json.loads(x.rstrip(","), parse_float=str) for x in lines]
        complete = np.flatnonzero(events.duration_ps != 0)
        order = np.concatenate([complete, np.flatnonzero(events.duration_ps == 0)])
        assert len(got) == len(order)
        for e, k in zip(got, order.tolist()):
            assert (e["pid"], e["tid"], e["name"]) == (int(events.pid[k]), int(events.tid[k]), events.names[events.name[k]])
            assert e["ts"] == trace_json.us(int(events.start_ps[k]))
            assert e.get("dur", trace_json.us(0)) == trace_json.us(int(events.duration_ps[k]))
            assert e["ph"] == ("X" if events.duration_ps[k] else "i")
        counters = trace_json.counter_lines(events, use_c).decode().splitlines()
        c = events.counters
        assert len(counters) == (len(c.t_ps) if c is not None else 0)
        for line, v in zip(counters, c.value.tolist() if c is not None else []):
            assert json.loads(line.rstrip(","))["args"]["value"] == v


@needs_c
def test_c_writer_rejects_bad_input():
    ev = _synthetic()
    tails, off = trace_json._blob(trace_json.event_tails(ev.names[:1], True))
    with pytest.raises(ValueError, match="no tail"):
        trace_json._trace_json.events(ev.pid, ev.tid, ev.start_ps, ev.duration_ps, ev.name, tails, off, 0, len(ev),
                                      True)
    with pytest.raises(ValueError, match="items"):
        trace_json._trace_json.events(ev.pid[:-1], ev.tid, ev.start_ps, ev.duration_ps, ev.name, tails, off, 0,
                                      len(ev), True)


@needs_c
def test_the_document_is_the_same_without_the_extension(monkeypatch):
    """A build without a C compiler writes the very same export (the reference path end to end)."""
    root = PROFILES.parent / "flows" / "gpu_launch"
    result = analyze(RunData(open_logdir(str(root)).runs[0]))
    with_c = io.StringIO()
    result.write_json(with_c)
    monkeypatch.setattr(trace_json, "_trace_json", None)
    without = io.StringIO()
    result.write_json(without)
    assert with_c.getvalue() == without.getvalue()
    assert json.loads(without.getvalue())["traceEvents"][-1] == {}
