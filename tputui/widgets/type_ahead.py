"""Keys typed fast after a key that opens a text entry (`t`, `/`, `g`, `:`) belong to that entry.

Textual runs an ordinary binding only after its key has bubbled up to the app, by which time the
keys typed after it have been routed to the old focus: "/copy" searched "" and `y` jumped to a
flow partner, "trace" typed after `t` opened the run picker on its `r`. So the keys that open an
entry are priority bindings (run as the key arrives, before the next key is routed), disabled
while text is being typed, and a screen hands printable keys that reach it while an entry is open
but not yet focused to that entry.
"""
from __future__ import annotations

from textual.events import Key
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, TextArea

OPEN_CLASSES = ("visible", "-open")  # how our prompts and filter bars are shown


def open_entry(screen: Screen) -> Input | None:
    """The screen's text entry that is shown (maybe not focused yet), if any."""
    for widget in screen.query(Input):
        if any(widget.has_class(c) for c in OPEN_CLASSES):
            return widget
    return None


def text_is_typed(screen: Screen) -> bool:
    """Whether keys are text just now: a dialog or picker is up, an entry has the focus or is open."""
    if isinstance(screen, ModalScreen) or isinstance(screen.focused, (Input, TextArea)):
        return True
    return open_entry(screen) is not None


def hand_to_entry(screen: Screen, event: Key) -> bool:
    """Give a key that reached the screen to its open entry (True: taken). Printable keys typed
    into a focused entry stop there; one that reaches the screen was routed before the entry had
    the focus."""
    entry = open_entry(screen)
    if entry is None:
        return False
    if event.is_printable and event.character:
        entry.insert_text_at_cursor(event.character)
    elif event.key == "backspace":
        entry.action_delete_left()
    elif event.key == "enter":
        entry.focus()
        entry.post_message(Input.Submitted(entry, entry.value))
    else:
        return False
    event.stop()
    event.prevent_default()
    return True
