"""The fallback screen for a tool without its own: its tables, one tab each."""
from __future__ import annotations

from textual.widgets import Static, TabbedContent, TabPane

from tputui.screens.base import ToolScreen
from tputui.widgets.table import FrameTable


class GenericToolScreen(ToolScreen[object]):
    def show(self, result: object) -> None:
        tables = result.tables() if hasattr(result, "tables") else {}
        if not tables:
            self.body.mount(Static("This tool has no table to show here; use `tputui export --format json`."))
            return
        tabs = TabbedContent()
        self.body.mount(tabs)
        for name, frame in tables.items():
            tabs.add_pane(TabPane(name, FrameTable(frame)))
