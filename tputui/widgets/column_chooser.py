"""ColumnChooser: which of a table's columns are shown (space toggles, Enter applies, Esc cancels).

Rarely needed columns start hidden; this is how one gets them back. Hidden columns are still
exported: CSV always carries the whole table."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import SelectionList, Static


class ColumnChooser(ModalScreen[set[str] | None]):
    """Dismisses with the set of hidden columns (None: cancelled)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel"), Binding("enter", "apply", "Apply", priority=True)]
    DEFAULT_CSS = """
    ColumnChooser { align: center middle; }
    ColumnChooser > Vertical { width: 60; max-width: 90%; height: auto; max-height: 80%;
                               border: round $border; background: $surface; padding: 0 1; }
    ColumnChooser SelectionList { height: auto; max-height: 30; border: none; padding: 0; background: $surface; }
    """

    def __init__(self, columns: list[str], hidden: set[str], keep: str | None = None) -> None:
        super().__init__()
        self.columns, self.hidden, self.keep = columns, hidden, keep

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Columns[/b]  [dim]space show/hide · Enter apply · Esc cancel[/dim]")
            yield SelectionList[str](*((c, c, c not in self.hidden) for c in self.columns if c != self.keep))

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_apply(self) -> None:
        shown = set(self.query_one(SelectionList).selected)
        self.dismiss({c for c in self.columns if c not in shown and c != self.keep})
