"""The screens' view of the app (screens/app_api.py): TputuiApp provides all of it, and a screen
hosted by another app is told so in one line instead of failing on a missing attribute."""
from __future__ import annotations

import pytest
from conftest import make_app
from textual.app import App
from textual.widgets import Static

from tputui.app import TputuiApp
from tputui.screens.app_api import ToolsApp, tools_app


def test_the_app_implements_every_method_screens_call():
    asked = [n for n, v in vars(ToolsApp).items() if callable(v) and not n.startswith("_")]
    assert {"open_tool", "open_run", "open_run_data", "tools_with_data", "go_back"} <= set(asked)
    for name in asked:
        assert getattr(TputuiApp, name) is not getattr(ToolsApp, name), name  # not the NotImplementedError stub


async def test_the_app_holds_every_attribute_screens_read():
    app = make_app("jax_mlp")
    async with app.run_test(size=(100, 30)):
        assert tools_app(app.screen) is app
        for name in ToolsApp.__annotations__:
            assert hasattr(app, name), name
        assert (app.jobs, app.dask, app.use_cache) == (None, None, True)


async def test_a_screen_in_another_app_is_told_which_app_it_needs():
    class Host(App[None]):
        def compose(self):
            yield Static("x", id="x")

    app = Host()
    async with app.run_test(size=(40, 5)):
        with pytest.raises(TypeError, match="needs tputui's app, not Host"):
            tools_app(app.query_one("#x"))


async def test_a_screen_s_result_is_typed_and_loaded_only_once_drawn():
    """ToolScreen[R]: `result` is None until the worker's Loaded arrives; `loaded` (what code
    running after the draw reads) is the same object then, and says so in one line before."""
    from tputui.analysis.overview import OverviewResult
    from tputui.screens.overview import OverviewScreen
    from tputui.tools import get_tool

    app = make_app("jax_mlp", tool="overview_page")
    early = OverviewScreen(app.run_data, None, get_tool("overview_page"))
    with pytest.raises(RuntimeError, match="not loaded yet"):
        _ = early.loaded
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        screen = app.screen
        assert isinstance(screen, OverviewScreen) and isinstance(screen.result, OverviewResult)
        assert screen.loaded is screen.result
