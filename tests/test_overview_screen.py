"""Overview and input pipeline screens from the keyboard: step cursor, tables, next-tool keys."""
from __future__ import annotations

import os

import conftest
import pytest
from conftest import PROFILES, settle

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.input_pipeline import InputPipelineScreen
from tputui.screens.overview import OverviewScreen
from tputui.widgets.charts import StackedColumns
from tputui.widgets.table import FrameTable

SIZE = (120, 40)


def make_app(profile: str, tool: str = "overview_page"):
    return conftest.make_app(profile, tool, use_cache=False)


def text_of(screen, selector: str) -> str:
    """The plain text a Static shows (rich tables included)."""
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(screen.query_one(selector).content)
    return console.export_text()


async def test_overview_step_cursor_reads_each_step():
    app = make_app("tf_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OverviewScreen) and screen.error is None
        chart = screen.query_one(StackedColumns)
        assert chart.has_focus and len(chart.values) == 18
        card = lambda: text_of(screen, "#ov-steps .card")
        assert card().startswith("Step train 1: 1.294 ms")
        await pilot.press("right", "right")
        assert chart.cursor == 2
        assert card().startswith("Step train 3: 23.201 ms") and "Input 21.178 (91.3%)" in card()
        await pilot.press("end")
        assert card().startswith("Step train 18")
        summary = text_of(screen, "#ov-summary")
        assert "20.010 ms" in summary and "n/a on CPU/GPU" in summary
        rec = text_of(screen, "#ov-rec")
        assert "HIGHLY input-bound because 90.7%" in rec and "input_pipeline_analyzer" in rec
        # n: open the tool XProf recommends next (input-bound -> input pipeline analyzer).
        await pilot.press("J")
        await settle(pilot)
        assert isinstance(app.screen, InputPipelineScreen)


async def test_overview_tpu_top_ops_and_idle():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        summary = text_of(screen, "#ov-summary")
        assert "13.4%" in summary and "86.5%" in summary  # device idle, duty cycle
        assert "No step-time graph" in text_of(screen, "#ov-no-steps")
        table = screen.query_one("#ov-ops", FrameTable)
        assert table.has_focus and table.row_count == 10
        assert table.row(0)["operation"] == "copy-done.4"
        await pilot.press("slash", *"jit", "enter")
        assert table.row_count == 3 and table.row(0)["operation"] == "jit(f)/jit(main)/add"
        # No steps, so nothing to recommend.
        await pilot.press("J")
        assert isinstance(app.screen, OverviewScreen)
        assert "No step marker observed" in text_of(screen, "#ov-diag")


async def test_overview_csv_export(tmp_path, monkeypatch):
    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
    (csv,) = list(tmp_path.iterdir())
    assert os.path.basename(csv).startswith("overview_page-")
    header, first = csv.read_text().splitlines()[:2]
    assert header == "time %,cumulative %,category,operation,GFLOP/s"
    assert first.startswith("24.68") and ",Unknown,copy-done.4," in first


async def test_input_pipeline_screen_sections():
    app = make_app("tf_loop", "input_pipeline_analyzer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InputPipelineScreen) and screen.error is None
        assert "HIGHLY input-bound" in text_of(screen, "#ip-verdict")
        device = text_of(screen, "#ip-device")
        assert "20.010" in device and "81.5" in device
        tfd = text_of(screen, "#ip-tfdata")
        assert "MapAndBatch" in tfd and "18 slow" in tfd
        chart = screen.query_one(StackedColumns)
        assert chart.has_focus
        await pilot.press("right")
        assert text_of(screen, "#ip-steps .card").startswith("Step train 2")
        await pilot.press("tab")
        ops = screen.query_one("#ip-ops", FrameTable)
        assert ops.has_focus and ops.row_count == 5
        assert ops.row(0)["name"] == "Iterator::Root::Prefetch::MapAndBatch"
        await pilot.press("right", "s")  # sort by count, descending
        assert ops.row(0)["count"] == 547
        await pilot.press("O")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)


async def test_input_pipeline_without_steps_or_tf_data():
    app = make_app("jax_mlp", "input_pipeline_analyzer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert "POTENTIALLY input-bound" in text_of(screen, "#ip-verdict")
        assert "No tf.data input pipeline" in text_of(screen, "#ip-tfdata")
        # No input ops: one line in place of an empty table.
        assert not screen.query("#ip-ops")
        assert text_of(screen, "#ip-no-ops").strip() == (
            "No input ops on the host: no tf.data or infeed activity in this profile.")


def test_overview_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)
        await pilot.press("right", "right")

    assert snap_compare(make_app("tf_loop"), terminal_size=SIZE, run_before=loaded)


def test_overview_tpu_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app("tpu_v6e_inference"), terminal_size=SIZE, run_before=loaded)


def test_input_pipeline_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app("tf_loop", "input_pipeline_analyzer"), terminal_size=SIZE, run_before=loaded)


