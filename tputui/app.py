"""The Textual app: run / host / tool pickers around one screen per tool.

Like TensorBoard's Runs / Tools / Host drop-downs, but from the keyboard: `r`, `t`, `h`;
`?` lists the keys of the current screen; Ctrl+P opens the command palette.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import get_current_worker

from tputui.data.logdir import Logdir
from tputui.data.run_data import RunData
from tputui.data.runs import Run
from tputui.quick_exit import NoWaitExecutor
from tputui.screens.app_api import ToolsApp
from tputui.screens.base import ToolScreen
from tputui.screens.help import HelpScreen, help_lines
from tputui.screens.pickers import PickerScreen
from tputui.tools import TOOLS, get_tool, tools_known, tools_with_data, warm_up_checks
from tputui.userdirs import load_settings, save_setting
from tputui.widgets.type_ahead import text_is_typed

PaletteItem = tuple[str, Callable[[], object], str]  # (command text, what it runs, help)


class TputuiCommands(Provider):
    """Command palette: every tool the `t` picker lists, runs, hosts, the app's actions (SQL, diff,
    capture, reload) and every key of the screen it was opened on (CSV, go to, stack hosts, ...)."""

    def _items(self) -> list[PaletteItem]:
        app = self.app
        if not isinstance(app, TputuiApp):  # the palette of TputuiApp.COMMANDS: never another app's
            return []
        known = app.known_tools(app.run_data, imports=True)  # as `t` lists: tools without data left out
        items: list[PaletteItem] = [
            (f"Open tool: {t.title}", partial(app.open_tool, t.name),
             t.name + (" (checking...)" if known.get(t.name) is None else ""))
            for t in TOOLS if known.get(t.name) is not False]
        items += [(f"Switch run: {r.name}", partial(app.open_run, r.name), f"{len(r.hosts)} host(s)")
                  for r in app.logdir.runs]
        items += [(f"Switch host: {h}", partial(app.open_host, h), "") for h in app.run_data.hosts]
        items += [("SQL prompt over this run", app.action_sql, ":"),
                  ("Compare with another run or logdir (diff)", app.action_diff, "D"),
                  ("Capture a profile from a live server", app.action_capture, "C"),
                  ("Rescan the logdir for new runs", partial(app.rescan, False), "")]
        items += self._screen_items(app)
        return items

    def _screen_items(self, app: TputuiApp) -> list[PaletteItem]:
        """The keys of the screen the palette was opened on, each as a command."""
        from tputui.screens.help import HELP_SKIP

        screen = self.screen
        title = getattr(getattr(screen, "tool", None), "title", "")
        out: list[PaletteItem] = []
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            b = active.binding
            if (not active.enabled or not b.description or b.action in HELP_SKIP
                    or (active.node is app and b.action != "screen.export_csv")):
                continue
            if b.action == "screen.export_csv" and not getattr(screen, "offers_csv", False):
                continue
            if b.key in NAVIGATION_KEYS:  # moving the cursor is no command
                continue
            label = "Write the table as CSV" if b.action.endswith("export_csv") else b.description
            if label in seen:
                continue
            seen.add(label)
            run = partial(app.call_later, app.run_action, b.action, active.node)
            out.append((f"{title}: {label}" if title else label, run, app.get_key_display(b)))
        return out

    async def discover(self) -> Hits:
        for text, cb, help_text in self._items():
            yield DiscoveryHit(text, cb, help=help_text or None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, cb, help_text in self._items():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), cb, help=help_text or None)


class Notice(Message, bubble=False):
    """A line for the app to notify, sent from a thread (a worker, a logging handler): threads post
    messages, they never call into the UI."""

    def __init__(self, text: str, severity: SeverityLevel = "information", timeout: float | None = None) -> None:
        super().__init__()
        self.text, self.severity, self.timeout = text, severity, timeout


class Rescanned(Message, bubble=False):
    """The rescan worker's answer: the logdir as listed now."""

    def __init__(self, fresh: Logdir, quiet: bool) -> None:
        super().__init__()
        self.fresh, self.quiet = fresh, quiet


