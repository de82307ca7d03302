"""Esc goes back: after a jump (v, Enter, t) the screen left behind comes back exactly as it was
(same screen object: cursor, sort, filter, scroll), and the pickers act on it again."""
from __future__ import annotations

from conftest import PROFILES

from tputui.app import HISTORY, TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.framework_op_stats import FrameworkOpStatsScreen
from tputui.screens.trace_viewer import TraceViewerScreen
from tputui.widgets.table import FrameTable


async def settle(pilot) -> None:
    for _ in range(100):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        screen = pilot.app.screen
        if not isinstance(screen, TraceViewerScreen) or (screen.timeline is not None and screen.index.exact):
            break
    await pilot.pause()


async def test_esc_after_show_in_trace_returns_to_the_table_as_it_was():
    app = TputuiApp(open_logdir(str(PROFILES / "tf_loop")), tool="framework_op_stats")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        fos = app.screen
        table = fos.query_one("#ops", FrameTable)
        await pilot.press("right", "s", "s")  # sort by total self time, smallest first
        await pilot.press("slash", *"iterator", "enter")
        await pilot.press("down", "down")
        state = (table.sort_by, table.filter_text, table.cursor_row, table.row()["operation"], table.row_count)
        assert state[0] == ("total_self_time", False) and state[2] == 2
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen) and len(app.screen.timeline.selection)
        assert app.tool_name == "trace_viewer"
        await pilot.press("escape")  # first Esc clears the selection (the trace viewer's own Esc)
        assert isinstance(app.screen, TraceViewerScreen) and not len(app.screen.timeline.selection)
        await pilot.press("escape")  # then back
        await pilot.pause()
        assert app.screen is fos and app.tool_name == "framework_op_stats"
        assert (table.sort_by, table.filter_text, table.cursor_row, table.row()["operation"], table.row_count) == state
        await pilot.press("escape")  # the table's own Esc: clear its filter
        assert app.screen is fos and table.filter_text == "" and table.row_count == 29
        await pilot.press("escape")  # the first screen: nothing to go back to, the app stays
        await pilot.pause()
        assert app.screen is fos and app.is_running


async def test_tool_picks_are_history_too_and_it_is_bounded():
    """Past HISTORY screens the oldest is forgotten: every Esc still returns to the screen the
    user came from, in order, down to the oldest one kept."""
    app = TputuiApp(open_logdir(str(PROFILES / "tf_loop")), tool="summary")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        opened = [app.screen]
        for i in range(HISTORY + 3):
            app.open_tool("framework_op_stats" if i % 2 == 0 else "summary")
            await settle(pilot)
            opened.append(app.screen)
        assert len(app.screen_stack) == HISTORY + 1  # the default screen + HISTORY tool screens
        assert isinstance(app.screen, FrameworkOpStatsScreen)
        assert app.screen_stack[1:] == opened[-HISTORY:]
        for expected in reversed(opened[-HISTORY:-1]):
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is expected
        await pilot.press("escape")  # the oldest kept: nothing to go back to, the app stays
        await pilot.pause()
        assert len(app.screen_stack) == 2 and app.screen is opened[-HISTORY] and app.is_running
