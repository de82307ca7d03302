"""ToolScreen: the base every tool screen builds on.

It runs the tool's analysis in a thread worker (the UI thread never decodes or computes),
shows progress while it loads, then calls `show(result)`, which subclasses implement by
mounting widgets into `self.body`. Errors become one line on the screen plus a notification;
the app keeps running.

    class MyScreen(ToolScreen[MyResult]):
        def show(self, result: MyResult) -> None:
            self.body.mount(FrameTable(result.tables()["ops"]))
"""
from __future__ import annotations

import re
import time
from typing import Any, Generic, TypeVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from tputui.data.progress import Pace, Progress
from tputui.data.run_data import RunData
from tputui.screens import load_messages as lm
from tputui.screens.load_messages import Loaded, LoadFailed, LoadProgress, answer
from tputui.tools import Tool
from tputui.widgets.footer import KeyFooter
from tputui.widgets.type_ahead import hand_to_entry


def progress_line(text: str, pace: Pace, started: float) -> str:
    """'decoding w0 record 3 (12.0 MB)  (42%, ~12 s left, 8.1 s)': the step, how far along the
    counted steps are (when they are counted) and the seconds since the load began."""
    now = time.monotonic()
    elapsed = now - started
    figures = [f for f in (pace.describe(now), f"{elapsed:.1f} s" if elapsed > 0.3 else "") if f]
    return f"{text}  ({', '.join(figures)})" if figures else text