async def test_input_pipeline_tpu_steps_use_tensorcore_categories():
    app = TputuiApp(open_logdir(str(PROFILES.parent / "pod" / "pod_v5e_single")), tool="input_pipeline_analyzer",
                    use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert "MODERATELY input-bound because 6.5%" in text_of(screen, "#ip-verdict")
        card = text_of(screen, "#ip-steps .card")
        assert card.startswith("Step 0: 2.860 ms") and "TensorCore compute 2.600" in card
        assert "Input (infeed) 0.203" in card


async def test_step_graph_has_a_y_axis_in_ms():
    app = make_app("tf_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        axis = text_of(app.screen, "#ov-steps .axis").splitlines()
        # The tallest step (train 3... max 25.918 ms) is the top of the scale, 0 the bottom bar row.
        assert axis[0].strip() == "25.9 ms ┤" and axis[8].strip() == "0 ┤"
        assert axis[4].strip() == "14.4 ┤"  # 25.918 * 5/9: the top of the middle row


async def test_overview_tpu_steps_state_the_input_verdict():
    """XProf leaves the generic bottleneck empty for TPU steps; the card says the input verdict."""
    app = TputuiApp(open_logdir(str(PROFILES.parent / "pod" / "pod_v5e_single")), tool="overview_page",
                    use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rec = text_of(app.screen, "#ov-rec")
        assert rec.startswith("Bottleneck: input and device (possibly input-bound)")
        assert "MODERATELY input-bound because 6.5%" in rec
        summary = text_of(app.screen, "#ov-summary")
        assert "2.856 ms over 6 steps" in summary and "σ 0.025 · min 2.818 · max 2.896 ms" in summary


async def test_overview_without_device_ops_says_so_in_one_line():
    app = make_app("tf_keras")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert not screen.query("#ov-ops")
        assert text_of(screen, "#ov-no-ops").strip() == "No device ops: this profile has no TPU or GPU device."
        assert text_of(screen, "#ov-no-steps").startswith("No step-time graph: no step markers")
        await pilot.press("x")
        await pilot.pause()
        assert any("nothing to export" in str(n.message) for n in app._notifications)


async def test_overview_ops_table_is_as_tall_as_its_rows():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # 10 rows + header + border: the whole table, no blank rows below.
        assert app.screen.query_one("#ov-ops", FrameTable).size.height == 11


async def test_overview_small_terminal_stacks_panes_and_follows_the_step_cursor():
    app = make_app("tf_loop")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.query_one("#ov-top").has_class("narrow")
        summary, rec = screen.query_one("#ov-summary"), screen.query_one("#ov-rec")
        assert rec.region.y > summary.region.y and summary.region.width > 70
        scroll = screen.query_one("#ov-scroll")
        assert scroll.scroll_y == 0  # the summary first; the graph is below the fold
        await pilot.press("right")
        await pilot.pause(0.3)
        chart = screen.query_one("#ov-steps")
        assert scroll.scroll_y > 0 and chart.region.y >= scroll.region.y
        assert text_of(screen, "#ov-steps .card").startswith("Step train 2")
        await pilot.resize_terminal(140, 40)
        await pilot.pause()
        assert not screen.query_one("#ov-top").has_class("narrow")


async def test_input_pipeline_sections_are_numbered_like_xprof():
    app = make_app("tf_loop", "input_pipeline_analyzer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        titles = [w.border_title for w in (screen.query_one(s) for s in
                                           ("#ip-verdict", "#ip-steps", "#ip-device", "#ip-host", "#ip-ops"))]
        # XProf's section numbers, each part lettered so no label repeats (2a, 2c, 3a, 3b).
        assert [t.split(" · ")[0] for t in titles] == ["1", "2a", "2c", "3a", "3b"]
        # "Section 3" in the verdict names a section on this screen.
        assert "Section 3" in text_of(screen, "#ip-verdict")
        host = text_of(screen, "#ip-host")
        assert "Reading data from files in advance" in host and "Other data reading or processing" in host
        assert "…" not in host
        assert "Per step, input is 81.5% of the step time on average" in text_of(screen, "#ip-verdict")


async def test_small_terminal_brings_the_focused_ops_table_into_view():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        scroll, table = screen.query_one("#ov-scroll"), screen.query_one("#ov-ops", FrameTable)
        assert table.has_focus and scroll.scroll_y == 0  # the summary first
        await pilot.press("down")
        await pilot.pause(0.3)
        assert table.cursor_row == 1 and scroll.scroll_y > 0
        assert table.region.y >= scroll.region.y


POD = PROFILES.parent / "pod" / "pod_v4_32"


async def test_input_pipeline_draws_input_wait_across_cores_per_step():
    app = TputuiApp(open_logdir(str(POD)), tool="input_pipeline_analyzer", use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        steps = screen.result.step_table
        lines = text_of(screen, "#ip-core-range").splitlines()
        top, bottom = steps["infeed_percent_max"].max(), steps["infeed_percent_min"].min()
        assert lines[0].strip().startswith(f"{top:.1f} ┤") and lines[5].strip().startswith(f"{bottom:.1f} ┤")
        plot = [line.split("┤", 1)[1] for line in lines[:6]]
        assert sum(line.count("●") for line in plot) == steps.height  # one average per step
        assert all(line.count("│") + line.count("●") == steps.height for line in plot)  # min..max spans every row here
        assert "32 cores" in lines[-1] and "step 4" in lines[-1]
    app = make_app("tf_loop", "input_pipeline_analyzer")  # host steps: no cores, no range
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.screen.query("#ip-core-range")


@pytest.mark.parametrize("look", ["no_color", "light", "small"])
def test_input_pipeline_core_range_looks(snap_compare, monkeypatch, look):
    env, theme, size = {"no_color": ({"NO_COLOR": "1"}, None, (120, 36)), "light": ({}, "textual-light", (120, 36)),
                        "small": ({}, None, (80, 24))}[look]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    app = TputuiApp(open_logdir(str(POD)), tool="input_pipeline_analyzer", use_cache=False)
    if theme:
        app.theme = theme

    async def shown(pilot):
        await settle(pilot)
        pilot.app.screen.query_one("#ip-core-range").scroll_visible(animate=False)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=shown)
