"""Megascale screen: the table sorted by aggregated total stall, the DCN bandwidth setting that
flags rows, the row's details line, the trace viewer on enter, the host named in the context bar,
the one-line empty state; one SVG snapshot."""
from __future__ import annotations

import polars as pl
from conftest import FIXTURES, make_app, settle
from textual.widgets import Input

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.megascale import MegascaleScreen
from tputui.screens.trace_viewer import TraceFocus, TraceViewerScreen
from tputui.widgets.table import FrameTable

DCN = FIXTURES / "pod" / "dcn_2slices"
SIZE = (120, 40)


def app():
    return make_app(DCN, "megascale_stats")


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
        # Flagged at once against the TPU generation's DCN bandwidth, without asking.
        summary = str(screen.query_one("#summary").render())
        assert "network 100 Gbps (TPU v5e: 25 Gbps per chip x 4 chips (Cloud TPU docs))" in summary
        assert screen.result.exceeding_count > 0
        await pilot.press("B")
        assert screen.query_one("#gbps", Input).has_focus
        await pilot.press(*"200", "enter")
        await pilot.pause()
        flagged = screen.result.rows.filter(screen.result.rows["exceeds_network"])["name"].to_list()
        assert flagged and "flagged" in str(screen.query_one("#summary").render())
        assert table.has_focus
        # Enter: the row's recv-done ops in the trace viewer, zoomed to their first occurrence.
        first = screen.result.recv_done_spans.filter(pl.col("name") == "dcn_allreduce_grads").sort("start_ps").row(
            0, named=True)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(a.screen, TraceViewerScreen)
        assert a.screen.focus_request == TraceFocus(names=("recv-done.10",), start_ps=first["start_ps"],
                                                    end_ps=first["end_ps"])


def context(screen) -> str:
    return str(screen.query_one("#context").render())


async def test_context_bar_names_the_host_of_the_table():
    a = app()
    async with a.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = context(a.screen)
        assert "host ms-s0-0 (1 of 2, h for another)" in bar and "all hosts" not in bar
        assert "on host ms-s0-0" in str(a.screen.query_one("#summary").render())
    a = TputuiApp(open_logdir(str(DCN)), tool="megascale_stats", host="ms-s1-0")
    async with a.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "host ms-s1-0 (2 of 2, h for another)" in context(a.screen)
        assert a.screen.result.host == "ms-s1-0"


async def test_detail_line_reads_the_whole_row():
    a = app()
    async with a.run_test(size=SIZE) as pilot:
        await settle(pilot)
        detail = lambda: str(a.screen.query_one("#detail").render())
        assert detail().startswith("dcn_allreduce_grads · ALL_REDUCE · 4× · slack 0.190 ms")
        assert "aggregated stall 1.916 ms · 16.00 MiB · needs 706.41 Gbps" in detail()
        await pilot.press("down")
        assert detail().startswith("dcn_allgather_params · ALL_GATHER · 5×") and "4.00 MiB" in detail()
        await pilot.press("B", *"500", "enter")
        await pilot.pause()
        await pilot.press("up")
        assert detail().endswith("more than the network")


async def test_no_dcn_collectives_is_one_line():
    a = TputuiApp(open_logdir(str(FIXTURES / "profiles" / "tf_loop")), tool="megascale_stats")
    async with a.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = a.screen
        assert screen.error is None and not screen.query("#rows")
        assert str(screen.query_one("#empty").render()).strip() == (
            "No DCN collectives on host vm: a host has no `MegaScale:` events "
            "(megascale stats need a multi-slice TPU run).")
        await pilot.press("B")
        await pilot.pause()
        assert any("no DCN collectives" in str(n.message) for n in a._notifications)


def test_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(app(), terminal_size=SIZE, run_before=loaded)
