"""The advice screen from the keyboard: the list, the explanation, the ops, `v` / `G` jumps."""
from __future__ import annotations

from conftest import FIXTURES, PROFILES, settle

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.advice import AdviceScreen
from tputui.screens.graph_viewer import GraphViewerScreen
from tputui.screens.trace_viewer import TraceViewerScreen

SIZE = (120, 40)


def make_app(path) -> TputuiApp:
    return TputuiApp(open_logdir(str(path)), tool="smart_suggestion", use_cache=False)


def detail_text(screen) -> str:
    return str(screen.query_one("#advice-detail").render())


async def test_xprof_suggestion_first_with_its_text():
    app = make_app(FIXTURES / "advice" / "barrier_4hosts")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AdviceScreen) and screen.error is None
        assert screen.items.row()["title"] == "Cores waiting at barriers" and screen.items.row()["source"] == "XProf"
        assert "an average of 12.7% of each step time" in detail_text(screen)
        await pilot.press("tab", "v")  # an XProf rule names no op
        await pilot.pause()
        assert isinstance(app.screen, AdviceScreen)


async def test_rules_xprofs_converter_does_not_run_are_listed():
    """suggestions/host_input fires two of the rules only XProf's internal build runs: both listed,
    in XProf's order, with their text; the overview's recommendation panel lists them too."""
    app = make_app(FIXTURES / "suggestions" / "host_input")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AdviceScreen) and screen.error is None
        rows = screen.items.frame.filter(screen.items.frame["source"] == "XProf")["title"].to_list()
        assert rows == ["Host-to-device transfer bound", "Host input processing bound"]
        assert "bottlenecked by data transfer between Host and Device" in detail_text(screen)
        await pilot.press("down")
        await pilot.pause()
        assert "spent on host-side input data processing" in detail_text(screen)
        app.open_tool("overview_page")
        await settle(pilot)
        panel = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "Host-to-device transfer bound" in panel and "Host input processing bound" in panel


async def test_ops_of_a_check_jump_to_graph_and_trace():
    app = make_app(PROFILES / "tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.items.row()["title"] == "Host offload traffic"
        assert screen.ops.frame["op"].to_list()[:2] == ["copy-done", "copy-done.1"]
        await pilot.press("tab", "down", "G")
        await settle(pilot)
        assert isinstance(app.screen, GraphViewerScreen) and app.screen.graph.node == "copy-done.1"
        app.open_tool("smart_suggestion")
        await settle(pilot)
        await pilot.press("tab", "v")
        for _ in range(40):
            await settle(pilot)
            if isinstance(app.screen, TraceViewerScreen) and app.screen.timeline is not None:
                break
        tl = app.screen.timeline
        assert {tl.ix.event_name(int(i)) for i in tl.selection} == {"copy-done"}


def test_advice_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app(FIXTURES / "advice" / "barrier_4hosts"), terminal_size=SIZE, run_before=loaded)


def test_advice_small_terminal_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app(PROFILES / "jax_mlp"), terminal_size=(80, 24), run_before=loaded)


def test_advice_no_color_snapshot(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app(PROFILES / "tf_loop"), terminal_size=SIZE, run_before=loaded)


def test_advice_light_theme_snapshot(snap_compare):
    async def loaded(pilot):
        pilot.app.theme = "textual-light"
        await settle(pilot)

    assert snap_compare(make_app(PROFILES / "tpu_v6e_inference"), terminal_size=SIZE, run_before=loaded)
