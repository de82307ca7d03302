"""The live monitor pane: figures of the last window with sparkline history, top ops, status.

Samples come from a thread worker (a MonitorSession against a server, or a recorded list in
tests), so the UI never waits on gRPC. `o` saves the last window as a run and opens it as a
full profile; quitting that profile returns here.

The sparklines and op bars take the width the terminal gives (more history on a wide one, every
column kept on 80). Figures are the last window that had activity; when newer windows failed or
were empty the title says which window the figures are from, and until one arrives the panes
say why in one line.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from tputui import format as fmt
from tputui.live.monitor import History, MonitorSession, Sample, save_window
from tputui.screens.help import HelpScreen
from tputui.widgets.charts import PALETTE, bar_text, sparkline

MIN_SPARK, MIN_BAR, MAX_BAR = 8, 8, 40
LABEL_WIDTH = max(len("Utilization (duty cycle)"), 24)


def _pct(v: float | None) -> str:
    return fmt.percent(v, missing="n/a")


# (label, Sample field, formatter, (note, short note) when the window has no such figure: the
# short one where the history column is narrower than the note)
_ms = fmt.duration_ms_or_s
FIGURES: list[tuple[str, str, Callable[[float | None], str], tuple[str, str]]] = [
    ("Utilization (duty cycle)", "utilization_pct", _pct, ("no TPU / GPU in the trace", "no TPU / GPU")),
    ("MXU utilization", "mxu_pct", _pct, ("needs the TPU's performance counters", "no counters")),
    ("Device idle", "idle_pct", _pct, ("no TPU / GPU in the trace", "no TPU / GPU")),
    ("Step time avg", "step_ms_avg", _ms, ("no step markers in the window", "no markers")),
    ("Step time min", "step_ms_min", _ms, ("", "")),
    ("Step time max", "step_ms_max", _ms, ("", "")),
    ("Steps in window", "steps", lambda v: "n/a" if v is None else f"{v:.0f}", ("", "")),
    ("Input (infeed)", "infeed_pct_avg", _pct, ("no steps to measure input against", "no steps")),
]
RANGE_WIDTH = len("999.999 ms … 999.999 ms")


class MonitorScreen(Screen):
    """Draws a stream of Samples; `source` yields them (blocking is fine: it runs in a thread)."""

    BINDINGS = [
        Binding("o", "open_window", "Open last window", id="monitor.open"),
        Binding("p", "toggle_pause", "Pause", id="monitor.pause"),
        Binding("question_mark", "app.help", "Help", show=False),
        Binding("q", "app.quit", "Quit", id="monitor.quit"),
    ]
    DEFAULT_CSS = """
    MonitorScreen #monitor-head { dock: top; height: 1; background: $primary-background; padding: 0 1; }
    MonitorScreen #figures { height: auto; border: round $panel; padding: 0 1; }
    MonitorScreen #top-ops { height: 1fr; border: round $panel; padding: 0 1; }
    MonitorScreen #status { height: auto; padding: 0 1; }
    MonitorScreen #status.error { color: $error; }
    """

    class OpenWindow(Message):
        """The user asked to open the last window (saved as a run under `logdir`)."""

        def __init__(self, logdir: str) -> None:
            super().__init__()
            self.logdir = logdir

    def __init__(self, source: Callable[[], Iterable[Sample]], *, address: str, window_ms: int,
                 history: History | None = None, session: MonitorSession | None = None,
                 windows_dir: str | None = None) -> None:
        super().__init__()
        self.source, self.address, self.window_ms = source, address, window_ms
        self.history = history if history is not None else History()
        self.session, self.windows_dir = session, windows_dir
        self._resume = threading.Event()
        self._resume.set()
        self.done = False  # the source ran out (num-queries reached)

    def compose(self) -> ComposeResult:
        yield Static("", id="monitor-head")
        with Vertical():
            yield Static("", id="figures")
            yield Static("", id="top-ops")
            yield Static("waiting for the first window…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.redraw()
        self.stream()

    def on_unmount(self) -> None:
        if self.session is not None:
            self.session.stop()
        self._resume.set()

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    @work(thread=True, exclusive=True, group="monitor", description="monitor")
    def stream(self) -> None:
        for s in self.source():
            self.app.call_from_thread(self.add_sample, s)
            while not self._resume.wait(0.2):
                if self.session is not None and self.session.stopped:
                    return
            if self.session is not None and self.session.stopped:
                return
        self.app.call_from_thread(self._finished)

    def add_sample(self, s: Sample) -> None:
        self.history.add(s)
        self.redraw()

    def _finished(self) -> None:
        self.done = True
        self.redraw()

    # --- drawing -----------------------------------------------------------------------
    def on_resize(self) -> None:
        self.call_after_refresh(self.redraw)  # the sparklines and bars follow the new width

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        ok, last = self.history.last_ok, self.history.last
        stale = ok is not None and last is not ok
        when = f" ({time.strftime('%H:%M:%S', time.localtime(ok.time))})" if stale else ""
        self.query_one("#figures").border_title = ("Figures of the last window with activity" if stale
                                                   else "Figures of the last window") + when
        self.query_one("#top-ops").border_title = ("Top ops of the last window with activity" if stale
                                                   else "Top ops of the last window") + when
        self.query_one("#monitor-head", Static).update(self._head())
        self.query_one("#figures", Static).update(self._figures())
        self.query_one("#top-ops", Static).update(self._top_ops())
        status = self.query_one("#status", Static)
        text, is_error = self._status()
        status.update(text)
        status.set_class(is_error, "error")

    def _head(self) -> Text:
        ok = self.history.last_ok
        t = Text()
        t.append("Monitor ", style="bold")
        t.append(self.address, style="bold")
        if ok is not None:
            device = ok.device_type or "unknown device"
            cores = f" × {ok.cores} cores" if ok.cores else (" (host only)" if ok.source == "profile" else "")
            t.append(f"  │  {device}{cores}")
        t.append(f"  │  window {self.window_ms} ms  │  {self._counts()}")
        t.append("  (o open window · p pause · ? help · q quit)", style="dim")
        return t

    def _pane_width(self, selector: str) -> int:
        widget = self.query_one(selector)
        return widget.content_region.width or (self.size.width - 4)

    def spark_width(self) -> int:
        """History cells that fit beside the label, now (10) and min … max columns (2 cells apart)."""
        return max(MIN_SPARK, self._pane_width("#figures") - LABEL_WIDTH - 10 - RANGE_WIDTH - 6)

    def _no_window(self) -> Text | None:
        """Why there are no figures yet (None once a window had activity)."""
        if self.history.last_ok is not None:
            return None
        last = self.history.last
        if last is None:
            return Text("waiting for the first window…", style="dim")
        if last.error:
            return Text("No window yet: the server has not answered (see the status line).", style="dim")
        empty = sum(1 for x in self.history.samples if x.empty)
        return Text(f"No activity yet: {empty} window{'s' if empty != 1 else ''} came back empty "
                    "(nothing ran on the server).", style="dim")

    def _counts(self) -> str:
        """`12 windows (2 empty, 1 failed)`: a failed cycle is not a window of figures."""
        samples = self.history.samples
        failed = sum(1 for x in samples if x.error)
        empty = sum(1 for x in samples if x.empty and not x.error)
        n = len(samples) - failed
        extra = ", ".join(f"{k} {what}" for k, what in ((empty, "empty"), (failed, "failed")) if k)
        return f"{n} window{'s' if n != 1 else ''}" + (f" ({extra})" if extra else "")

    def _figures(self) -> Table | Text:
        ok = self.history.last_ok
        if ok is None:
            return self._no_window()
        width = self.spark_width()
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold", no_wrap=True, min_width=LABEL_WIDTH)
        t.add_column(justify="right", no_wrap=True, min_width=10)
        t.add_column(no_wrap=True, min_width=width, max_width=width, overflow="ellipsis")
        t.add_column(justify="right", no_wrap=True)
        t.add_row("", Text("now", style="dim"), Text("history", style="dim"), Text("min … max", style="dim"))
        for i, (label, name, show, (note, short)) in enumerate(FIGURES):
            value = getattr(ok, name) if ok is not None else None
            if ok is not None and name == "steps" and ok.source != "profile":
                value = None
            series = self.history.series(name)
            if value is None:
                t.add_row(label, Text(show(None), style="dim"),
                          Text(note if len(note) <= width else short, style="dim", overflow="ellipsis"), "")
                continue
            spark = Text(sparkline(series, width), style=PALETTE[i % len(PALETTE)])
            rng = f"{show(min(series))} … {show(max(series))}" if len(series) > 1 else ""
            t.add_row(label, show(value), spark, rng)
        return t

    def _top_ops(self) -> Table | Text:
        ok = self.history.last_ok
        if ok is None:
            return Text("No ops yet." if self.history.last is not None else "", style="dim")
        if not ok.top_ops:
            why = ("the server's Monitor answer has no op list" if ok.source == "monitor"
                   else "no XLA ops in the window")
            return Text(why, style="dim")
        name_w = min(48, max(len(op["name"]) for op in ok.top_ops))
        count_w = max(5, max(len(f"{op['count']}") for op in ok.top_ops))
        # name, time (10), share (6), bar, count; each column padded one cell either side.
        bar_w = max(MIN_BAR, min(MAX_BAR, self._pane_width("#top-ops") - name_w - 10 - 6 - count_w - 10))
        t = Table(box=None, padding=(0, 1), expand=False, show_edge=False)
        t.add_column("op", no_wrap=True, max_width=48, overflow="ellipsis")
        t.add_column("time", justify="right", no_wrap=True)
        t.add_column("share", justify="right", no_wrap=True)
        t.add_column("", no_wrap=True)
        t.add_column("count", justify="right", no_wrap=True)
        top = max(op["percent"] for op in ok.top_ops) or 1.0
        for i, op in enumerate(ok.top_ops):
            t.add_row(op["name"], _ms(op["time_ms"]), fmt.percent(op["percent"]),
                      bar_text(op["percent"] / top, bar_w, PALETTE[i % len(PALETTE)]), f"{op['count']}")
        return t

    def _status(self) -> tuple[Text, bool]:
        last = self.history.last
        if last is None:
            return Text("waiting for the first window…", style="dim"), False
        stamp = time.strftime("%H:%M:%S", time.localtime(last.time))
        if last.error:
            retry = f"; retrying in {last.retry_in_s:g} s" if last.retry_in_s else ""
            return Text(f"✖ {stamp}  {last.error}{retry}"), True
        if last.empty:
            msg = f"○ {stamp}  empty window: nothing ran during the last {last.window_ms} ms"
        else:
            source = "the server's Monitor" if last.source == "monitor" else "a profile capture"
            msg = f"● {stamp}  from {source}"
        if self.paused:
            msg += "  — paused (p resumes)"
        elif self.done:
            msg += "  — done (all queries made)"
        return Text(msg), False

    # --- actions -----------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        if self.paused:
            self._resume.set()
        else:
            self._resume.clear()
        self.redraw()

    def action_open_window(self) -> None:
        s = self.session
        if s is None or s.last_xspace is None:
            self.notify("No captured window yet (the server's Monitor answers carry no profile)",
                        severity="warning")
            return
        logdir = self.windows_dir or default_windows_dir(self.address)
        try:
            save_window(logdir, self.address, s.last_xspace, s.last_xspace_time or time.time())
        except ValueError as e:
            self.notify(str(e), severity="error")
            return
        self.post_message(self.OpenWindow(logdir))


def default_windows_dir(address: str) -> str:
    """Where `o` keeps windows when --save-windows is not given (the cache, never a logdir)."""
    from tputui.data.cache import cache_root
    from tputui.live.client import host_file_name

    return os.path.join(cache_root(), "monitor-windows", host_file_name(address))


class MonitorApp(App):
    """`tputui monitor`: the pane on its own; `open_logdir` is set when the user opened a window."""

    TITLE = "tputui monitor"
    CSS_PATH = "../tputui.tcss"

    def __init__(self, screen: MonitorScreen) -> None:
        super().__init__()
        self.monitor_screen = screen
        self.open_logdir: str | None = None

    def on_mount(self) -> None:
        self.push_screen(self.monitor_screen)

    def on_monitor_screen_open_window(self, event: MonitorScreen.OpenWindow) -> None:
        self.open_logdir = event.logdir
        self.exit()

    def action_help(self) -> None:
        lines = [("o", "save the last window as a run and open it as a full profile (q returns here)"),
                 ("p", "pause / resume sampling"), ("q", "quit")]
        self.push_screen(HelpScreen(lines, "Monitor"))


def run_monitor_app(session: MonitorSession, num_queries: int | None = None, save_windows: str | None = None) -> int:
    """Run the pane; `o` leaves it for the full profile app and comes back when that quits."""
    history = History()
    while True:
        session.restart()
        screen = MonitorScreen(lambda: session.samples(num_queries), address=session.address,
                               window_ms=session.duration_ms, history=history, session=session,
                               windows_dir=save_windows)
        app = MonitorApp(screen)
        app.run()
        session.stop()
        if app.open_logdir is None:
            return app.return_code or 0
        from tputui.app import TputuiApp
        from tputui.data.logdir import open_logdir

        TputuiApp(open_logdir(app.open_logdir)).run()
