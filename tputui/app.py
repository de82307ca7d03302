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
from tputui.userdirs import load_settings, save_setting


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


def fmt_size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def run_facts(run) -> str:
    """What the run picker says about a run: capture time, hosts, size (markup)."""
    from datetime import datetime

    when = run.sort_key
    when = when / 1e6 if when > 1e11 else when  # a GCS generation counts microseconds
    stamp = datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M") if when else "-"
    n = len(run.hosts)
    return f"[dim]{stamp} · {n} host{'s' if n != 1 else ''} · {fmt_size(sum(h.size for h in run.hosts))}[/dim]"


DEFAULT_TOOL = "overview_page"
HISTORY = 8  # screens kept for Esc (each holds its loaded result)


class TputuiApp(App):
    TITLE = "tputui"
    CSS_PATH = "tputui.tcss"
    COMMANDS = App.COMMANDS | {TputuiCommands}
    BINDINGS = [
        Binding("t", "pick_tool", "Tool", id="app.tool"),
        Binding("r", "pick_run", "Run", id="app.run"),
        Binding("h", "pick_host", "Host", id="app.host"),
        Binding("C", "capture", "Capture", id="app.capture"),
        Binding("x", "screen.export_csv", "CSV", show=False, id="app.csv",
                tooltip="write the table as CSV to the export folder (never the logdir)"),
        Binding("D", "diff", "Diff", id="app.diff", show=False, tooltip="compare this run with another run or logdir"),
        Binding("colon", "sql", "SQL", id="app.sql", show=False, tooltip="SQL prompt over this run's events, ops and steps"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("escape", "back", "Back", show=False, id="app.back",
                tooltip="back to the previous screen (its cursor, sort, filter and scroll as they were)"),
        Binding("q", "quit", "Quit", id="app.quit"),
        # Ctrl+C quits as in htop / k9s / lazygit (Textual would copy text or say "press ^q").
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.quit_ctrl_c"),
    ]

    def __init__(self, logdir: Logdir, run: str | None = None, host: str | None = None,
                 tool: str | None = None, use_cache: bool = True, jobs: int | None = None,
                 dask: str | None = None, watch: float | None = None, tpu_logs: str | None = None) -> None:
        super().__init__()
        self.tpu_logs = tpu_logs  # the TPU runtime log's folder, for the tools that read it
        self.watch_seconds = watch
        self.logdir, self.use_cache = logdir, use_cache
        self.scale = {"jobs": jobs, "dask": dask}  # how multi-host analyses run (RunData)
        self.run_data = RunData(logdir.run(run), use_cache=use_cache, **self.scale)
        self.host = host
        # With no --tool: the overview page (what XProf opens on), or the summary when the run
        # has no data for it (the summary stays on `t`).
        self.tool_name = tool or DEFAULT_TOOL
        self._default_first = tool is None
        self._available: dict[str, list[str]] = {}
        self._restore_theme()

    # --- theme: kept between runs in the user's config file (never the logdir) ------------
    def _restore_theme(self) -> None:
        saved = load_settings().get("theme")
        if isinstance(saved, str) and saved in self.available_themes:
            self.theme = saved
        self._saved_theme = self.theme

    def watch_theme(self, theme: str) -> None:
        if getattr(self, "_saved_theme", theme) != theme:  # the user picked one (Ctrl+P, "theme")
            self._saved_theme = theme
            try:
                save_setting("theme", theme)
            except OSError as e:  # a read-only home must not stop the app
                self.notify(f"could not save the theme: {e}", severity="warning")

    def on_mount(self) -> None:
        self.open_tool(self.tool_name)
        if self.watch_seconds:
            self.set_interval(self.watch_seconds, partial(self.rescan, True))
        self._warnings = _NotifyWarnings(self)  # e.g. a damaged .xplane.riegeli region skipped
        logging.getLogger("tputui").addHandler(self._warnings)

    def on_unmount(self) -> None:
        logging.getLogger("tputui").removeHandler(self._warnings)

    # --- navigation --------------------------------------------------------------------
    def no_data_on_first_screen(self, screen) -> bool:
        """The default first screen has nothing to show: the summary takes its place (True)."""
        if not (self._default_first and len(self.screen_stack) == 2 and self.screen is screen):
            return False
        self._default_first = False
        self.open_tool("summary", replace=True)
        return True

    def open_tool(self, name: str, replace: bool = False, **options) -> None:
        tool = get_tool(name)
        self.tool_name = name
        if self.tpu_logs and "tpu_logs" in tool.option_names():
            options.setdefault("tpu_logs", self.tpu_logs)
        screen_cls = tool.screen_class()
        if screen_cls is None:
            from tputui.screens.generic import GenericToolScreen

            screen_cls = GenericToolScreen
        screen = screen_cls(self.run_data, self.host, tool, **options)
        # Every jump keeps the screen it leaves (Esc returns to it as it was), up to HISTORY deep.
        self._default_first = self._default_first and len(self.screen_stack) == 1
        if replace or len(self.screen_stack) > HISTORY:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def action_back(self) -> None:
        from tputui.screens.base import ToolScreen

        if len(self.screen_stack) <= 2:  # the default screen and the first tool
            self.notify("nothing to go back to (q quits)", timeout=3)
            return
        previous = self.screen_stack[-2]
        if isinstance(previous, ToolScreen):  # the pickers act on what that screen shows
            self.run_data, self.host, self.tool_name = previous.run_data, previous.host, previous.tool.name
        self.pop_screen()

    # --- reload: new runs captured while the app is open -----------------------------------
    @work(thread=True, exclusive=True, group="rescan", description="rescanning the logdir")
    def rescan(self, quiet: bool = False) -> None:
        """List the logdir again (R / F5, or every --watch seconds) and say which runs are new."""
        from tputui.data.waiting import open_logdir_waiting
        from tputui.errors import UserError

        try:
            fresh = open_logdir_waiting(self.logdir.root)
        except UserError as e:
            self.call_from_thread(self.notify, f"rescan failed: {e}", severity="error")
            return
        self.call_from_thread(self._rescanned, fresh, quiet)

    def _rescanned(self, fresh: Logdir, quiet: bool) -> None:
        known = {r.name for r in self.logdir.runs}
        new = [r.name for r in fresh.runs if r.name not in known]
        self.logdir = fresh
        if new:
            shown = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
            self.notify(f"{len(new)} new run{'s' if len(new) > 1 else ''}: {shown} (r picks a run)", timeout=8)
        elif not quiet:
            self.notify(f"no new runs ({len(fresh.runs)} in the logdir)", timeout=3)

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
        width = max((len(r.name) for r in self.logdir.runs), default=0) + 3
        choices = [(r.name, r.name.ljust(width) + run_facts(r)) for r in self.logdir.runs]
        self.push_screen(PickerScreen("Run", choices, self.run_data.name),
                         lambda pick: pick and pick != self.run_data.name and self.open_run(pick))

    def action_pick_host(self) -> None:
        hosts = self.run_data.hosts
        choices = [("", "all hosts")] if len(hosts) > 1 else []
        sizes = {h.host: h.size for h in self.run_data.run.hosts}
        width = max((len(h) for h in hosts), default=0) + 3
        choices += [(h, h.ljust(width) + f"[dim]{fmt_size(sizes.get(h, 0))}[/dim]") for h in hosts]
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

