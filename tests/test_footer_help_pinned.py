"""`?` stays visible at 80x24 on every screen, pinned at the right of the footer beside
`^p palette`, however many keys the screen has."""
from __future__ import annotations

import pytest
from conftest import make_app, settle
from textual.widgets._footer import FooterKey

from tputui.tools import TOOLS


@pytest.mark.parametrize("tool", ["overview_page", "trace_viewer", "op_profile", "memory_profile"])
async def test_help_key_is_on_screen_at_80x24(tool):
    app = make_app("tf_keras" if tool == "memory_profile" else "tpu_v6e_inference", tool)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = {k.action: k for k in app.screen.query(FooterKey)}
        help_key, palette = keys["help"], keys["command_palette"]
        for key in (help_key, palette):
            region = key.region
            assert region.width > 0 and region.y == 23 and 0 <= region.x and region.right <= 80
        assert help_key.region.right <= palette.region.x  # side by side, not on top of each other
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"


def test_every_screen_tool_uses_the_pinned_footer():
    import inspect

    from tputui.screens import base

    assert "KeyFooter()" in inspect.getsource(base.ToolScreen.compose)
    assert all(t.screen_class() is None or issubclass(t.screen_class(), base.ToolScreen) for t in TOOLS)
