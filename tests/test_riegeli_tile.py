"""scripts/to_riegeli.py --tile: each copy's `device_offset_ps` moves with its events (issue #28).

A tiled file whose device stats stay put holds copies whose device times say one thing and whose
event times another: XProf nests device ops by event time and tputui by the device stats, and
their self times part (by 3x on the TPU profile tiled x3). The fixture `riegeli/tpu_tiled_x3`
is that profile tiled x3 by the script; its oracle is XProf 2.24's hlo_stats and op_profile of it.
"""
from __future__ import annotations

import importlib.util
import io
import json
import sys

import numpy as np
from conftest import FIXTURES, PROFILES, ROOT
from op_tools_helpers import datatable_rows, mismatches
from test_op_profile import _compare

from tputui.analysis import hlo_stats, op_profile
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.xspace import XSpaceFrame
from tputui.proto import xplane_pb2

TILED = FIXTURES / "riegeli" / "tpu_tiled_x3"
SOURCE = next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb"))


def to_riegeli():
    name = "to_riegeli"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "to_riegeli.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def run_of(root) -> RunData:
    return RunData(open_logdir(str(root)).runs[0], use_cache=False)


def _device_offsets(frame: XSpaceFrame) -> np.ndarray:
    """Each event's device_offset_ps (-1 where it has none)."""
    out = np.full(frame.num_events, -1, np.int64)
    owner, value = frame.stat_arrays("event", "device_offset_ps")
    out[owner] = value
    return out


def test_tile_moves_device_offsets_with_their_events(tmp_path):
    k = 3
    run_dir = tmp_path / "plugins" / "profile" / "r"
    run_dir.mkdir(parents=True)
    to_riegeli().main([str(SOURCE), str(run_dir / "h.xplane.riegeli"), "--records", "2", "--tile", str(k)])
    tiled, src = run_of(tmp_path).frame(), run_of(SOURCE.parents[3]).frame()
    period = to_riegeli().tile_period(xplane_pb2.XSpace.FromString(SOURCE.read_bytes()))
    assert tiled.num_events == k * src.num_events and period > 0
    t_off, s_off = _device_offsets(tiled), _device_offsets(src)
    assert (s_off >= 0).sum() > 1000  # the TPU planes' ops carry the stat
    src_lines = {(src.raw.plane_name[src.raw.line_plane[ln]], src.raw.line_id[ln]): ln
                 for ln in range(len(src.raw.line_id))}
    moved = 0
    for ln in range(len(tiled.raw.line_id)):
        s_ln = src_lines[(tiled.raw.plane_name[tiled.raw.line_plane[ln]], tiled.raw.line_id[ln])]
        a, b = tiled.line_events(ln), src.line_events(s_ln)
        n = b.stop - b.start
        assert a.stop - a.start == k * n
        s_start, s_dev = src.start_ps[b], s_off[b]
        for c in range(k):
            rows = slice(a.start + c * n, a.start + (c + 1) * n)
            assert np.array_equal(tiled.start_ps[rows] - s_start, np.full(n, c * period))
            dev = t_off[rows]
            assert np.array_equal(dev >= 0, s_dev >= 0)  # the same events carry it
            assert np.array_equal(dev[dev >= 0] - s_dev[s_dev >= 0], np.full(int((s_dev >= 0).sum()), c * period))
            moved += int((dev >= 0).sum()) if c else 0
    assert moved == (k - 1) * int((s_off >= 0).sum())


def test_tiled_fixture_is_what_the_script_writes(tmp_path):
    """The committed fixture's events are today's --tile output (its oracle stays meaningful)."""
    run_dir = tmp_path / "plugins" / "profile" / "r"
    run_dir.mkdir(parents=True)
    to_riegeli().main([str(SOURCE), str(run_dir / "h.xplane.riegeli"), "--records", "3", "--tile", "3"])
    ours, committed = run_of(tmp_path).frame(), run_of(TILED).frame()
    assert ours.num_events == committed.num_events
    assert np.array_equal(ours.start_ps, committed.start_ps)
    assert np.array_equal(ours.raw.event_duration_ps, committed.raw.event_duration_ps)
    assert np.array_equal(_device_offsets(ours), _device_offsets(committed))


def test_tiled_hlo_stats_self_times_equal_xprof():
    ours = hlo_stats.analyze(run_of(TILED)).rows.to_dicts()
    theirs = datatable_rows(json.loads((TILED / "oracle" / "hlo_stats.json").read_text()))
    assert len(ours) == len(theirs) == 17
    cols = [c for c in theirs[0] if c not in ("source_info", "vdd_energy")]
    assert "total_self_time" in cols
    bad = mismatches(ours, theirs, cols)
    assert not bad, "\n".join(bad[:20])


def test_tiled_op_profile_equals_xprof():
    ours = op_profile.analyze(run_of(TILED)).to_json()
    doc = json.loads((TILED / "oracle" / "op_profile.json").read_text())
    for key, theirs_key in (("by_program", "byProgram"), ("by_program_exclude_idle", "byProgramExcludeIdle")):
        theirs = doc[theirs_key]
        bad = _compare(ours[key], theirs, theirs["metrics"]["rawTime"])
        assert not bad, "\n".join(bad[:20])


def test_tile_streams_one_copy_at_a_time(tmp_path):
    """--tile K writes each copy's records before making the next (memory follows the source,
    not K times it: building a 1.6 GB file took 16 GB when the K copies were built first)."""
    mod = to_riegeli()
    space = xplane_pb2.XSpace.FromString(SOURCE.read_bytes())
    events = sum(len(ln.events) for p in space.planes for ln in p.lines)
    copies = list(mod.tiles(space, 3))
    assert len(copies) == 3 and all(c is space for c in copies)  # one message, moved in place
    assert sum(len(ln.events) for p in space.planes for ln in p.lines) == events
    out = tmp_path / "h.xplane.riegeli"
    mod.main([str(SOURCE), str(out), "--records", "2", "--tile", "3"])
    data = out.read_bytes()
    from tputui.data.riegeli import RecordReader
    records = [xplane_pb2.XSpace.FromString(bytes(r)) for r in RecordReader(io.BytesIO(data), str(out), len(data)).records()]
    assert len(records) == 3 * 2  # each copy split into --records records
    assert all(sum(len(ln.events) for p in r.planes for ln in p.lines) <= events for r in records)
    assert sum(len(ln.events) for r in records for p in r.planes for ln in p.lines) == 3 * events
