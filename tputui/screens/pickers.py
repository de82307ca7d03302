"""The run / host / tool / module pickers: a filterable list in a modal, Enter picks, Esc cancels."""
from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
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

    CHECKING = "checking..."

    class Answered(Message, bubble=False):
        """A worker's answer for the pending choices: every choice known now, and the note."""

        def __init__(self, choices: list[tuple[str, str]], note: str = "") -> None:
            super().__init__()
            self.choices, self.note = choices, note

    def __init__(self, title: str, choices: list[tuple[str, str]], current: str | None = None,
                 note: str = "", pending: Iterable[str] = ()) -> None:
        super().__init__()
        self.title_text, self.choices, self.current, self.note = title, choices, current, note
        # Keys of choices not known yet to apply (a tool whose data is still being checked): listed,
        # marked "checking...", pickable; set_choices() gives the answer.
        self.pending = set(pending)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]  [dim]type to filter · Enter pick · Esc cancel[/dim]")
            yield Input(placeholder="filter", id="picker-filter", select_on_focus=False)
            yield OptionList(*self._options(""), id="picker-options")
            yield Static(self.note, classes="note", id="picker-note")

    def _options(self, needle: str) -> list[Option]:
        needle = needle.lower()
        return [Option(("● " if key == self.current else "  ") + label
                       + (f"  [dim i]{self.CHECKING}[/dim i]" if key in self.pending else ""), id=key)
                for key, label in self.choices if needle in label.lower() or needle in key.lower()]

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        keys = [k for k, _ in self.choices]
        if self.current in keys:
            ol.highlighted = keys.index(self.current)
        self.query_one("#picker-note").display = bool(self.note)
        ol.focus()

    def on_picker_screen_answered(self, event: Answered) -> None:
        self.set_choices(event.choices, (), event.note)

    def set_choices(self, choices: list[tuple[str, str]], pending: Iterable[str] = (), note: str = "") -> None:
        """New choices (a check finished): the filter typed so far and the highlighted choice stay."""
        ol = self.query_one(OptionList)
        was = ol.highlighted
        was_key = ol.get_option_at_index(was).id if was is not None and was < ol.option_count else None
        self.choices, self.pending, self.note = choices, set(pending), note
        self._refilter(self.query_one(Input).value, keep=was_key)
        note_widget = self.query_one("#picker-note", Static)
        note_widget.update(note)
        note_widget.display = bool(note)

    def _refilter(self, needle: str, keep: str | None = None) -> None:
        ol = self.query_one(OptionList)
        ol.clear_options()
        ol.add_options(self._options(needle))
        if ol.option_count:
            ids = [ol.get_option_at_index(i).id for i in range(ol.option_count)]
            ol.highlighted = ids.index(keep) if keep in ids else 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._refilter(event.value)

    def on_input_submitted(self) -> None:
        ol = self.query_one(OptionList)
        if ol.highlighted is not None:
            self.dismiss(ol.get_option_at_index(ol.highlighted).id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def on_key(self, event) -> None:
        # Typing a printable character while the list (or nothing yet) has focus starts filtering;
        # a space only once a filter is begun (keys typed fast or pasted reach the list, or the
        # screen itself, before the focus moves).
        inp = self.query_one(Input)
        if event.is_printable and not inp.has_focus and (event.character != " " or inp.value):
            inp.focus()
            inp.insert_text_at_cursor(event.character)
            event.stop()
            event.prevent_default()
