"""Pod viewer channel rows: the links drawn between the linked chips on the topology grid, and the
jumps from a channel's HLO ops (v / Enter trace viewer, G graph viewer, P op profile), as on op
rows elsewhere; snapshots of the drawn links at 80x24 under NO_COLOR and at 200x60."""
from __future__ import annotations

import polars as pl
import pytest
from conftest import FIXTURES, make_app, settle
from test_pod_split import one_way_channel
from test_pod_viewer_screen import builder

from tputui.analysis.op_events import hlo_op_rows
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.screens.graph_viewer import GraphViewerScreen
from tputui.screens.op_profile import OpProfileScreen
from tputui.screens.pickers import PickerScreen
from tputui.screens.pod_viewer import PodViewerScreen
from tputui.screens.trace_viewer import TraceViewerScreen
from tputui.widgets.heatmap import Cell, Heatmap
from tputui.widgets.table import FrameTable

POD = FIXTURES / "pod"
SIZE = (120, 40)


def lines_of(heat: Heatmap) -> list[str]:
    return [str(t) for t in heat._render_lines(heat.size.width)]


async def show_one_way(screen) -> None:
    """The screen on pod_v4_32 with one one-way channel (host 0's chips 0-1 send, 2-3 receive)."""
    res = one_way_channel()
    screen.pod = screen.result = res
    screen.channels.set_frame(res.channels.drop("src_core_ids", "dst_core_ids"))
    screen.query_one("#latency").set_items([(f"ch {c}", v) for c, v in res.channel_latency()])
    screen._redraw()


