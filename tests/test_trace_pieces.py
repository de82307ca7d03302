"""A giant host's trace viewer index built piece by piece (analysis/trace_pieces.py) holds the
same events, names, tracks, flows and counters as the index of the host read whole, and draws the
same picture at every zoom; an event's details come from its own piece; the first frame is the
devices' small lines."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import host_pieces, trace_cache
from tputui.analysis.host_map import host_op_stats, known_grouping
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_events import trace_events
from tputui.analysis.trace_pieces import PiecedIndex
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.export import export_text

# Host threads, flows host -> device, renamed roots (tpu_v6e_inference); 4 hosts' worth of chips and
# steps (pod_v4_32); counter tracks (v6e_counters); Orbax roots and 27-bit run ids (orbax_serving).
LOGDIRS = [PROFILES / "tpu_v6e_inference", FIXTURES / "pod" / "pod_v4_32", FIXTURES / "counters" / "v6e_counters",
           FIXTURES / "grouping" / "orbax_serving", FIXTURES / "pod" / "dcn_2slices"]


def _run(logdir: pathlib.Path, jobs: int = 1, cache: bool = True) -> RunData:
    return RunData(open_logdir(str(logdir)).runs[0], use_cache=cache, jobs=jobs)


def _whole(logdir: pathlib.Path, monkeypatch) -> TraceIndex:
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, str(1 << 40))
    run = _run(logdir, cache=False)
    host_op_stats(run)
    ix = TraceIndex(trace_events(run.frame(None), grouping=known_grouping(run, None)))
    ix.build_pyramid()
    return ix


@pytest.fixture
def in_pieces(monkeypatch):
    """Every host file is a giant one: one chip, or one host thread, per piece."""
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(host_pieces, "PIECE_TARGET_BYTES", 1)


def _flows(ix: TraceIndex) -> set:
    return set(zip(*(np.asarray(getattr(ix.flows, f)).tolist() for f in ("src", "dst", "kind", "category", "flow_id"))))


def _assert_same(whole: TraceIndex, pieced: TraceIndex) -> None:
    assert [(t.pid, t.tid, t.name, t.first_row, t.num_rows) for t in pieced.tracks] == \
        [(t.pid, t.tid, t.name, t.first_row, t.num_rows) for t in whole.tracks]
    assert [(s.pid, s.name, s.tracks) for s in pieced.sections] == [(s.pid, s.name, s.tracks) for s in whole.sections]
    assert pieced.num_events == whole.num_events > 0
    for name in ("start", "end", "cover", "kind", "event_row", "row_count"):
        assert np.array_equal(np.asarray(getattr(pieced, name)), np.asarray(getattr(whole, name))), name
    names = np.array(whole.names, object)[np.asarray(whole.name)]
    assert (np.array(pieced.names, object)[np.asarray(pieced.name)] == names).all()  # renamed roots too
    assert _flows(pieced) == _flows(whole)
    assert pieced.counters.names == whole.counters.names
    assert np.array_equal(pieced.counters.t_ps, whole.counters.t_ps)
    assert np.array_equal(pieced.counters.value, whole.counters.value)
    # The same picture at every zoom: a column is drawn on a row by both indexes or by neither.
    span = whole.t_max - whole.t_min
    for cols in (80, 400):
        for width in (span, span // 100, span // 10_000):
            w = max(int(width), cols)
            for t0 in (whole.t_min, whole.t_min + span // 2):
                edges = np.linspace(t0, t0 + w, cols + 1).astype(np.int64)
                a, b = whole.level_for(w / cols), pieced.level_for(w / cols)
                for r in range(whole.num_rows):
                    assert np.array_equal(whole.row_columns(r, edges, a) >= 0, pieced.row_columns(r, edges, b) >= 0)


@pytest.mark.parametrize("logdir", LOGDIRS, ids=lambda p: p.name)
def test_pieced_index_is_the_whole_hosts(logdir, monkeypatch, in_pieces):
    pieced = trace_cache.pieced_index(_run(logdir), None)
    assert isinstance(pieced, PiecedIndex) and len(pieced.pieces) > 2
    assert pieced.complete and len(pieced.levels) > 1
    _assert_same(_whole(logdir, monkeypatch), pieced)


def test_pieced_index_from_workers_and_without_a_cache(monkeypatch, in_pieces):
    logdir = PROFILES / "tpu_v6e_inference"
    in_workers = trace_cache.pieced_index(_run(logdir, jobs=2), None)
    no_cache = trace_cache.pieced_index(_run(logdir, cache=False), None)
    whole = _whole(logdir, monkeypatch)
    _assert_same(whole, in_workers)
    _assert_same(whole, no_cache)


def test_open_draws_the_devices_first_then_the_pieced_index(in_pieces, monkeypatch):
    run = _run(PROFILES / "tpu_v6e_inference")
    first = trace_cache.open_index(run, None)
    assert first.coarse and first.partial and not first.complete
    assert {t.pid for t in first.tracks} and all(t.pid != 701 for t in first.tracks)  # devices only
    final = trace_cache.finish_index(run, None, first)
    assert isinstance(final, PiecedIndex)
    # A selection on the first pass is found again in the final index (by place, time and name).
    picked = np.arange(0, first.num_events, max(first.num_events // 20, 1))
    found = final.positions_of(first, picked)
    assert (found >= 0).all()
    assert [final.event_name(int(i)) for i in found] == [first.event_name(int(i)) for i in picked]
    assert np.array_equal(np.asarray(final.start)[found], np.asarray(first.start)[picked])
    # Opened again: the saved pieced index, whole at once.
    again = trace_cache.open_index(_run(PROFILES / "tpu_v6e_inference"), None)
    assert isinstance(again, PiecedIndex) and again.complete


def test_details_come_from_the_events_own_plane(in_pieces, monkeypatch):
    logdir = PROFILES / "tpu_v6e_inference"
    pieced = trace_cache.pieced_index(_run(logdir), None)
    whole = _whole(logdir, monkeypatch)
    raw = np.flatnonzero(np.asarray(whole.kind) == 0)
    checked = 0
    for i in raw[:: max(len(raw) // 40, 1)].tolist():
        assert not pieced.details_ready(i)
        pieced.prepare_details(i)
        assert pieced.details_ready(i)
        assert pieced.stats(i) == whole.stats(i), whole.event_name(i)
        assert pieced.metadata_name(i) == whole.metadata_name(i)
        checked += 1
    assert checked >= 30


def _document_lines(logdir: pathlib.Path) -> list[str]:
    text = export_text(_run(logdir), "trace_viewer")
    doc = json.loads(text)
    return sorted(json.dumps(e, sort_keys=True) for e in doc["traceEvents"])


@pytest.mark.parametrize("logdir", LOGDIRS[:2], ids=lambda p: p.name)
def test_trace_export_of_a_giant_host_streams_its_pieced_index(logdir, monkeypatch, in_pieces):
    pieced = _document_lines(logdir)
    assert isinstance(trace_cache.open_index(_run(logdir), None), PiecedIndex)  # written from the pieced index
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, str(1 << 40))
    whole = _document_lines(logdir)
    assert len(whole) > 1000
    assert pieced == whole  # the same events, flows, counters and metadata (in another order)


def test_trace_export_args_of_a_giant_host_is_one_clear_error(in_pieces):
    with pytest.raises(UserError, match="read in pieces"):
        export_text(_run(PROFILES / "tpu_v6e_inference"), "trace_viewer", args=True)


async def test_the_app_draws_the_devices_then_swaps_in_the_pieced_index(in_pieces):
    from conftest import make_app

    from tputui.screens.trace_viewer import TraceViewerScreen
    from tputui.widgets.timeline import Timeline

    app = make_app("tpu_v6e_inference", "trace_viewer")
    firsts = []
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(300):
            await pilot.pause()
            screen = app.screen
            if isinstance(screen, TraceViewerScreen) and screen.index is not None:
                firsts.append(screen.index)
                if isinstance(screen.index, PiecedIndex) and screen.index.complete:
                    break
                await app.workers.wait_for_complete()  # the pieces are built by worker processes
        screen = app.screen
        assert firsts[0].coarse  # the first frame: the devices' small lines
        tl = screen.query_one("#timeline", Timeline)
        assert tl.ix is screen.index and isinstance(tl.ix, PiecedIndex)
        assert "Host Threads" in [s.name for s in tl.ix.sections]
        # An XLA op's details: read from its own plane, off the UI thread, then drawn.
        op = next(i for i in range(tl.ix.num_events) if tl.ix.event_name(i).startswith("copy")
                  and tl.ix.kind[i] == 0)
        tl.select(np.array([op]), current=op)
        for _ in range(100):
            await pilot.pause()
            await app.workers.wait_for_complete()
            if tl.ix.details_ready(op):
                break
        await pilot.pause()
        from rich.console import Console

        console = Console(width=200)
        with console.capture() as cap:
            console.print(screen.details_renderable())
        text = cap.get()
        assert tl.ix.event_name(op) in text and "hlo_category" in text


def test_export_never_decodes_a_giant_host_whole(in_pieces, monkeypatch, tmp_path):
    """`tputui export --tool trace_viewer` on a giant host: no prefetch of its whole frame (it
    once decoded the 1.67 GB host in the background: 7 GB), no whole frame at all."""
    from tputui.cli import main

    def whole(*_a, **_k):
        raise AssertionError("a giant host decoded whole")

    monkeypatch.setattr(RunData, "prefetch", whole)
    monkeypatch.setattr(RunData, "frame", whole)
    out = tmp_path / "trace.json"
    assert main(["export", str(PROFILES / "tpu_v6e_inference"), "--tool", "trace_viewer", "--format", "json",
                 "-o", str(out)]) == 0
    assert len(json.loads(out.read_text())["traceEvents"]) > 29_000
