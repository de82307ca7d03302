"""Utilization viewer against XProf 2.24's `utilization_viewer` DataTable, row for row, on synthetic
TPU v6e / v7x profiles whose counter events carry XProf's real counter ids
(scripts/make_counter_fixtures.py, XProf's output beside each): names, units, nodes, samples and
devices exact, achieved and peak within a relative 1e-12 (they are equal today: the same uint64
sums and the same double operations in the same order). The old v6e_counters fixture (made-up
counter ids) gives XProf's all-zero SparseCore rows; v7x_clock_gaps has the clock counters at 0 where
XProf leaves rows out and a counter known only by its event-metadata id; the real profiles have no
counters."""
from __future__ import annotations

import json
import math

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import utilization_viewer
from tputui.analysis.result import NoDataError
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.screens.utilization_viewer import UtilizationViewerScreen
from tputui.tools import tools_with_data

COUNTERS = FIXTURES / "counters"
SIZE = (120, 40)
REL = 1e-12


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0], use_cache=False)


def cells(row: dict) -> list:
    return [c["v"] for c in row["c"]]


@pytest.mark.parametrize("fixture", ["v6e_utilization", "v7x_utilization", "v6e_value_kinds", "v7x_clock_gaps",
                                     "v6e_counters"])
def test_equal_to_xprof(fixture):
    want = json.loads((COUNTERS / fixture / "oracle" / "utilization_viewer.json").read_text())
    got = json.loads(export_text(run_of(COUNTERS / fixture), "utilization_viewer", "json"))
    assert got["cols"] == want["cols"]
    assert len(got["rows"]) == len(want["rows"]) > 0
    for g, w in zip(got["rows"], want["rows"]):
        g, w = cells(g), cells(w)
        assert g[:5] == w[:5] and g[7] == w[7], (g, w)  # host, device, sample, node, name; unit
        assert math.isclose(g[5], w[5], rel_tol=REL) and math.isclose(g[6], w[6], rel_tol=REL), (g, w)
    achieved = [cells(r)[5] for r in want["rows"]]
    assert (max(achieved) > 0) == (fixture != "v6e_counters")  # made-up ids: XProf finds nothing, all zero


def test_rows_of_each_chip():
    """v6e: one tensor core, HBM / ICI, two SparseCores; v7x adds throttling rows, a second tensor
    core (with its HBM rows and the ICI rows again, as XProf) and four SparseCores."""
    for fixture, per_sample in (("v6e_utilization", 58), ("v7x_utilization", 120)):
        rows = utilization_viewer.analyze(run_of(COUNTERS / fixture)).rows
        counts = rows.group_by("device", "sample").len()["len"].to_list()
        assert set(counts) == {per_sample}
    v7x = utilization_viewer.analyze(run_of(COUNTERS / "v7x_utilization")).rows
    assert v7x.filter(v7x["name"] == "ICI (Read)").height == 4  # 2 samples x 2 tensor cores
    assert sorted(v7x.filter(v7x["name"] == "TEC Scalar Issue")["node"].unique().to_list()) == [0, 1, 2, 3]


def test_clock_gaps_drop_rows_like_xprof():
    rows = utilization_viewer.analyze(run_of(COUNTERS / "v7x_clock_gaps")).rows
    first = rows.filter(rows["sample"] == 0)
    assert first.filter(first["node"] == 0)["name"].to_list()[:3] == ["HBM Rd+Wr - core 0", "HBM Read Ratio",
                                                                      "HBM Write Ratio"]  # no core-0 or ICI rows
    assert "HBM Rd+Wr - core 1" not in first["name"].to_list()
    skipped = rows.filter((rows["sample"] == 1) & (rows["node"] == 1) & (rows["name"] == "Clocks Skipped"))
    assert skipped["achieved"].to_list() == [123.0]  # no performance_counter_id: the metadata id names it


def test_value_kinds_follow_xprof():
    """A negative int64 wraps (5 = 10 - 5 mod 2**64), integers past 2**53 stay exact, a huge double
    clamps to the largest uint64, a negative double reads 0."""
    rows = utilization_viewer.analyze(run_of(COUNTERS / "v6e_value_kinds")).rows

    def achieved(sample: int, name: str) -> float:
        return rows.filter((rows["sample"] == sample) & (rows["name"] == name))["achieved"][0]

    assert achieved(0, "Scalar Unit") == 5.0 == achieved(1, "Scalar Unit")
    assert achieved(0, "Vmem Loads") == float(2**53 + 2)
    assert achieved(1, "1 MXU Busy") == float(2**64 - 1) and achieved(1, "2 MXU Busy") == 0.0


@pytest.mark.parametrize("profile", ["tpu_v6e_inference", "jax_mlp"])
def test_real_profiles_have_no_counters_like_xprof(profile):
    want = json.loads((PROFILES / profile / "oracle" / "utilization_viewer.json").read_text())
    run = run_of(PROFILES / profile)
    assert want["rows"] == [] and not utilization_viewer.has_data(run)
    assert "utilization_viewer" not in tools_with_data(run)
    with pytest.raises(NoDataError, match="no TPU v6e / v7x hardware counters"):
        utilization_viewer.analyze(run)


def test_listed_only_with_counters():
    assert "utilization_viewer" in tools_with_data(run_of(COUNTERS / "v7x_utilization"))


def test_csv_has_the_percentage():
    csv = export_text(run_of(COUNTERS / "v6e_utilization"), "utilization_viewer", "csv").splitlines()
    assert csv[0] == "host,device,sample,node,name,achieved,peak,unit,host_name,device_type,kernel,percent"
    first = csv[1].split(",")
    assert first[4] == "Scalar Unit" and first[10] == "_counters_"
    assert float(first[11]) == pytest.approx(100 * float(first[5]) / float(first[6]), rel=REL)


async def test_screen_bars_follow_the_sample():
    app = TputuiApp(open_logdir(str(COUNTERS / "v6e_utilization")), tool="utilization_viewer", use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await _loaded(pilot)
        screen = app.screen
        assert isinstance(screen, UtilizationViewerScreen) and screen.error is None
        assert screen.table.row_count == 232 and screen.bar_sample == (0, 0, 0)
        result = screen.result
        assert screen.bar_units.equals(result.sample_units(0, 0, 0)) and screen.bar_units.height == 58
        await pilot.press("end")
        assert screen.bar_sample == (0, 1, 1)
        last = screen.bar_units.row(-1, named=True)
        assert last["name"] == "SCS: Smisc Slot" and last["percent"] == pytest.approx(100 * last["achieved"] / last["peak"])


async def _loaded(pilot):
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _app(fixture="v7x_utilization"):
    return TputuiApp(open_logdir(str(COUNTERS / fixture)), tool="utilization_viewer", use_cache=False)


def test_utilization_viewer_snapshot(snap_compare):
    assert snap_compare(_app(), terminal_size=SIZE, run_before=_loaded)


def test_utilization_viewer_small_terminal_snapshot(snap_compare):
    assert snap_compare(_app("v6e_utilization"), terminal_size=(80, 24), run_before=_loaded)


def test_utilization_viewer_no_color_snapshot(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(_app(), terminal_size=SIZE, run_before=_loaded)


def test_utilization_viewer_light_theme_snapshot(snap_compare):
    async def light(pilot):
        pilot.app.theme = "textual-light"
        await _loaded(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=light)
