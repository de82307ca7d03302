"""`?`: the keys of the current screen, then the app-wide ones, read from the active bindings."""
from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    """Every key the current screen answers to, then the app-wide ones; scrolls when long."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss(None)", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 84; max-width: 95%; height: auto; max-height: 90%;
                                  border: round $accent; background: $surface; padding: 0 1; }
    HelpScreen > VerticalScroll:focus { border: round $accent; }
    HelpScreen Static { height: auto; }
    """

    def __init__(self, lines: Iterable[tuple[str, str]], title: str, everywhere: Iterable[tuple[str, str]] = (),
                 notes: str = "") -> None:
        super().__init__()
        self.screen_lines, self.everywhere = list(lines), list(everywhere)
        self.lines = self.screen_lines + self.everywhere
        self.title_text, self.notes = title, notes

    def compose(self) -> ComposeResult:
        width = max((len(k) for k, _ in self.lines), default=4)

        def block(lines: list[tuple[str, str]]) -> Table:
            t = Table.grid(padding=(0, 2))
            t.add_column(width=width, style="bold", no_wrap=True)
            t.add_column()  # long descriptions wrap inside their own column
            for k, d in lines:
                t.add_row(k, d)
            return t

        with VerticalScroll():
            yield Static(f"[b]{escape(self.title_text)}[/b] — keys  [dim](↑ ↓ scroll · Esc closes)[/dim]\n")
            yield Static(block(self.screen_lines))
            if self.notes:
                yield Static("\n" + self.notes)
            if self.everywhere:
                yield Static("\n[b]Everywhere[/b]\n")
                yield Static(block(self.everywhere))

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()


# Textual's own focus / copy / horizontal-page keys: true, but noise in a list of what tputui does.
HELP_SKIP = {"app.focus_next", "app.focus_previous", "screen.copy_text", "page_left", "page_right"}
HELP_TEXT = {  # longer words than the footer has room for
    "pick_tool": "pick a tool (the list shows the tools with data in this run)",
    "pick_run": "pick a run (newest first)",
    "pick_host": "pick a host (or all hosts)",
    "capture": "capture a profile from a live profiler server into a logdir",
    "diff": "compare this run with another run (or another logdir): step time, KPIs, op deltas",
    "sql": "SQL prompt: query this run's events, ops, hlo_ops and steps tables",
    "command_palette": "command palette: open a tool, switch run or host by name, change the theme (kept)",
    "back": "back to the previous screen (cursor, sort, filter and scroll as they were)",
    "help": "this help",
    "quit": "quit",
}


def help_lines(app: App, screen) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(this screen's keys, app-wide keys) from the active bindings; one line per action."""
    groups: dict[tuple[bool, str], list] = {}
    for active in screen.active_bindings.values():
        b = active.binding
        if not b.description or b.action in HELP_SKIP:
            continue
        if b.action == "screen.export_csv" and not getattr(screen, "offers_csv", True):
            continue  # this screen has no table: `x` would only say so
        app_wide = active.node is app
        entry = groups.setdefault((app_wide, b.action), [[], ""])
        display = b.key_display or app.get_key_display(b)
        if display not in entry[0]:
            entry[0].append(display)
        entry[1] = entry[1] or HELP_TEXT.get(b.action) or b.tooltip or b.description
    def keys_text(keys: list[str]) -> str:  # plain keys before their ctrl variants: "q ^q"
        return " ".join(sorted(keys, key=lambda k: k.startswith("^") or "+" in k))

    here = [(keys_text(keys), text) for (app_wide, action), (keys, text)
            in sorted(groups.items(), key=lambda kv: kv[0][1] == "reload") if not app_wide]
    order = list(HELP_TEXT)
    everywhere = [(keys_text(keys), text) for (app_wide, action), (keys, text)
                  in sorted(groups.items(), key=lambda kv: order.index(kv[0][1]) if kv[0][1] in order else 99)
                  if app_wide]
    return here, everywhere
