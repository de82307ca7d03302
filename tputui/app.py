"""The Textual app: run / host / tool pickers around one screen per tool.

Like TensorBoard's Runs / Tools / Host drop-downs, but from the keyboard: `r`, `t`, `h`;
`?` lists the keys of the current screen; Ctrl+P opens the command palette.
"""
from __future__ import annotations

import logging
import threading
from functools import partial

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from tputui.data.logdir import Logdir
from tputui.data.run_data import RunData
from tputui.screens.help import HelpScreen, help_lines
from tputui.screens.pickers import PickerScreen
from tputui.tools import TOOLS, get_tool, tools_with_data


class TputuiCommands(Provider):
    """Command palette: open any tool, switch run or host (listed before anything is typed)."""

    def _items(self) -> list[tuple[str, object, str]]:
        app: TputuiApp = self.app  # type: ignore[assignment]
        items = [(f"Open tool: {t.title}", partial(app.open_tool, t.name), t.name) for t in TOOLS]
        items += [(f"Switch run: {r.name}", partial(app.open_run, r.name), f"{len(r.hosts)} host(s)")
                  for r in app.logdir.runs]
        items += [(f"Switch host: {h}", partial(app.open_host, h), "") for h in app.run_data.hosts]
        return items

    async def discover(self) -> Hits:
        for text, cb, help_text in self._items():
            yield DiscoveryHit(text, cb, help=help_text or None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, cb, help_text in self._items():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), cb, help=help_text or None)


class _NotifyWarnings(logging.Handler):
    """Warnings the data layer logs (from any thread) become notifications; the app goes on."""

    def __init__(self, app: App) -> None:
        super().__init__(logging.WARNING)
        self.app = app
        self.seen: set[str] = set()  # a file read again (another tool's planes) warns once

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message in self.seen:
            return
        self.seen.add(message)
        notify = partial(self.app.notify, message, severity="warning", timeout=15)
        try:
            if threading.get_ident() == self.app._thread_id:
                notify()
            else:
                self.app.call_from_thread(notify)
        except RuntimeError:  # the app is not running (any more)
            pass


class TputuiApp(App):
    TITLE = "tputui"
    CSS_PATH = "tputui.tcss"
    COMMANDS = App.COMMANDS | {TputuiCommands}
    BINDINGS = [
        Binding("t", "pick_tool", "Tool", id="app.tool"),
        Binding("r", "pick_run", "Run", id="app.run"),
        Binding("h", "pick_host", "Host", id="app.host"),
        Binding("C", "capture", "Capture", id="app.capture"),
        Binding("D", "diff", "Diff", id="app.diff", show=False, tooltip="compare this run with another run or logdir"),
        Binding("colon", "sql", "SQL", id="app.sql", show=False, tooltip="SQL prompt over this run's events, ops and steps"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(self, logdir: Logdir, run: str | None = None, host: str | None = None,
                 tool: str | None = None, use_cache: bool = True, jobs: int | None = None,
                 dask: str | None = None) -> None:
        super().__init__()
        self.logdir, self.use_cache = logdir, use_cache
        self.scale = {"jobs": jobs, "dask": dask}  # how multi-host analyses run (RunData)
        self.run_data = RunData(logdir.run(run), use_cache=use_cache, **self.scale)
        self.host = host
        self.tool_name = tool or "summary"
        self._available: dict[str, list[str]] = {}

    def on_mount(self) -> None:
        self.open_tool(self.tool_name)
        self._warnings = _NotifyWarnings(self)  # e.g. a damaged .xplane.riegeli region skipped
        logging.getLogger("tputui").addHandler(self._warnings)

    def on_unmount(self) -> None:
        logging.getLogger("tputui").removeHandler(self._warnings)

    # --- navigation --------------------------------------------------------------------
    def open_tool(self, name: str, **options) -> None:
        tool = get_tool(name)
        self.tool_name = name
        screen_cls = tool.screen_class()
        if screen_cls is None:
            from tputui.screens.generic import GenericToolScreen

            screen_cls = GenericToolScreen
        screen = screen_cls(self.run_data, self.host, tool, **options)
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def open_run(self, name: str) -> None:
        self.run_data = RunData(self.logdir.run(name), use_cache=self.use_cache, **self.scale)
        if self.host not in self.run_data.hosts:
            self.host = None
        self.open_tool(self.tool_name)

    def open_host(self, host: str | None) -> None:
        self.host = host or None
        self.open_tool(self.tool_name)

    def open_run_data(self, run: RunData, host: str | None, tool: str, **options) -> None:
        """Open `tool` on a run the diff or SQL screen holds (maybe of another logdir)."""
        self.run_data, self.host = run, host
        self.open_tool(tool, **options)

    # --- pickers -----------------------------------------------------------------------
    def action_pick_run(self) -> None:
        choices = [(r.name, f"{r.name}   ({len(r.hosts)} host{'s' if len(r.hosts) != 1 else ''})")
                   for r in self.logdir.runs]
        self.push_screen(PickerScreen("Run", choices, self.run_data.name),
                         lambda pick: pick and pick != self.run_data.name and self.open_run(pick))

    def action_pick_host(self) -> None:
        hosts = self.run_data.hosts
        choices = [("", "all hosts")] if len(hosts) > 1 else []
        choices += [(h, h) for h in hosts]
        self.push_screen(PickerScreen("Host", choices, self.host or ("" if len(hosts) > 1 else hosts[0])),
                         lambda pick: pick is not None and self.open_host(pick))

    def action_pick_tool(self) -> None:
        self._tool_picker()

    @work(thread=True, exclusive=True, group="tools")
    def _tool_picker(self) -> None:
        # Which tools have data may need a decode: off the UI thread.
        names = self.tools_with_data(self.run_data)
        hidden = [t.title for t in TOOLS if t.name not in names]
        width = max((len(t.title) for t in TOOLS), default=0) + 3
        choices = [(t.name, f"{t.title.ljust(width)}[dim]{t.name}[/dim]") for t in TOOLS if t.name in names]
        note = f"[dim]No data in this run (hidden): {', '.join(hidden)}[/dim]" if hidden else ""
        self.call_from_thread(
            self.push_screen, PickerScreen("Tool", choices, self.tool_name, note),
            lambda pick: pick and self.open_tool(pick))

    def tools_with_data(self, run: RunData) -> list[str]:
        """The registry's answer for `run`, once per run (the picker and the summary share it)."""
        if run.name not in self._available:
            self._available[run.name] = tools_with_data(run)
        return self._available[run.name]

    def action_capture(self) -> None:
        """TensorBoard's "Capture profile": grab a profile from a live server into a logdir."""
        from tputui.screens.capture_dialog import open_capture_dialog

        open_capture_dialog(self)

    def action_sql(self) -> None:
        from tputui.screens.sql import SqlScreen

        if not isinstance(self.screen, SqlScreen):
            self.push_screen(SqlScreen(self.run_data, self.host))

    def action_diff(self) -> None:
        """Pick the run (or another logdir) to compare this run with, then open the diff screen."""
        from tputui.screens.diff import open_diff_picker

        open_diff_picker(self, PickerScreen)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        here, everywhere = help_lines(self, self.screen)
        title = getattr(getattr(self.screen, "tool", None), "title", "tputui")
        notes = getattr(self.screen, "help_notes", "")
        self.push_screen(HelpScreen(here, title, everywhere, notes))

