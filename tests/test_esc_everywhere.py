"""Esc always returns to where you were: from every tool's screen (as it opens, nothing selected
or filtered) one Esc goes back to the screen before it, the same screen object."""
from __future__ import annotations

import pytest
from conftest import make_app, settle
from test_registry import PROFILE_FOR

from tputui.screens.sql import SqlScreen
from tputui.tools import TOOLS


@pytest.mark.parametrize("tool", [t.name for t in TOOLS if t.screen and t.name != "summary"])
async def test_one_esc_from_every_tool_screen_goes_back(tool):
    app = make_app(PROFILE_FOR.get(tool, "tpu_v6e_inference"), "summary")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = app.screen
        app.open_tool(tool)
        await settle(pilot)
        assert app.screen is not before and app.tool_name == tool
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is before and app.tool_name == "summary"


async def test_esc_from_the_sql_prompt_goes_back():
    app = make_app("tf_loop", "framework_op_stats")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = app.screen
        await pilot.press("colon")
        await settle(pilot)
        assert isinstance(app.screen, SqlScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is before
