"""Megascale screen: the table sorted by aggregated total stall, the DCN bandwidth setting that
flags rows, and the recv-done location on enter; one SVG snapshot."""
from __future__ import annotations

from textual.widgets import Input

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.megascale import MegascaleScreen
from tputui.widgets.table import FrameTable

from conftest import FIXTURES

DCN = FIXTURES / "pod" / "dcn_2slices"
SIZE = (120, 40)


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def app() -> TputuiApp:
    return TputuiApp(open_logdir(str(DCN)), tool="megascale_stats")


async def test_table_bandwidth_flag_and_enter():
    a = app()
    async with a.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = a.screen
        assert isinstance(screen, MegascaleScreen) and screen.error is None
        table = screen.query_one("#rows", FrameTable)
        assert table.row_count == 4 and table.row(0)["name"] == "dcn_allreduce_grads"
        stalls = table.frame["aggregated_total_stall_ms"].to_list()
        assert stalls == sorted(stalls, reverse=True)
        await pilot.press("g")
        assert screen.query_one("#gbps", Input).has_focus
        await pilot.press(*"200", "enter")
        await pilot.pause()
        flagged = screen.result.rows.filter(screen.result.rows["exceeds_network"])["name"].to_list()
        assert flagged and "flagged" in str(screen.query_one("#summary").render())
        assert table.has_focus
        await pilot.press("enter")
        await pilot.pause()
        assert "recv-done.10" in str(screen.query_one("#where").render())


def test_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(app(), terminal_size=SIZE, run_before=loaded)
