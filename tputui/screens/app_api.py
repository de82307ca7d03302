"""What the screens ask of the app that hosts them, as a type they may name.

Screens may not import `tputui.app` (the layers contract: app > screens), yet they open tools,
switch runs and read the logdir through it. `ToolsApp` is the app's side of that contract:
`TputuiApp` is its one implementation; a screen reaches it with `tools_app(self)`.
"""
from __future__ import annotations

from typing import Any

from textual.app import App
from textual.message_pump import MessagePump
from textual.screen import Screen

from tputui.data.logdir import Logdir
from tputui.data.run_data import RunData


class ToolsApp(App[None]):
    """The app the tool screens run in (implemented by tputui.app.TputuiApp)."""

    logdir: Logdir
    run_data: RunData  # the run the pickers act on
    host: str | None  # None: all hosts
    use_cache: bool
    jobs: int | None  # how multi-host analyses run (RunData's jobs / dask)
    dask: str | None

    def open_tool(self, name: str, replace: bool = False, **options: Any) -> None:
        """Push `name`'s screen for the current run and host (`options` go to its analysis)."""
        raise NotImplementedError

    def open_run(self, name: str) -> None:
        """Switch to the logdir's run `name`, on the current tool."""
        raise NotImplementedError

    def open_run_data(self, run: RunData, host: str | None, tool: str, **options: Any) -> None:
        """Open `tool` on a run the diff or SQL screen holds (maybe of another logdir)."""
        raise NotImplementedError

    def tools_with_data(self, run: RunData) -> list[str]:
        """The tools with data in `run` (computed once per run)."""
        raise NotImplementedError

    def go_back(self) -> None:
        """Back to the previous tool screen (Esc), or say there is none."""
        raise NotImplementedError

    def no_data_on_first_screen(self, screen: Screen[Any]) -> bool:
        """The default first screen has nothing to show: another takes its place (True)."""
        raise NotImplementedError


def tools_app(node: MessagePump) -> ToolsApp:
    """The ToolsApp `node` runs in (a screen of tputui's app)."""
    app = node.app
    if not isinstance(app, ToolsApp):
        raise TypeError(f"{type(node).__name__} needs tputui's app, not {type(app).__name__}")
    return app