class _NotifyWarnings(logging.Handler):
    """Warnings the data layer logs (from any thread) become notifications; the app goes on.
    Posted as a message (thread-safe): the logging thread never touches the UI itself."""

    def __init__(self, app: App[None]) -> None:
        super().__init__(logging.WARNING)
        self.app = app
        self.seen: set[str] = set()  # a file read again (another tool's planes) warns once

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message in self.seen:
            return
        self.seen.add(message)
        try:
            self.app.post_message(Notice(message, "warning", timeout=15))
        except RuntimeError:  # the app's event loop is closed (it has exited)
            pass


def fmt_size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def run_facts(run: Run) -> str:
    """What the run picker says about a run: capture time, hosts, size (markup)."""
    from datetime import datetime

    when = run.sort_key
    when = when / 1e6 if when > 1e11 else when  # a GCS generation counts microseconds
    stamp = datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M") if when else "-"
    n = len(run.hosts)
    return f"[dim]{stamp} · {n} host{'s' if n != 1 else ''} · {fmt_size(sum(h.size for h in run.hosts))}[/dim]"


TYPE_AHEAD_ACTIONS = frozenset({"pick_tool", "pick_run", "pick_host", "capture", "diff", "sql"})
NAVIGATION_KEYS = frozenset({"up", "down", "left", "right", "pageup", "pagedown", "home", "end", "tab",
                             "shift+tab", "ctrl+up", "ctrl+down"})
DEFAULT_TOOL = "overview_page"
DEMO_HINT = ("This is a JAX run on CPU: device figures read n/a. The TPU v6e run, with every device tool, "
             "is one [b]r[/b] away. [b]?[/b] lists the keys.")
HISTORY = 8  # screens kept for Esc (each holds its loaded result)


