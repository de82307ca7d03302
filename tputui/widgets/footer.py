"""The footer: the screen's keys, with `?` (help) pinned at the right beside `^p palette`, so a
narrow terminal cuts the other keys, never the one that lists them all."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PINNED_ACTIONS = ("help", "app.help")


class KeyFooter(Footer):
    DEFAULT_CSS = """
    KeyFooter #pinned-keys { dock: right; width: auto; height: 1; margin-left: 1; }
    KeyFooter #pinned-keys FooterKey.-command-palette { dock: none; border-left: vkey $foreground 55%; }
    """

    def compose(self) -> ComposeResult:
        pinned = []
        for widget in super().compose():
            if isinstance(widget, FooterKey) and (widget.action in PINNED_ACTIONS
                                                  or widget.has_class("-command-palette")):
                pinned.append(widget)
            else:
                yield widget
        if pinned:
            with HorizontalGroup(id="pinned-keys"):
                yield from pinned