class ContextBar(Static):
    """Top line: where we are (run, host, tool) and the keys to change it.

    The trailing key hint (`[dim](t tool · r run · ? help · q quit)[/dim]`) gives way to the
    place: when the line is wider than the bar, its keys are dropped from the front (`? help` and
    `q quit` last), so the hint is never cut in the middle of a word."""

    DEFAULT_CSS = "ContextBar { dock: top; height: 1; background: $surface; color: $foreground; text-style: bold; padding: 0 1; }"
    _HINT = re.compile(r"\s*\[dim\]\((?P<keys>[^()]*)\)\[/dim\]\s*$")

    def __init__(self, content: str = "", **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._full = content

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        self._full = content
        super().update(self._fitted(content), layout=layout)

    def on_resize(self) -> None:
        super().update(self._fitted(self._full))

    def _fitted(self, content: Any) -> Any:
        width = self.size.width - 2  # padding: 0 1
        if not isinstance(content, str) or width <= 0:
            return content
        m = self._HINT.search(content)
        if m is None or Text.from_markup(content).cell_len <= width:
            return content
        place = content[:m.start()]
        keys = m.group("keys").split(" · ")
        while keys:
            hint = f"  [dim]({' · '.join(keys)})[/dim]"
            if Text.from_markup(place + hint).cell_len <= width:
                return place + hint
            keys = keys[1:]
        return place


R = TypeVar("R")  # what the screen's analysis returns (its tool's result object)


class ToolScreen(Screen[None], Generic[R]):
    """Loads `tool`'s result for (run, host) in a worker, then draws it via `show`."""

    BINDINGS = [Binding("f5,R", "reload", "Reload", show=False,
                        tooltip="reload: rescan the logdir for new runs and load this tool again")]
    help_notes = ""  # a few words `?` shows under this screen's keys (markup)
    DEFAULT_CSS = """
    ToolScreen #body { height: 1fr; }
    ToolScreen #loading { height: 1; padding: 0 1; text-style: bold; }
    ToolScreen #progress { color: $text-muted; padding: 0 1; }
    ToolScreen .error { color: $text-error; padding: 1 2; }
    ToolScreen .no-data { padding: 1 2 0 2; }
    ToolScreen .no-data-hint { color: $text-muted; padding: 0 2; }
    """

    def __init__(self, run: RunData, host: str | None, tool: Tool, **options: Any) -> None:
        super().__init__()
        self.run_data, self.host, self.tool, self.options = run, host, tool, options
        self.result: R | None = None
        self.error: str | None = None
        self._started = 0.0
        self._progress_text = ""
        self._ticker: Timer | None = None  # keeps the elapsed seconds moving between progress lines
        self._pace = Pace()  # the percentage and time left of counted steps (pieces, hosts, records)

    @property
    def loaded(self) -> R:
        """The result, for code that runs only once it is drawn (its widgets' keys and events)."""
        if self.result is None:
            raise RuntimeError(f"{self.tool.title}: the result is not loaded yet")
        return self.result

    @property
    def body(self) -> Vertical:
        return self.query_one("#body", Vertical)

    def compose(self) -> ComposeResult:
        yield ContextBar(self.context_text(), id="context")
        with Vertical(id="body"):
            # A static line, not Textual's animated LoadingIndicator: its repaints compete with the
            # loading worker for the GIL and slowed loads ~9x on a busy 2-core machine.
            yield Static(f"loading {self.tool.title}…", id="loading")
            yield Static("", id="progress")
        yield KeyFooter()

    def context_text(self) -> str:
        return (f"[b]{self.tool.title}[/b]  │  run [b]{self.run_data.name}[/b]  │  host {self.host_label()}"
                f"  [dim](t tool · r run · h host · ? help · q quit)[/dim]")

    def host_label(self) -> str:
        """The host part of the context bar (markup)."""
        host = self.host or ("all hosts" if len(self.run_data.hosts) > 1 else (self.run_data.hosts or ["-"])[0])
        return f"[b]{host}[/b]"

    loads_on_mount = True  # False: a screen that only stands in for the tool's (screens/opening.py)

    def on_mount(self) -> None:
        if self.loads_on_mount:
            self.load()

    def action_reload(self) -> None:
        rescan = getattr(self.app, "rescan", None)
        if rescan is not None:
            rescan()
        self.load()

    # What the load worker answers (screens/load_messages.py); kept here as `self.Loaded` & co.
    # (handlers name them lm.*: inside the class these names are the attributes, not types)
    LoadProgress = LoadProgress
    Loaded = Loaded
    LoadFailed = LoadFailed

    @work(thread=True, exclusive=True, group="analysis", description="analysis")
    def load(self) -> None:
        self._started = time.monotonic()
        self._pace = Pace()

        def compute(progress: Progress) -> R:
            progress(f"loading {self.tool.title}…")
            return self.analyze(progress)

        answer(self, compute)

    def on_key(self, event) -> None:
        # Keys typed right after `/` or `g` reach the screen before the entry they opened has
        # the focus: they are that entry's (type_ahead.py).
        hand_to_entry(self, event)

    RESULT_KEYS = frozenset({"export_csv"})  # keys that act on a result: hidden until there is one

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.RESULT_KEYS and self.result is None:
            # A screen with no table at all still answers `x` with what to use instead.
            return action == "export_csv" and not self.offers_csv
        return True

    def key_for(self, action: str) -> str:
        """The key bound to `action` here, as the footer writes it: hints name the real key."""
        for bindings in self._bindings.key_to_bindings.values():
            for b in bindings:
                if b.action in (action, f"screen.{action}"):
                    return self.app.get_key_display(b)
        raise KeyError(action)

    @property
    def offers_csv(self) -> bool:
        """Whether `x` writes a table here (`?` leaves it out where it would only refuse)."""
        return type(self).action_export_csv is not ToolScreen.action_export_csv

    def action_export_csv(self) -> None:
        """`x` (an app key, so every screen answers it): screens with a table override this
        (CsvExportMixin); here it says what to use instead."""
        self.notify(f"{self.tool.title} has no table to write as CSV; for everything it shows: "
                    f"tputui export LOGDIR --tool {self.tool.name} --format json", severity="warning", timeout=8)

    def analyze(self, progress: Progress) -> R:
        """Runs in the worker thread; `progress(text)` shows a line under "loading". Override
        only to add steps; never touch widgets here."""
        return self.tool.analyze_fn()(self.run_data, self.host, progress=progress, **self.options)

    def on_load_progress(self, event: lm.LoadProgress) -> None:
        self._progress_text = event.text
        self._pace.note(event.text, time.monotonic())
        if self._ticker is None:  # one repaint a second: a long step (GBs of events) shows it is alive
            self._ticker = self.set_interval(1.0, self._show_progress)
        self._show_progress()

    def _show_progress(self) -> None:
        for w in self.query("#progress").results(Static):
            w.update(progress_line(self._progress_text, self._pace, self._started))

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    async def _clear_body(self) -> None:
        await self.body.remove_children()

    async def on_loaded(self, event: lm.Loaded[R]) -> None:
        self._stop_ticker()
        self.result, self.error = event.result, None
        await self._clear_body()
        self.show(event.result)
        skipped = self.run_data.unreadable if self.host is None else {}
        if skipped:  # an all-hosts result without them: say which and why
            self.notify(f"{len(skipped)} unreadable host file(s) left out: {next(iter(skipped.values()))}",
                        title=self.tool.title, severity="warning", timeout=8)

    async def on_load_failed(self, event: lm.LoadFailed) -> None:
        self._stop_ticker()
        message, no_data = event.text, event.no_data
        self.error = message
        await self._clear_body()
        fallback = getattr(self.app, "no_data_on_first_screen", None)
        if no_data and fallback is not None and fallback(self):
            return
        if no_data:  # one calm line that says why; t picks another tool
            await self.body.mount(Static(f"No data: {message}", classes="no-data", id="error", markup=False))
            await self.body.mount(Static("t picks a tool that has data in this run", classes="no-data-hint"))
            return
        # Said once: on the screen, where it stays (a notification repeated the same lines over it).
        await self.body.mount(Static(message, classes="error", id="error", markup=False))
        self.refresh_bindings()  # keys that need a result leave the footer

    def show(self, result: R) -> None:  # pragma: no cover - subclasses draw
        raise NotImplementedError
