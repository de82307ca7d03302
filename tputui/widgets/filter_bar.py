"""The `/` filter line under a FrameTable: filters as you type, Enter keeps, Esc clears."""
from __future__ import annotations

from textual import on
from textual.binding import Binding
from textual.widgets import Input


class FilterBar(Input):
    DEFAULT_CSS = """
    FilterBar { dock: bottom; height: 3; display: none; }
    FilterBar.-open { display: block; }
    """
    BINDINGS = [Binding("escape", "cancel", "Clear filter", show=False)]

    def __init__(self, target=None) -> None:
        super().__init__(placeholder="filter rows (substring of any text column)")
        self.target = target

    def open(self, target) -> None:
        self.target = target
        self.value = target.filter_text
        self.add_class("-open")
        self.focus()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if self.target is not None:
            self.target.set_filter(event.value)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self._close()

    def action_cancel(self) -> None:
        self.value = ""
        if self.target is not None:
            self.target.set_filter("")
        self._close()

    def _close(self) -> None:
        self.remove_class("-open")
        if self.target is not None:
            self.target.focus()