# --- links on the grid (widget) ------------------------------------------------------------------
def grid(n: int = 4) -> Heatmap:
    """An n x n 2D grid, one core per chip, chip id = x + n*y, one host."""
    heat = Heatmap(max_lines=40)
    heat.set_cells([Cell(c, "h", c, float(c), (c % n, c // n, 0)) for c in range(n * n)], (n, n, 1))
    return heat


def test_a_link_is_routed_x_first_then_y():
    heat = grid()
    heat.set_links([(0, 15)])  # (0, 0) -> (3, 3)
    across, down, crossing = heat.link_edges()
    assert across == {(0, 0, 0): {1}, (0, 0, 1): {1}, (0, 0, 2): {1}}
    assert down == {(0, 3, 0): {1}, (0, 3, 1): {1}, (0, 3, 2): {1}} and crossing == 0
    heat.set_links([(0, 15), (15, 0)])  # back the other way: x first from (3, 3), then up x = 0
    across, down, _ = heat.link_edges()
    assert across[(0, 0, 0)] == {1} and across[(0, 3, 0)] == {-1} and down[(0, 0, 2)] == {-1}


def test_links_are_drawn_between_the_cells_with_plain_characters():
    heat = grid()
    plain = lines_of(heat)
    heat.set_links([(0, 15)])
    drawn = lines_of(heat)
    # A connector line between every two rows: 1 header + 4 rows + 3 connectors.
    assert len(plain) == 5 and len(drawn) == 8
    assert drawn[1] == "y0 ██→██→██→██ "  # along y0 from x 0 to 3
    assert [line.strip() for line in drawn[2::2][:3]] == ["↓"] * 3  # down x = 3
    assert drawn[2].index("↓") == drawn[1].rindex("█") - 1  # under the chip at x = 3
    assert heat.legend().plain.count("link (x, then y)") == 1
    heat.set_links([(1, 0), (0, 1)])
    assert lines_of(heat)[1].startswith("y0 ██↔██ ")
    heat.set_links(())
    assert lines_of(heat) == plain and "link" not in heat.legend().plain.replace("linked", "")


def test_a_wider_gap_where_hosts_meet_draws_a_longer_arrow():
    heat = Heatmap(max_lines=40)
    heat.set_cells([Cell(c, f"h{c % 4 // 2}", c, 1.0, (c % 4, 0, 0)) for c in range(4)], (2, 1, 1))
    heat.set_links([(1, 2)])
    assert lines_of(heat)[1] == "y0 ██ ██─→██ ██ "


def test_links_without_a_grid_say_where_they_would_be():
    heat = Heatmap(max_lines=40)
    heat.set_cells([Cell(c, "h", c, 1.0) for c in range(4)])
    heat.set_links([(0, 3)])
    assert heat.layout_kind == "strip" and "links drawn on the chip grid only" in heat.legend().plain


# --- the screen: a channel row draws its links -------------------------------------------------
async def test_a_channel_row_draws_its_links_and_leaving_it_clears_them():
    app = make_app(POD / "pod_v4_32", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await show_one_way(screen)
        heat = screen.query_one(Heatmap)
        before = lines_of(heat)
        screen.query_one("#channels", FrameTable).focus()
        await pilot.pause()
        pairs = screen.pod.channel_links("4")
        assert heat.links == pairs and len(pairs) == 4
        drawn = lines_of(heat)
        assert len(drawn) > len(before) and any("↔" in line for line in drawn) and any("↓" in line for line in drawn)
        details = str(screen.query_one("#details").render())
        assert details.startswith("channel 4 · recv-done.4, send.4 · cores 0-3 send, cores 4-7 receive · 4 chip links")
        assert "link (x, then y)" in str(screen.query_one("#legend").render())
        heat.focus()
        await pilot.pause()
        assert heat.links == [] and lines_of(heat) == before


async def test_finer_split_is_beside_xprofs_figure_and_labelled_ours():
    app = make_app(POD / "pod_v4_32", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        details = str(screen.query_one("#details").render())  # the cell under the cursor: core 0
        mine = screen.pod.finer_split_ms(screen.step, [0])
        xprof = screen.pod.cores_mean_ms(screen.step, [0])
        assert (f"Device compute {xprof['device_compute']:.3f} ms (" in details
                and f"step) [tputui: high-FLOPS {mine['high_flops_compute']:.3f} ms, "
                    f"low-FLOPS {mine['low_flops_compute']:.3f} ms]" in details)
        await pilot.press("k")  # device to device
        details = str(screen.query_one("#details").render())
        assert f"[tputui: send {mine['d2d_send']:.3f} ms, recv-done {mine['d2d_recv_done']:.3f} ms]" in details
        assert "megacore" not in details  # none in this profile: not listed
        await pilot.press("k")  # collectives: XProf's figure alone
        assert "[tputui:" not in str(screen.query_one("#details").render())
        await pilot.press("tab", "end")  # the per-chip columns: chip 15's readout, ours beside XProf's
        chip = screen.pod.step_frame(screen.step).filter(pl.col("chip") == 15)["core"].to_list()
        split = screen.pod.finer_split_ms(screen.step, chip)
        details = str(screen.query_one("#details").render())
        assert details.startswith("chip 15 ·")
        assert (f" [tputui: high-FLOPS {split['high_flops_compute']:.3f} ms, low-FLOPS "
                f"{split['low_flops_compute']:.3f} ms]") in details


async def test_a_short_terminal_gives_the_channel_table_the_chip_columns_place():
    app = make_app(POD / "pod_v4_32", "pod_viewer")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#channels", FrameTable)
        assert screen.query_one("#chip-plot").display and table.region.y >= 22  # its top border at most
        table.focus()
        await pilot.pause()
        assert not screen.query_one("#chip-plot").display and table.region.height >= 4
        assert table.region.bottom <= 23  # above the footer: the row with its links on screen
        screen.query_one(Heatmap).focus()
        await pilot.pause()
        assert screen.query_one("#chip-plot").display


async def test_a_pods_every_chip_channel_keeps_the_grid(tmp_path):
    """256 cores on a 4x4x8 v4 slice, every chip sending and receiving: at 120x40 the grid stays a
    grid with its links (the heatmap takes up to half the screen while links are drawn) and the
    readout counts the cores instead of listing them."""
    mk = builder()
    spec = mk.PodSpec("pod_256", "TPU v4", hosts_per_slice=32, chips_per_host=4, cores_per_chip=2, steps=2,
                      seed=7, host_prefix="w", mesh=(4, 4, 8))
    mk.build_run(spec, tmp_path / "plugins" / "profile" / mk.RUN)
    app = make_app(tmp_path, "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        heat = screen.query_one(Heatmap)
        assert (heat.layout_kind, heat.level) == ("grid", "core")
        screen.query_one("#channels", FrameTable).focus()
        await pilot.pause()
        assert (heat.layout_kind, heat.level) == ("grid", "core") and len(heat.links) == 128 * 127
        drawn = lines_of(heat)
        assert sum(line.count("↕") for line in drawn) == 8 * 4 * 3  # every layer, column and row gap
        details = str(screen.query_one("#details").render())
        assert "256 cores send, 256 cores receive · 16256 chip links among 128 chips" in details
        assert "links drawn on the chip grid only" not in str(screen.query_one("#legend").render())


# --- jumps from a channel's HLO ops --------------------------------------------------------------
async def test_v_and_enter_show_the_channels_ops_in_the_trace_viewer():
    app = make_app(POD / "pod_v5e_single", "pod_viewer")
    frame = RunData(open_logdir(str(POD / "pod_v5e_single")).runs[0]).frame(None)
    want = tuple(int(r) for r in hlo_op_rows(frame, ["send.4", "recv-done.4"]))
    assert want
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.screen.query_one("#channels", FrameTable).focus()
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen) and app.screen.focus_request.frame_rows == want
        app.go_back()  # what Esc runs (action_back is async, as Textual's)
        await settle(pilot)
        assert isinstance(app.screen, PodViewerScreen)
        await pilot.press("enter")  # Enter on the channel row: the same
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen) and app.screen.focus_request.frame_rows == want


async def test_G_asks_which_op_then_opens_the_graph_viewer_on_it():
    app = make_app(POD / "pod_v5e_single", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.screen.query_one("#channels", FrameTable).focus()
        await pilot.press("G")
        await pilot.pause()
        assert isinstance(app.screen, PickerScreen) and [k for k, _ in app.screen.choices] == ["send.4", "recv-done.4"]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, GraphViewerScreen) and app.screen.options["node"] == "send.4"


async def test_P_opens_the_op_profile_on_the_picked_op():
    app = make_app(POD / "pod_v5e_single", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.screen.query_one("#channels", FrameTable).focus()
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("down", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OpProfileScreen) and screen.needle == "recv-done.4"
        await pilot.pause()
        node = screen.op_tree.cursor_node
        assert node is not None and node.data.is_op and node.data.name == "recv-done.4"
        assert screen.card_node is node.data
        await pilot.press("escape")  # clears the filter first, as a filter typed with / does
        assert screen.needle == "" and isinstance(app.screen, OpProfileScreen)


async def test_op_profile_says_when_the_asked_op_is_not_there():
    app = make_app(POD / "pod_v5e_single", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_tool("op_profile", select="send.999")
        await settle(pilot)
        assert isinstance(app.screen, OpProfileScreen) and app.screen.error is None
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
        assert any("send.999 is not in the op profile" in t for t in toasts), toasts


async def test_channel_keys_say_why_on_the_heatmap_and_hide_without_channels():
    app = make_app(POD / "pod_v5e_single", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.query_one(Heatmap).has_focus
        # The keys act on the channel table's row whatever pane has the focus (the table is on screen).
        assert all(screen.check_action(a, ()) for a in ("show_in_trace", "show_in_graph", "show_in_op_profile"))
    app = make_app("tf_loop", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert not any(screen.check_action(a, ()) for a in ("show_in_trace", "show_in_graph", "show_in_op_profile"))
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, PodViewerScreen)


# --- snapshots of the drawn links --------------------------------------------------------------
@pytest.mark.parametrize("size,no_color", [((80, 24), True), ((200, 60), False)])
def test_snapshot_channel_links(snap_compare, monkeypatch, size, no_color):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")

    async def linked(pilot):
        await settle(pilot)
        await show_one_way(pilot.app.screen)
        pilot.app.screen.query_one("#channels", FrameTable).focus()
        await pilot.pause()

    assert snap_compare(make_app(POD / "pod_v4_32", "pod_viewer"), terminal_size=size, run_before=linked)
