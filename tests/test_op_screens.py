"""The op-tool screens driven from the keyboard (Pilot), plus one SVG snapshot per screen."""
from __future__ import annotations

import pytest
from textual.widgets import Tree

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.framework_op_stats import FrameworkOpStatsScreen
from tputui.screens.hlo_stats import HloStatsScreen
from tputui.screens.kernel_stats import KernelStatsScreen
from tputui.screens.op_profile import OpProfileScreen
from tputui.screens.roofline import RooflineScreen, scatter
from tputui.widgets.table import FrameTable

from conftest import FIXTURES, PROFILES

SIZE = (120, 40)


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def make_app(profile: str, tool: str) -> TputuiApp:
    root = FIXTURES / "gpu_kernels" if profile == "gpu_kernels" else PROFILES / profile
    return TputuiApp(open_logdir(str(root)), tool=tool)


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
        await pilot.press("g")  # by category
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
        await pilot.press("i")
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
        for _ in range(10):  # to the occurrences column
            await pilot.press("right")
        await pilot.press("s")  # numbers sort largest first
        assert table.sort_by == ("occurrences", True) and table.row(0)["occurrences"] == 6


async def test_cpu_profile_says_why_op_profile_is_empty():
    app = make_app("jax_mlp", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "TPU" in (app.screen.error or "")


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
