"""Performance counters against XProf 2.24's `perf_counters` DataTable (row for row, values and
hex forms exact) on a synthetic v6e profile with counter events (scripts/make_counter_fixtures.py,
XProf's output beside it), and empty on the real profiles like XProf's."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import perf_counters
from tputui.analysis.result import NoDataError
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.screens.perf_counters import PerfCountersScreen

COUNTERS = FIXTURES / "counters" / "v6e_counters"
SIZE = (120, 40)


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0], use_cache=False)


def test_equal_to_xprof():
    want = json.loads((COUNTERS / "oracle" / "perf_counters.json").read_text())
    got = json.loads(export_text(run_of(COUNTERS), "perf_counters", "json"))
    assert got == want and len(got["rows"]) == 20


@pytest.mark.parametrize("profile", ["tpu_v6e_inference", "jax_mlp", "tf_loop"])
def test_real_profiles_have_no_counters_like_xprof(profile):
    want = json.loads((PROFILES / profile / "oracle" / "perf_counters.json").read_text())
    run = run_of(PROFILES / profile)
    assert want["rows"] == [] and not perf_counters.has_data(run)
    with pytest.raises(NoDataError, match="no hardware performance counters"):
        perf_counters.analyze(run)


def test_csv_has_the_hex_value():
    csv = export_text(run_of(COUNTERS), "perf_counters", "csv").splitlines()
    assert csv[0] == "host,chip,kernel,sample,counter,value,description,set,value_hex"
    assert csv[5] == 'v6e-counters,10,_counters_,0,hbm_rd_bytes,956397711104,"","",0xdeadbeef00'


async def test_screen_bars_follow_the_counter():
    app = TputuiApp(open_logdir(str(COUNTERS)), tool="perf_counters", use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PerfCountersScreen) and screen.error is None
        assert screen.bars.title == "mxu_busy_0 on every chip and sample" and len(screen.bars.items) == 4
        await pilot.press("down", "down", "down")
        assert screen.bars.title == "cycles on every chip and sample"
        assert [v for _, v in screen.bars.items] == [14_400_000, 14_404_096, 14_400_000, 14_404_096]


def _app():
    return TputuiApp(open_logdir(str(COUNTERS)), tool="perf_counters", use_cache=False)


async def _loaded(pilot):
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_perf_counters_snapshot(snap_compare):
    assert snap_compare(_app(), terminal_size=SIZE, run_before=_loaded)


def test_perf_counters_small_terminal_snapshot(snap_compare):
    assert snap_compare(_app(), terminal_size=(80, 24), run_before=_loaded)


def test_perf_counters_no_color_snapshot(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(_app(), terminal_size=SIZE, run_before=_loaded)


def test_perf_counters_light_theme_snapshot(snap_compare):
    async def light(pilot):
        pilot.app.theme = "textual-light"
        await _loaded(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=light)


@pytest.mark.parametrize("name", ["v6e_counters", "v6e_value_kinds", "v6e_utilization", "v7x_utilization",
                                  "v7x_clock_gaps"])
def test_counters_and_values_equal_xprof_on_every_counter_fixture(name):
    """Every sample XProf lists, with its value (double-valued samples as 0, as XProf reads them).
    Descriptions and sets are left out here: XProf 2.24 fills missing ones from tables compiled
    into its library that its source does not show."""
    import gzip
    import os

    from tputui.analysis.perf_counters import analyze

    root = FIXTURES / "counters" / name
    path = root / "oracle" / "perf_counters.json"
    data = path.read_bytes() if path.exists() else gzip.open(str(path) + ".gz").read()
    doc = json.loads(data)
    rows = doc["rows"] if isinstance(doc, dict) else doc[0]["rows"]
    want = sorted((r["c"][4]["v"], r["c"][5]["v"]) for r in rows)
    got = analyze(RunData(open_logdir(os.fspath(root)).run(None)), None).counters
    assert sorted(zip(got["counter"].to_list(), [float(v) for v in got["value"].to_list()])) == want
    assert len(want) > 0
