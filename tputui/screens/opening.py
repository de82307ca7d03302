"""The app's first frame: the first tool's context bar, "loading…" and keys, drawn at once while a
thread imports that tool's screen module (its widgets and Polars: ~0.5 s before any frame was
drawn), then replaced by the tool's screen (app.open_tool)."""
from __future__ import annotations

from textual import work
from textual.message import Message

from tputui.screens.app_api import tools_app
from tputui.screens.base import ToolScreen


class OpeningScreen(ToolScreen):
    ready = False  # the tool's screen module is imported
    loads_on_mount = False  # no analysis here: the tool's own screen loads it

    def on_mount(self) -> None:
        self.call_after_refresh(self._import)  # after the first frame: the import holds the GIL

    def action_reload(self) -> None:  # the tool's screen, a moment away, loads afresh anyway
        pass

    class Imported(Message, bubble=False):
        pass

    @work(thread=True, group="opening", description="importing the first screen")
    def _import(self) -> None:
        self.tool.screen_class()
        # A message, not call_from_thread: that would wait for the switch, which removes this
        # screen and so cancels this very worker (settle()'s wait would raise WorkerCancelled).
        self.post_message(self.Imported())

    def on_opening_screen_imported(self) -> None:
        self.ready = True
        self._open()

    def on_screen_resume(self) -> None:  # back here after a picker opened meanwhile
        self._open()

    def _open(self) -> None:
        if self.ready and self.app.screen is self:
            tools_app(self).open_tool(self.tool.name, replace=True, **self.options)
