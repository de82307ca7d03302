"""The run / host / tool / module pickers: a filterable list in a modal, Enter picks, Esc cancels."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option


class PickerScreen(ModalScreen[str | None]):
    """A filterable list of choices; Enter picks, Esc cancels."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    PickerScreen { align: center middle; }
    PickerScreen > Vertical { width: 84; max-width: 95%; height: auto; max-height: 80%;
                              border: round $accent; background: $surface; padding: 0 1; }
    PickerScreen OptionList, PickerScreen OptionList:focus { height: auto; max-height: 24; border: none;
                                                             padding: 0; background: $surface; }
    PickerScreen Input, PickerScreen Input:focus { border: none; height: 1; padding: 0 1;
                                                   background: $boost; margin: 0 0 1 0; }
    PickerScreen .note { height: auto; margin-top: 1; }
    """

    def __init__(self, title: str, choices: list[tuple[str, str]], current: str | None = None,
                 note: str = "") -> None:
        super().__init__()
        self.title_text, self.choices, self.current, self.note = title, choices, current, note

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]  [dim]type to filter · Enter pick · Esc cancel[/dim]")
            yield Input(placeholder="filter", id="picker-filter", select_on_focus=False)
            yield OptionList(*self._options(""), id="picker-options")
            if self.note:
                yield Static(self.note, classes="note")

    def _options(self, needle: str) -> list[Option]:
        needle = needle.lower()
        return [Option(("● " if key == self.current else "  ") + label, id=key)
                for key, label in self.choices if needle in label.lower() or needle in key.lower()]

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        keys = [k for k, _ in self.choices]
        if self.current in keys:
            ol.highlighted = keys.index(self.current)
        ol.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        ol = self.query_one(OptionList)
        ol.clear_options()
        ol.add_options(self._options(event.value))
        if ol.option_count:
            ol.highlighted = 0

    def on_input_submitted(self) -> None:
        ol = self.query_one(OptionList)
        if ol.highlighted is not None:
            self.dismiss(ol.get_option_at_index(ol.highlighted).id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def on_key(self, event) -> None:
        # Typing a printable character while the list has focus starts filtering; a space only
        # once a filter is begun (keys typed fast or pasted reach the list before the focus moves).
        inp = self.query_one(Input)
        if event.is_printable and not inp.has_focus and (event.character != " " or inp.value):
            inp.focus()
            inp.insert_text_at_cursor(event.character)
            event.stop()
