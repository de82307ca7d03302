"""The graph viewer screen from the keyboard: text view (folding, search), neighbourhood (Enter
follows an edge, Esc goes back, +/- depth), `b` body, `v` trace viewer, and `G` from the op tools."""
from __future__ import annotations

from conftest import PROFILES, settle
from textual.widgets import Tree

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.graph_viewer import GraphViewerScreen, NeighbourhoodTable
from tputui.screens.hlo_stats import HloStatsScreen
from tputui.screens.memory_viewer import MemoryViewerScreen
from tputui.screens.op_profile import OpProfileScreen
from tputui.screens.trace_viewer import TraceViewerScreen

SIZE = (120, 40)
TPU = "tpu_v6e_inference"
JIT_F = "jit_f(12190760917235803885)"


def make_app(profile: str = TPU, tool: str = "graph_viewer") -> TputuiApp:
    return TputuiApp(open_logdir(str(PROFILES / profile)), tool=tool, use_cache=False)


def cursor_instruction(screen: GraphViewerScreen) -> str | None:
    return screen.selected()


async def test_text_view_starts_at_the_entry_and_enter_opens_the_neighbourhood():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GraphViewerScreen) and screen.error is None
        assert screen.result.module == JIT_F  # the largest module when none is asked for
        tree = screen.query_one(Tree)
        entry = [n for n in tree.root.children if n.is_expanded]
        assert len(entry) == 1 and entry[0].data == ("computation", "main.22_spmd")
        assert tree.cursor_node is entry[0]
        await pilot.press("down")
        assert cursor_instruction(screen) == "param"
        await pilot.press("enter")
        await pilot.pause()
        assert screen.graph is not None and screen.graph.node == "param"
        table = screen.query_one(NeighbourhoodTable)
        assert table.display and table.frame["name"][0] == "param" and table.frame["distance"][0] == 0
        # depth 3 (XProf's default) around the parameter: its copy, the fusion that reads the copy, ...
        assert {"copy-start", "copy-done", "broadcast_add_fusion.2"} <= set(table.frame["name"].to_list())
        # l switches between the neighbourhood and the text (it was g, which is the trace viewer's go-to).
        await pilot.press("l")
        await pilot.pause()
        assert screen.graph is None and tree.display and cursor_instruction(screen) == "param"
        await pilot.press("l")
        await pilot.pause()
        assert screen.graph is not None and screen.graph.node == "param"


async def test_enter_follows_an_edge_and_esc_goes_back_then_to_the_text():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        screen._open_graph("copy-done.4")
        await pilot.pause()
        table = screen.query_one(NeighbourhoodTable)
        names = table.frame["name"].to_list()
        await pilot.press(*["down"] * names.index("broadcast_add_fusion"), "enter")
        await pilot.pause()
        assert screen.graph.node == "broadcast_add_fusion" and screen.history == ["copy-done.4"]
        await pilot.press("minus")
        assert screen.graph.depth == 2 and screen.graph.node == "broadcast_add_fusion"
        await pilot.press("plus", "plus")
        assert screen.graph.depth == 4
        await pilot.press("escape")
        await pilot.pause()
        assert screen.graph.node == "copy-done.4" and screen.history == []
        await pilot.press("escape")
        await pilot.pause()
        await pilot.pause()
        assert screen.graph is None and screen.query_one(Tree).display
        assert cursor_instruction(screen) == "copy-done.4"  # the text shows where we were


async def test_search_body_and_module_picker():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("m", *"train_step", "enter")
        await settle(pilot)
        assert screen.result.module == "jit_train_step(32)"
        await pilot.press("slash", *"wrapped_reduce =", "enter")
        await pilot.pause()
        await pilot.pause()
        assert cursor_instruction(screen) == "wrapped_reduce"
        await pilot.press("j")  # the fusion's body: the text at its computation's ROOT
        await pilot.pause()
        await pilot.pause()
        assert cursor_instruction(screen) == "reduce_sum.24"
        await pilot.press("slash", *"no such thing", "enter")
        await pilot.pause()
        assert screen.matches == []


async def test_v_opens_the_trace_viewer_on_the_instruction():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.screen._open_graph("copy-done.4")
        await pilot.pause()
        await pilot.press("v")
        for _ in range(40):
            await settle(pilot)
            if isinstance(app.screen, TraceViewerScreen) and app.screen.timeline is not None:
                break
        tl = app.screen.timeline
        # copy-done.4 runs on the TPU cores (100 steps x 4 cores): those events are selected
        assert {tl.ix.event_name(int(i)) for i in tl.selection} == {"copy-done.4"} and len(tl.selection) == 400


async def test_G_from_op_profile_hlo_stats_and_memory_viewer():
    app = make_app(tool="hlo_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, HloStatsScreen)
        name = app.screen.table.row()["hlo_op_name"]
        await pilot.press("G")
        await settle(pilot)
        assert isinstance(app.screen, GraphViewerScreen) and app.screen.graph.node == name
        assert app.screen.result.module == JIT_F
        app.open_tool("op_profile")
        await settle(pilot)
        assert isinstance(app.screen, OpProfileScreen)
        await pilot.press("G")  # the root groups every op
        await pilot.pause()
        assert isinstance(app.screen, OpProfileScreen)
        app.open_tool("memory_viewer")
        await settle(pilot)
        assert isinstance(app.screen, MemoryViewerScreen)
        await pilot.press("G")
        await settle(pilot)
        assert isinstance(app.screen, GraphViewerScreen) and app.screen.graph is not None


def test_graph_viewer_text_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=loaded)


def test_graph_viewer_neighbourhood_snapshot(snap_compare):
    async def hood(pilot):
        await settle(pilot)
        pilot.app.screen._open_graph("broadcast_add_fusion")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=hood)


def test_graph_viewer_small_terminal_snapshot(snap_compare):
    async def hood(pilot):
        await settle(pilot)
        pilot.app.screen._open_graph("dot")
        await pilot.pause()

    assert snap_compare(make_app("jax_live_capture"), terminal_size=(80, 24), run_before=hood)


def test_graph_viewer_no_color_snapshot(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=loaded)


def test_graph_viewer_light_theme_snapshot(snap_compare):
    async def loaded(pilot):
        pilot.app.theme = "textual-light"
        await settle(pilot)
        pilot.app.screen._open_graph("copy-done.4")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=loaded)
