"""The command palette lists the same tools as `t` and every action: SQL, diff, capture, CSV,
and the screen's own keys (go to, stack hosts, ...)."""
from __future__ import annotations

from conftest import make_app, settle

from tputui.app import TputuiCommands
from tputui.screens.sql import SqlScreen


def palette(app) -> dict[str, object]:
    return {text: cb for text, cb, _ in TputuiCommands(app.screen)._items()}


async def test_palette_tools_are_the_pickers_and_every_action_is_there():
    app = make_app("jax_mlp", "framework_op_stats")  # a CPU run: no megascale, no HLO stats
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        items = palette(app)
        tools = {t.split(": ", 1)[1] for t in items if t.startswith("Open tool: ")}
        assert "Megascale stats" not in tools and "HLO stats" not in tools
        assert tools == {t.title for t in __import__("tputui.tools").tools.TOOLS
                         if t.name in app.tools_with_data(app.run_data)}
        assert sum("CSV" in t for t in items) == 1
        for wanted in ("SQL prompt over this run", "Compare with another run or logdir (diff)",
                       "Capture a profile from a live server", "Framework op stats: Write the table as CSV"):
            assert wanted in items, sorted(items)
        items["SQL prompt over this run"]()
        await settle(pilot)
        assert isinstance(app.screen, SqlScreen)


async def test_palette_offers_the_trace_viewers_keys():
    app = make_app("tf_loop", "trace_viewer")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        items = palette(app)
        assert "Trace viewer: Go to" in items and "Trace viewer: Stack hosts" in items
        assert not any("CSV" in t for t in items)  # no table here: x would only refuse
        items["Trace viewer: Go to"]()
        await settle(pilot)
        assert app.screen.query_one("#prompt").has_class("visible")
