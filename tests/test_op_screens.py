"""The op-tool screens driven from the keyboard (Pilot), plus one SVG snapshot per screen."""
from __future__ import annotations

import io
import re

import pytest
from conftest import FIXTURES, make_app, settle
from rich.console import Console
from textual.widgets import Tree

from tputui import format as fmt
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.framework_op_stats import FrameworkOpStatsScreen
from tputui.screens.hlo_stats import HloStatsScreen
from tputui.screens.kernel_stats import KernelStatsScreen
from tputui.screens.op_profile import OpProfileScreen
from tputui.screens.roofline import RooflineScreen, scatter
from tputui.screens.trace_viewer import TraceViewerScreen
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable

SIZE = (120, 40)


async def test_framework_op_stats_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    app = make_app("tf_loop", "framework_op_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FrameworkOpStatsScreen) and screen.error is None
        table = screen.query_one("#ops", FrameTable)
        assert table.row_count == 29 and table.row(0)["operation"] == "IDLE"
        await pilot.press("i")  # hide IDLE
        assert table.row_count == 28 and table.row(0)["operation"] == "PyFunc"
        await pilot.press("slash", *"matmul", "enter")
        assert 0 < table.row_count < 28
        assert all("matmul" in (r["operation"] + r["type"]).lower() for r in table.frame.to_dicts())
        await pilot.press("x")
        files = list(tmp_path.glob("framework_op_stats-*.csv"))
        assert len(files) == 1 and files[0].read_text().count("\n") == table.row_count + 1


async def test_op_profile_tree_keys():
    app = make_app("tpu_v6e_inference", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OpProfileScreen) and screen.error is None
        tree = screen.query_one(Tree)
        programs = [c.data.name for c in tree.root.children]
        assert programs[0].startswith("jit_f(") and "IDLE" in programs
        await pilot.press("b")  # by category
        assert [c.data.name for c in tree.root.children][:2] == ["copy-done", "IDLE"]
        await pilot.press("i")  # without IDLE
        assert "IDLE" not in [c.data.name for c in tree.root.children if c.data]
        await pilot.press("minus")  # fewer children per node
        assert screen.children_shown == 5
        copy_done = tree.root.children[0]
        assert len([c for c in copy_done.children if c.data]) == 5  # 6 ops, top 5 shown + "1 more"
        await pilot.press("down")
        await pilot.pause()
        assert screen.card_node.name == "copy-done" and screen.card_node.occurrences == 2400


def card_text(screen) -> str:
    """The card as plain text, as drawn at 100 columns."""
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    console.print(screen.card.content)
    return re.sub(r" {2,}", "  ", console.export_text())  # the grid's column padding as two spaces


async def test_op_profile_card_sort_and_filter():
    app = make_app("tpu_v6e_inference", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        tree = screen.query_one(Tree)
        # The card of an op: average time, bound-by, arithmetic intensity vs the ridge point, source line.
        await pilot.press("slash", *"broadcast_add_fusion.1", "enter")
        await pilot.pause()
        assert screen.needle == "broadcast_add_fusion.1" and tree.has_focus
        op = next(n for n in tree.root.children[0].children[0].children[0].children if n.data)
        tree.move_cursor(op)
        await pilot.pause()
        n = screen.card_node
        assert n.name == "broadcast_add_fusion.1" and n.is_op
        card = card_text(screen)
        assert f"Average time  {fmt.duration_us(n.avg_time_ps / 1e6)}" in card
        assert "Bound by  HBM" in card
        assert f"{n.arithmetic_intensity:,.3g} FLOP/byte" in card and "below the ridge point, 560" in card
        assert "Source  experimental/users/davelacey/" in card  # the source line (folded at this width)
        assert "filter 'broadcast_add_fusion.1'" in tree.border_title
        # Esc clears the filter (and only then goes back).
        await pilot.press("escape")
        assert screen.needle == "" and app.screen is screen
        assert "IDLE" in [c.data.name for c in tree.root.children if c.data]
        # s: time -> FLOPS rate -> memory bandwidth -> name -> time.
        await pilot.press("s", "s")
        assert screen.sort == "memory bandwidth" and "by memory bandwidth · s sort" in tree.border_title
        utils = [c.data.hbm_bandwidth_utilization for c in tree.root.children if c.data]
        assert utils == sorted(utils, reverse=True)
        await pilot.press("s")
        names = [c.data.name.lower() for c in tree.root.children if c.data]
        assert names == sorted(names)
        await pilot.press("s")
        assert screen.sort == "time"
        await pilot.press("slash", *"no such op", "enter")
        await pilot.pause()
        assert "nothing matches 'no such op'" in str(tree.root.children[0].label)


async def test_hlo_stats_and_roofline_keys():
    app = make_app("tpu_v6e_inference", "hlo_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HloStatsScreen) and screen.error is None
        table = screen.query_one("#hlo", FrameTable)
        assert table.row_count == 17 and table.row(0)["hlo_op_name"] == "copy-done.4"
        await pilot.press("down")
        await pilot.pause()
        assert screen.expression.startswith("%copy-done.2 =")
        app.open_tool("roofline_model")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RooflineScreen) and screen.error is None
        ops = screen.query_one("#ops", FrameTable)
        assert ops.row_count == 17
        await pilot.press("e")
        assert screen.include_feed is False and ops.row_count == 17  # no infeed ops here
        await pilot.press("down", "down", "down", "down")  # a fusion: it has flops, drawn as ◆
        await pilot.pause()
        assert ops.row()["operation"].startswith("broadcast_add_fusion") and "◆" in screen.chart_text.plain


def test_scatter_draws_roof_and_points():
    text = scatter([(0.125, 164.0), (0.0, 0.0), (10.0, 5000.0)], 918000.0, 1525.5, width=40, height=10,
                   mark=(10.0, 5000.0)).plain
    assert "╱" in text and "─" in text and "●" in text and "◆" in text
    assert "2 of 3 ops have flops" in text


async def test_kernel_stats_keys():
    app = make_app("gpu_kernels", "kernel_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, KernelStatsScreen) and screen.error is None
        table = screen.query_one("#kernels", FrameTable)
        assert table.row_count == 7
        for _ in range(3):  # numbers first: kernel name, total, average, then the occurrences column
            await pilot.press("right")
        await pilot.press("s")  # numbers sort largest first
        assert table.sort_by == ("occurrences", True) and table.row(0)["occurrences"] == 6


async def test_cpu_profile_says_why_op_profile_is_empty():
    app = make_app("jax_mlp", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "TPU" in (app.screen.error or "")


async def open_trace(pilot, key: str = "v") -> TraceViewerScreen:
    """Press `key` on an op screen and wait for the trace viewer it opens to have its index."""
    await pilot.press(key)
    for _ in range(100):
        await settle(pilot)
        screen = pilot.app.screen
        if isinstance(screen, TraceViewerScreen) and screen.timeline is not None:
            return screen
    raise AssertionError(f"no trace viewer after {key!r}: {pilot.app.screen}")


def selected(trace: TraceViewerScreen) -> list[str]:
    tl = trace.timeline
    return [tl.ix.event_name(int(i)) for i in tl.selection]


async def test_framework_op_stats_units_charts_and_csv_names(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    app = make_app("tpu_v6e_inference", "framework_op_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#ops", FrameTable)
        # Times in human units (no unit in the header), other units in the header.
        assert "total_self_time" in table.frame.columns and "measured_flop_rate (GFLOP/s)" in table.frame.columns
        # Only the device has ops here: its two charts, as shares of the device's self time.
        charts = list(screen.query(HBarChart))
        assert [c.title for c in charts] == ["Device: self time by op", "Device: self time by op type"]
        assert charts[0].items[0][0] == "copy-done.4" and charts[0].items[0][1] == pytest.approx(21.38, abs=0.01)
        assert sum(v for _, v in charts[1].items) == pytest.approx(100.0, abs=0.01)
        await pilot.press("x")  # the CSV has `tputui export`'s column names
        header = next(tmp_path.glob("framework_op_stats-*.csv")).read_text().splitlines()[0]
        assert header.startswith("rank,host_or_device,op_type,op_name,occurrences,total_time_us,")


async def test_roofline_csv_has_the_export_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    app = make_app("tpu_v6e_inference", "roofline_model")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")
        header = next(tmp_path.glob("roofline_model-*.csv")).read_text().splitlines()[0]
        assert header.split(",") == app.screen.result.rows.columns


async def test_framework_op_stats_chart_keeps_the_end_of_long_op_names():
    app = TputuiApp(open_logdir(str(FIXTURES / "pod" / "dcn_2slices")), tool="framework_op_stats")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        labels = [label for label, _ in app.screen.query_one("#device-ops", HBarChart).items]
        assert labels[0] == "…/convolution_fusion" and len(set(labels)) == len(labels)


async def test_framework_op_stats_without_framework_ops_says_so():
    app = make_app("jax_mlp", "framework_op_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        note = str(app.screen.query_one("#note").render())
        assert note.startswith("No framework ops in this profile") and not app.screen.query(HBarChart)


async def test_framework_op_stats_shows_a_host_op_in_the_trace_viewer():
    app = make_app("tf_loop", "framework_op_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#ops", FrameTable)
        await pilot.press("v")  # IDLE first: nothing to show, the screen stays
        await settle(pilot)
        assert isinstance(app.screen, FrameworkOpStatsScreen)
        await pilot.press("down", "down")
        row = table.row()
        assert row["operation"] == "Iterator::Root::Prefetch::MapAndBatch"
        trace = await open_trace(pilot, "enter")  # Enter opens a row too
        assert len(trace.timeline.selection) == row["occurrences"] == 19
        assert set(selected(trace)) == {"Iterator::MapAndBatch"}  # the trace's display name


async def test_hlo_stats_and_roofline_show_an_op_in_the_trace_viewer():
    app = make_app("tpu_v6e_inference", "hlo_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#hlo", FrameTable)
        assert table.formats["rank"](table.row()["rank"]) == "1"
        await pilot.press("down", "down", "down", "down")
        assert table.row()["hlo_op_name"] == "broadcast_add_fusion.1"
        trace = await open_trace(pilot)
        assert selected(trace) == ["broadcast_add_fusion.1"] * 400
        app.open_tool("roofline_model")
        await settle(pilot)
        ops = app.screen.query_one("#ops", FrameTable)
        assert ops.frame.columns[:6] == ["rank", "category", "operation", "bound_by",
                                         "operational_intensity (FLOP/B)", "measured_flop_rate (GFLOP/s)"]
        await pilot.press("down")
        assert ops.row()["operation"] == "copy-done.2"
        trace = await open_trace(pilot)
        assert selected(trace) == ["copy-done.2"] * 400


async def test_op_profile_shows_ops_categories_and_programs_in_the_trace_viewer():
    app = make_app("tpu_v6e_inference", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(Tree)
        assert str(tree.root.label).endswith("All programs  (4)")
        await pilot.press("down")  # the program jit_f(...): its runs on the XLA Modules line
        assert tree.cursor_node.data.name.startswith("jit_f(")
        trace = await open_trace(pilot)
        assert selected(trace) == ["jit_f(12190760917235803885)"] * 400
        app.open_tool("op_profile")
        await settle(pilot)
        await pilot.press("down", "down", "down")  # the "loop fusion" category: its three fusions
        assert app.screen.query_one(Tree).cursor_node.data.name == "loop fusion"
        trace = await open_trace(pilot)
        assert sorted(set(selected(trace))) == ["broadcast_add_fusion", "broadcast_add_fusion.1",
                                                "broadcast_add_fusion.2"]
        assert len(trace.timeline.selection) == 1200


async def test_all_hosts_jump_says_which_host_the_trace_shows():
    root = FIXTURES / "pod" / "pod_v4_32"
    app = TputuiApp(open_logdir(str(root)), tool="hlo_stats")
    said: list[str] = []  # every notification (the toasts expire after 6 s: a slow machine misses them)
    notify = app.notify
    app.notify = lambda message, *a, **kw: (said.append(str(message)), notify(message, *a, **kw))[1]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.host is None and app.screen.query_one("#hlo", FrameTable).row()["hlo_op_name"] == "fusion.12"
        trace = await open_trace(pilot)
        assert set(selected(trace)) == {"fusion.12"}
        assert any("the trace viewer shows one host" in m for m in said)


async def test_kernel_stats_shows_launches_in_the_trace_viewer():
    app = make_app("gpu_kernels", "kernel_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = app.screen.query_one("#kernels", FrameTable).row()
        trace = await open_trace(pilot)
        assert len(trace.timeline.selection) == row["occurrences"] == 4
        assert set(selected(trace)) == {row["kernel_name"]}


async def test_small_terminal_keeps_tables_and_values_visible():
    app = make_app("tpu_v6e_inference", "roofline_model")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#ops", FrameTable).size.height >= 8  # the chart leaves room
        app.open_tool("hlo_stats")
        await settle(pilot)
        assert len(app.screen.query_one("#top", HBarChart).items) == 4 and \
            app.screen.query_one("#hlo", FrameTable).size.height >= 8
    app = make_app("gpu_kernels", "kernel_stats")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chart = app.screen.query_one("#top", HBarChart)
        lines = [s.text for s in chart.render_lines(chart.region.reset_offset)]
        assert any(line.rstrip().endswith("1.21 µs") for line in lines)


async def test_op_profile_card_goes_under_the_tree_when_narrow():
    app = make_app("tpu_v6e_inference", "op_profile")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        tree, card = screen.query_one(Tree), screen.query_one("#card-box")
        assert screen.has_class("narrow") and card.region.y > tree.region.y and card.region.width == tree.region.width
        await pilot.resize_terminal(140, 40)
        await settle(pilot)
        assert not screen.has_class("narrow") and card.region.x > tree.region.x


async def test_screen_keys_are_hidden_without_a_result():
    app = make_app("jax_mlp", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.error and screen.check_action("show_in_trace", ()) is False
        assert screen.check_action("toggle_grouping", ()) is False
        await pilot.press("v", "b", "i")  # nothing happens, nothing breaks
        await settle(pilot)
        assert app.screen is screen and screen.error


@pytest.mark.parametrize("profile,tool,keys", [
    ("tf_loop", "framework_op_stats", ()),
    ("tpu_v6e_inference", "op_profile", ("down", "down")),
    ("tpu_v6e_inference", "hlo_stats", ()),
    ("tpu_v6e_inference", "roofline_model", ("down", "down", "down", "down")),
    ("gpu_kernels", "kernel_stats", ()),
])
def test_snapshot(snap_compare, profile, tool, keys):
    async def loaded(pilot):
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    assert snap_compare(make_app(profile, tool), terminal_size=SIZE, run_before=loaded)


def test_screen_csv_writes_nested_cells_like_export(tmp_path, monkeypatch):
    """`x` and `tputui export --format csv` share one writer: list cells become JSON text."""
    import polars as pl

    from tputui.export import csv_text
    from tputui.screens.op_tables import write_csv

    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    frame = pl.DataFrame({"op": ["a", "b"], "dims": [[1, 2], [3]]})
    path = write_csv(frame, "demo")
    assert open(path).read() == csv_text(frame) == 'op,dims\na,"[1, 2]"\nb,[3]\n'


async def test_an_active_filter_leads_the_table_title():
    """As in k9s: "/matmul 2 of 29 · Framework ops ..." while the filter is on, across a new title."""
    app = make_app("tf_loop", "framework_op_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#ops", FrameTable)

        def drawn() -> str:
            return table._border_title.plain

        assert drawn() == table.border_title and drawn().startswith("Framework ops (29)")
        await pilot.press("slash", *"matmul", "enter")
        n = table.row_count
        assert 0 < n < 29 and drawn() == f"/matmul {n} of 29 · {table.border_title}"
        await pilot.press("i")  # the screen sets a new title (IDLE hidden): the filter stays in front
        assert table.border_title.startswith("Framework ops (28)")
        assert drawn().startswith(f"/matmul {n} of 28 · Framework ops (28)")
        await pilot.press("escape")
        assert drawn() == table.border_title