class TputuiApp(ToolsApp):
    TITLE = "tputui"
    CSS_PATH = "tputui.tcss"
    COMMANDS = App.COMMANDS | {TputuiCommands}
    BINDINGS = [
        # Keys that open a picker or prompt are priority bindings (type_ahead.py): they act as
        # they arrive, so the keys typed after them reach what they opened.
        Binding("t", "pick_tool", "Tool", id="app.tool", priority=True),
        Binding("r", "pick_run", "Run", id="app.run", priority=True),
        Binding("h", "pick_host", "Host", id="app.host", priority=True),
        Binding("C", "capture", "Capture", id="app.capture", priority=True),
        Binding("x", "screen.export_csv", "CSV", show=False, id="app.csv",
                tooltip="write the table as CSV to the export folder (never the logdir)"),
        Binding("D", "diff", "Diff", id="app.diff", show=False, priority=True,
                tooltip="compare this run with another run or logdir"),
        Binding("colon", "sql", "SQL", id="app.sql", show=False, priority=True,
                tooltip="SQL prompt over this run's events, ops and steps"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("escape", "back", "Back", show=False, id="app.back",
                tooltip="back to the previous screen (its cursor, sort, filter and scroll as they were)"),
        Binding("q", "quit", "Quit", id="app.quit"),
        # Ctrl+C quits as in htop / k9s / lazygit (Textual would copy text or say "press ^q").
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.quit_ctrl_c"),
    ]

    def __init__(self, logdir: Logdir, run: str | None = None, host: str | None = None,
                 tool: str | None = None, use_cache: bool = True, jobs: int | None = None,
                 dask: str | None = None, watch: float | None = None, demo: bool = False,
                 tpu_logs: str | None = None) -> None:
        super().__init__()
        self.demo = demo
        self.tpu_logs = tpu_logs  # the TPU runtime log's folder, for the tools that read it
        self.watch_seconds = watch
        self.logdir, self.use_cache = logdir, use_cache
        self.jobs, self.dask = jobs, dask  # how multi-host analyses run (RunData)
        self.run_data = RunData(logdir.run(run), use_cache=use_cache, jobs=jobs, dask=dask)
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

    def on_load(self) -> None:
        # Thread workers on a pool whose shutdown does not wait: quitting mid-decode is at once.
        asyncio.get_running_loop().set_default_executor(NoWaitExecutor(thread_name_prefix="tputui-worker"))

    def on_mount(self) -> None:
        tool = get_tool(self.tool_name)
        if tool.screen_imported():
            self.open_tool(self.tool_name)
        else:  # a first frame now; the tool's screen once its module is imported (in a thread)
            from tputui.screens.opening import OpeningScreen

            self.push_screen(OpeningScreen(self.run_data, self.host, tool, **self._tool_options(tool)))
        if self.demo:
            self.notify(DEMO_HINT, title="Demo", timeout=20)
        if self.watch_seconds:
            self.set_interval(self.watch_seconds, partial(self.rescan, True))
        self._warnings = _NotifyWarnings(self)  # e.g. a damaged .xplane.riegeli region skipped
        logging.getLogger("tputui").addHandler(self._warnings)
        # Once the first screen is on its way, import the tools' data checks: `t` then answers
        # at once from the op stats instead of importing them on the UI thread.
        self.set_timer(1.0, self._warm_up_checks)

    @work(thread=True, exclusive=True, group="warm-up", description="importing the tools' data checks")
    def _warm_up_checks(self) -> None:
        warm_up_checks()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in TYPE_AHEAD_ACTIONS and text_is_typed(self.screen):
            return False  # a priority key while text is typed: it is text
        if action == "sql":
            from tputui.screens.sql import SqlScreen

            if isinstance(self.screen, SqlScreen):
                return False  # the SQL screen's own `:` (back to its query prompt) answers there
        return True

    def on_notice(self, event: Notice) -> None:
        self.notify(event.text, severity=event.severity, timeout=event.timeout)

    def on_unmount(self) -> None:
        logging.getLogger("tputui").removeHandler(self._warnings)

    # --- navigation --------------------------------------------------------------------
    def no_data_on_first_screen(self, screen: Screen[Any]) -> bool:
        """The default first screen has nothing to show: the summary takes its place (True)."""
        if not (self._default_first and len(self.screen_stack) == 2 and self.screen is screen):
            return False
        self._default_first = False
        self.open_tool("summary", replace=True)
        return True

    def open_tool(self, name: str, replace: bool = False, **options: Any) -> None:
        from tputui.screens.opening import OpeningScreen

        tool = get_tool(name)
        self.tool_name = name
        options = {**self._tool_options(tool), **options}
        screen_cls: type[ToolScreen] | None = tool.screen_class()
        if screen_cls is None:
            from tputui.screens.generic import GenericToolScreen

            screen_cls = GenericToolScreen
        screen = screen_cls(self.run_data, self.host, tool, **options)
        # Every jump keeps the screen it leaves (Esc returns to it as it was), up to HISTORY deep.
        self._default_first = self._default_first and (len(self.screen_stack) == 1 or isinstance(self.screen, OpeningScreen))
        if replace:
            self.switch_screen(screen)
            return
        self.push_screen(screen)
        if len(self.screen_stack) > HISTORY + 1:  # past HISTORY tool screens: forget the oldest
            self._drop_oldest_screen()

    def _tool_options(self, tool) -> dict:
        return {"tpu_logs": self.tpu_logs} if self.tpu_logs and "tpu_logs" in tool.option_names() else {}

    def _drop_oldest_screen(self) -> None:
        # Textual has no call to drop a screen from the bottom of the stack: take it out of the
        # stack (index 0 is Textual's default screen) and remove it, as pop_screen would.
        oldest = self._screen_stack.pop(1)
        oldest.remove()

    async def action_back(self) -> None:
        self.go_back()

    def go_back(self) -> None:
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

        answer: Message
        try:
            answer = Rescanned(open_logdir_waiting(self.logdir.root), quiet)
        except UserError as e:
            answer = Notice(f"rescan failed: {e}", "error")
        if not get_current_worker().is_cancelled:  # a newer rescan answers instead
            self.post_message(answer)

    def on_rescanned(self, event: Rescanned) -> None:
        fresh, quiet = event.fresh, event.quiet
        known = {r.name for r in self.logdir.runs}
        new = [r.name for r in fresh.runs if r.name not in known]
        self.logdir = fresh
        if new:
            shown = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
            self.notify(f"{len(new)} new run{'s' if len(new) > 1 else ''}: {shown} (r picks a run)", timeout=8)
        elif not quiet:
            self.notify(f"no new runs ({len(fresh.runs)} in the logdir)", timeout=3)

    def open_run(self, name: str) -> None:
        self.run_data = RunData(self.logdir.run(name), use_cache=self.use_cache, jobs=self.jobs, dask=self.dask)
        if self.host not in self.run_data.hosts:
            self.host = None
        self.open_tool(self.tool_name)

    def open_host(self, host: str | None) -> None:
        self.host = host or None
        self.open_tool(self.tool_name)

    def open_run_data(self, run: RunData, host: str | None, tool: str, **options: Any) -> None:
        """Open `tool` on a run the diff or SQL screen holds (maybe of another logdir)."""
        self.run_data, self.host = run, host
        self.open_tool(tool, **options)

    # --- pickers -----------------------------------------------------------------------
    def action_pick_run(self) -> None:
        width = max((len(r.name) for r in self.logdir.runs), default=0) + 3
        choices = [(r.name, r.name.ljust(width) + run_facts(r)) for r in self.logdir.runs]
        def picked(pick: str | None) -> None:
            if pick and pick != self.run_data.name:
                self.open_run(pick)

        self.push_screen(PickerScreen("Run", choices, self.run_data.name), picked)

    def action_pick_host(self) -> None:
        hosts = self.run_data.hosts
        choices = [("", "all hosts")] if len(hosts) > 1 else []
        sizes = {h.host: h.size for h in self.run_data.run.hosts}
        width = max((len(h) for h in hosts), default=0) + 3
        choices += [(h, h.ljust(width) + f"[dim]{fmt_size(sizes.get(h, 0))}[/dim]") for h in hosts]
        def picked(pick: str | None) -> None:
            if pick is not None:
                self.open_host(pick)

        self.push_screen(PickerScreen("Host", choices, self.host or ("" if len(hosts) > 1 else hosts[0])), picked)

    def action_pick_tool(self) -> None:
        """The picker opens at once (keys typed after `t` go to its filter): the tools known to have
        data are listed, the ones still to check marked "checking..." until a worker answers."""
        run = self.run_data
        known = self.known_tools(run)
        choices, note, pending = self._tool_choices(known)
        picker = PickerScreen("Tool", choices, self.tool_name, note, pending)
        def picked(pick: str | None) -> None:
            if pick:
                self.open_tool(pick)

        self.push_screen(picker, picked)
        if any(v is None for v in known.values()):
            self._check_tools(run, picker)

    @staticmethod
    def _tool_choices(known: dict[str, bool | None]) -> tuple[list[tuple[str, str]], str, set[str]]:
        """(choices, note, pending) of the tool picker for what is known of each tool."""
        width = max((len(t.title) for t in TOOLS), default=0) + 3
        choices = [(t.name, f"{t.title.ljust(width)}[dim]{t.name}[/dim]") for t in TOOLS if known.get(t.name) is not False]
        hidden = [t.title for t in TOOLS if known.get(t.name) is False]
        note = f"[dim]No data in this run (hidden): {', '.join(hidden)}[/dim]" if hidden else ""
        return choices, note, {name for name, v in known.items() if v is None}

    @work(thread=True, exclusive=True, group="tools", description="checking which tools have data")
    def _check_tools(self, run: RunData, picker: PickerScreen) -> None:
        # Off the UI thread: the op stats may still be computing (this waits for them, it does not
        # compute them twice) or be read back from the cache.
        from tputui.errors import UserError

        try:
            names = self.tools_with_data(run)
        except UserError as e:
            self.post_message(Notice(str(e), "error"))
            names = []
        choices, note, _ = self._tool_choices({t.name: t.name in names for t in TOOLS})
        # To the picker as a message: a picker closed meanwhile drops it (nothing draws into it).
        picker.post_message(PickerScreen.Answered(choices, note))

    def known_tools(self, run: RunData, imports: bool = False) -> dict[str, bool | None]:
        """Which tools have data, as known now without reading a host (None: still to check)."""
        if run.name in self._available:
            return {t.name: t.name in self._available[run.name] for t in TOOLS}
        return tools_known(run, imports)

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

