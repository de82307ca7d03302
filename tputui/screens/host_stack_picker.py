"""The trace viewer's host picker with several choices: space toggles a host, Enter shows the
chosen ones stacked on one time axis, Esc cancels."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import SelectionList, Static

from tputui.widgets.marked import MarkedSelectionList


class HostStackPicker(ModalScreen[list[str] | None]):
    """Pick hosts to stack; dismissed with the picked hosts in the run's order (None: cancelled)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel"),
                Binding("enter", "apply", "Show the hosts", priority=True)]
    DEFAULT_CSS = """
    HostStackPicker { align: center middle; }
    HostStackPicker > Vertical { width: 70; max-width: 95%; height: auto; max-height: 80%;
                                 border: round $accent; background: $surface; padding: 0 1; }
    HostStackPicker SelectionList, HostStackPicker SelectionList:focus { height: auto; max-height: 24;
                                                                         border: none; background: $surface; }
    """

    def __init__(self, hosts: list[str], chosen: list[str]) -> None:
        super().__init__()
        self.hosts, self.chosen = hosts, chosen

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Hosts to stack[/b]  [dim]space toggles · Enter shows · Esc cancels[/dim]")
            yield MarkedSelectionList[str](*[(h, h, h in self.chosen) for h in self.hosts], id="stack-hosts")

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_apply(self) -> None:
        picked = set(self.query_one(SelectionList).selected)
        self.dismiss([h for h in self.hosts if h in picked])
