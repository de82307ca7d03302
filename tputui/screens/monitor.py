"""The live monitor pane: libtpu's runtime metrics per chip (HBM bar, duty-cycle sparkline, HLO
queue and execution time), one row per worker (step time, idle, the slowest marked), and the
figures and top ops of one worker's last window with sparkline history.

Items (RuntimeReading / Sample) come from a thread worker (a LiveFeed, or a recorded list in
tests) into a MonitorState, so the UI never waits on gRPC and draws only what the state holds.
`o` saves the focused worker's last window as a run and opens it as a full profile; `W` moves
the focus to the next worker.

The sparklines and bars take the width the terminal gives (more history on a wide one, every
column kept on 80). Figures are the last window that had activity; when newer windows failed or
were empty the title says which window the figures are from, and until one arrives the panes
say why in one line.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from tputui import format as fmt
from tputui.live.client import LiveError
from tputui.live.monitor import History, Sample, default_windows_dir, save_window
from tputui.live.monitor_state import MonitorState
from tputui.live.runtime_metrics import RuntimeReading
from tputui.widgets.charts import PALETTE, bar_text, sparkline
from tputui.widgets.footer import KeyFooter

MIN_SPARK, MIN_BAR, MAX_BAR = 8, 8, 40
LABEL_WIDTH = max(len("Utilization (duty cycle)"), 24)
GIB = float(1 << 30)


def _pct(v: float | None) -> str:
    return fmt.percent(v, missing="n/a")


_ms = fmt.duration_ms_or_s


def _us(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} us"


def _stamp(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def retry_text(failed_at: float, retry_in_s: float | None, now: float) -> str:
    """'; retrying in 4 s', counting down from the failure's time to the next try."""
    if not retry_in_s:
        return ""
    left = math.ceil(failed_at + retry_in_s - now)
    return f"; retrying in {left} s" if left > 0 else "; retrying now"


# (label, Sample field, formatter, (note, short note) when the window has no such figure: the
# short one where the history column is narrower than the note)
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
SOURCES = {"monitor": "the server's Monitor", "snapshot": "a profile snapshot", "profile": "a profile capture"}


class MonitorScreen(Screen):
    """Draws a stream of items; `source` yields them (blocking is fine: it runs in a thread)."""

    BINDINGS = [
        Binding("o", "open_window", "Open last window", id="monitor.open"),
        Binding("W", "next_worker", "Next worker", id="monitor.worker"),
        Binding("p", "toggle_pause", "Pause", id="monitor.pause"),
        Binding("question_mark", "app.help", "Help", show=False),
        Binding("q", "app.quit", "Quit", id="monitor.quit"),
    ]
    DEFAULT_CSS = """
    MonitorScreen #monitor-head { dock: top; height: 1; background: $surface; color: $foreground; padding: 0 1; }
    MonitorScreen #chips, MonitorScreen #workers, MonitorScreen #figures {
        height: auto; border: round $foreground 55%; padding: 0 1; }
    MonitorScreen #top-ops { height: auto; min-height: 5; border: round $foreground 55%; padding: 0 1; }
    MonitorScreen #monitor-body { height: 1fr; scrollbar-size-vertical: 1; overflow-y: scroll; }
    MonitorScreen #status { height: auto; padding: 0 1; }
    MonitorScreen #status.error { color: $error; }
    """

    # The stream worker's news, as messages: a closed screen drops them.
    class Arrived(Message, bubble=False):
        def __init__(self, item: Sample | RuntimeReading) -> None:
            super().__init__()
            self.item = item

    class Ended(Message, bubble=False):
        """The source ran out."""

    class OpenWindow(Message):
        """The user asked to open the last window (saved as a run under `logdir`)."""

        def __init__(self, logdir: str) -> None:
            super().__init__()
            self.logdir = logdir

    def __init__(self, source: Callable[[], Iterable[Sample | RuntimeReading]], *, addresses: list[str],
                 window_ms: int, state: MonitorState | None = None, feed=None,
                 windows_dir: str | None = None, runtime: bool = False) -> None:
        super().__init__()
        self.source, self.window_ms = source, window_ms
        self.state = state if state is not None else MonitorState(addresses, runtime=runtime)
        self.feed, self.windows_dir = feed, windows_dir
        self.focus_index = 0
        self._resume = threading.Event()
        self._resume.set()
        self.done = False  # the source ran out (num-queries reached)
        self._closing = False

    def compose(self) -> ComposeResult:
        yield Static("", id="monitor-head")
        with VerticalScroll(id="monitor-body"):
            yield Static("", id="chips")
            yield Static("", id="workers")
            yield Static("", id="figures")
            yield Static("", id="top-ops")
        yield Static("waiting for the first window…", id="status")
        yield KeyFooter()

    def on_mount(self) -> None:
        try:
            self.query_one("#chips").display = self.state.runtime
            self.query_one("#workers").display = len(self.state.workers) > 1
        except NoMatches:  # the app is already closing (a signal at start-up): nothing to draw or stream
            return
        self.redraw()
        self.set_interval(1.0, self._count_down)
        self.stream()

    def _count_down(self) -> None:
        """Between tries, the status line's 'retrying in N s' counts down."""
        if not self.is_mounted:
            return
        text, is_error = self._status()
        if is_error and "retrying" in text.plain:
            self.query_one("#status", Static).update(text)

    def on_unmount(self) -> None:
        self._closing = True
        if self.feed is not None:
            self.feed.stop()
        self._resume.set()

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    @property
    def address(self) -> str:
        """The focused worker."""
        addresses = self.state.addresses
        return addresses[self.focus_index % len(addresses)] if addresses else ""

    @property
    def history(self) -> History:
        return self.state.workers.get(self.address) or History()

    def _feed_stopped(self) -> bool:
        return self.feed is not None and self.feed.stopped

    @work(thread=True, exclusive=True, group="monitor", description="monitor")
    def stream(self) -> None:
        items = iter(self.source())
        try:
            for item in items:
                if self._closing:
                    return
                self.post_message(self.Arrived(item))
                while not self._resume.wait(0.2):
                    if self._closing or self._feed_stopped():
                        return
                if self._closing or self._feed_stopped():
                    return
            self.post_message(self.Ended())
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a feed's generator stops its sources as it closes

    def on_monitor_screen_arrived(self, event: Arrived) -> None:
        self.add_item(event.item)

    def on_monitor_screen_ended(self, _event: Ended) -> None:
        self.done = True
        self.redraw()

    def add_item(self, item: Sample | RuntimeReading) -> None:
        self.state.add(item)
        self.redraw()

    # --- drawing -----------------------------------------------------------------------
    def on_resize(self) -> None:
        self.call_after_refresh(self.redraw)  # the sparklines and bars follow the new width

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        ok, last = self.history.last_ok, self.history.last
        stale = ok is not None and last is not ok
        when = f" ({_stamp(ok.time)})" if stale and ok is not None else ""
        whose = f" of {self.address}" if len(self.state.workers) > 1 else ""
        self.query_one("#figures").border_title = ("Figures of the last window with activity" if stale
                                                   else "Figures of the last window") + whose + when
        self.query_one("#top-ops").border_title = ("Top ops of the last window with activity" if stale
                                                   else "Top ops of the last window") + whose + when
        self.query_one("#monitor-head", Static).update(self._head())
        if self.state.runtime:
            self.query_one("#chips").border_title = self._chips_title()
            self.query_one("#chips", Static).update(self._chips())
        if len(self.state.workers) > 1:
            self.query_one("#workers").border_title = f"Workers ({len(self.state.workers)}): last window each"
            self.query_one("#workers", Static).update(self._workers())
        self.query_one("#figures", Static).update(self._figures())
        self.query_one("#top-ops", Static).update(self._top_ops())
        status = self.query_one("#status", Static)
        text, is_error = self._status()
        status.update(text)
        status.set_class(is_error, "error")

    def _head(self) -> Text:
        ok = self.history.last_ok
        reading = self.state.last_good_reading
        t = Text()
        t.append("Monitor ", style="bold")
        n = len(self.state.workers)
        t.append(self.address if n == 1 else f"{n} workers", style="bold")
        if reading is not None:
            t.append(f"  │  {len(reading.chips)} TPU chips")
        elif ok is not None:
            device = ok.device_type or "unknown device"
            cores = f" × {ok.cores} cores" if ok.cores else (" (host only)" if ok.from_trace else "")
            t.append(f"  │  {device}{cores}")
        t.append(f"  │  window {self.window_ms} ms  │  {self._counts()}")
        t.append("  (? help)", style="dim")
        return t

    def _pane_width(self, selector: str) -> int:
        widget = self.query_one(selector)
        return widget.content_region.width or (self.size.width - 4)

    def spark_width(self) -> int:
        """History cells that fit beside the label, now (10) and min … max columns (2 cells apart)."""
        return max(MIN_SPARK, self._pane_width("#figures") - LABEL_WIDTH - 10 - RANGE_WIDTH - 6)

    def _counts(self) -> str:
        """`12 windows (2 empty, 1 failed)`: a failed cycle is not a window of figures."""
        n, empty, failed = self.state.counts()
        extra = ", ".join(f"{k} {what}" for k, what in ((empty, "empty"), (failed, "failed")) if k)
        return f"{n} window{'s' if n != 1 else ''}" + (f" ({extra})" if extra else "")

    # --- runtime metrics, one row per chip ----------------------------------------------
    def _chips_title(self) -> str:
        good, last = self.state.last_good_reading, self.state.last_reading
        shown = last or good
        address = shown.address if shown else ""
        title = f"TPU chips: libtpu runtime metrics at {address}"
        if good is not None and last is not good:
            title += f" (as of {_stamp(good.time)})"
        return title

    def _chips(self) -> Table | Text | Group:
        r = self.state.last_good_reading
        last = self.state.last_reading
        if r is None:
            if last is None:
                return Text("waiting for libtpu's runtime metrics…", style="dim")
            return Text("No runtime metrics yet: libtpu has not answered (see the status line).", style="dim")
        inner = self._pane_width("#chips")
        # Optional columns (header, width, cell), most wanted first: each shown only where libtpu
        # serves it and the bar and history keep 8 cells beside it.
        optional = [
            ("TC util", 7, lambda c: _pct(c.tensorcore_util_pct),
             any(c.tensorcore_util_pct is not None for c in r.chips)),
            ("queue", 5, lambda c: "n/a" if c.hlo_queue is None else str(c.hlo_queue),
             any(c.hlo_queue is not None for c in r.chips)),
            ("HLO p50 / p99.9", 19, lambda c: "n/a" if c.hlo_exec_us is None
             else f"{_us(c.hlo_exec_us.p50)} / {_us(c.hlo_exec_us.p999)}",
             any(c.hlo_exec_us is not None for c in r.chips)),
        ]
        used_w = 4 + 17 + 6 + 2 * 4 + 2 * MIN_SPARK + 2  # chip, used / total, duty, gaps, bar + history, spare
        columns = []
        for head, width, cell, present in optional:
            if present and used_w + width + 2 <= inner:
                columns.append((head, width, cell))
                used_w += width + 2
        free = 2 * MIN_SPARK + inner - used_w  # 2 spare cells kept: a scrollbar may take them
        bar_w = max(MIN_BAR, min(MAX_BAR, free // 3))
        spark_w = max(MIN_SPARK, free - bar_w)
        t = Table.grid(padding=(0, 2))
        t.add_column(justify="right", no_wrap=True, min_width=4)
        t.add_column(no_wrap=True, width=bar_w)
        t.add_column(justify="right", no_wrap=True, min_width=17)
        t.add_column(justify="right", no_wrap=True, min_width=6)
        t.add_column(no_wrap=True, width=spark_w)
        for _head, width, _cell in columns:
            t.add_column(justify="right", no_wrap=True, min_width=width)
        history = "duty cycle history (0 … 100%)" if spark_w >= 29 else "history"
        t.add_row(*(Text(h, style="dim") for h in ("chip", "HBM", "used / total", "duty", history,
                                                   *(c[0] for c in columns))))
        for c in r.chips:
            frac = (c.hbm_pct or 0.0) / 100.0
            used = (f"{c.hbm_used / GIB:.1f} / {c.hbm_total / GIB:.1f} GiB" if c.hbm_used is not None and c.hbm_total
                    else "n/a")
            series = self.state.chip_series(c.chip, "duty_cycle_pct")
            t.add_row(str(c.chip), bar_text(frac, bar_w, PALETTE[0]), used, _pct(c.duty_cycle_pct),
                      Text(sparkline(series, spark_w, 0.0, 100.0), style=PALETTE[1]),
                      *(cell(c) for _head, _w, cell in columns))
        if not r.latencies_us:
            return t
        lines = Text()
        for i, (label, p) in enumerate(r.latencies_us.items()):
            lines.append("\n" if i else "")
            lines.append(f"{label} latency", style="bold")
            lines.append(f"  p50 {_us(p.p50)} · p90 {_us(p.p90)} · p99.9 {_us(p.p999)}")
        return Group(t, lines)

    # --- workers -------------------------------------------------------------------------
    def _workers(self) -> Table:
        slow = self.state.slowest()
        # the step-time range only where it fits beside the rest (about 96 cells with it)
        wide = self._pane_width("#workers") >= 96
        t = Table(box=None, padding=(0, 1), expand=False, show_edge=False)
        t.add_column("worker", no_wrap=True)
        t.add_column("step time", justify="right", no_wrap=True)
        if wide:
            t.add_column("min … max", justify="right", no_wrap=True)
        t.add_column("idle", justify="right", no_wrap=True)
        t.add_column("steps", justify="right", no_wrap=True)
        t.add_column("window", no_wrap=True)
        t.add_column("", no_wrap=True)
        for i, (address, h) in enumerate(self.state.workers.items()):
            ok, last = h.last_ok, h.last
            mark = "▶ " if i == self.focus_index % len(self.state.workers) else "  "
            if ok is None:
                why = "waiting…" if last is None else ("failed" if last.error else "empty windows")
                t.add_row(mark + address, "n/a", *([""] if wide else []), "", "", Text(why, style="dim"), "")
                continue
            rng = [f"{_ms(ok.step_ms_min)} … {_ms(ok.step_ms_max)}" if ok.step_ms_min is not None else ""]
            state = _stamp(ok.time) + (" (last failed)" if last is not None and last.error else "")
            t.add_row(mark + address, _ms(ok.step_ms_avg), *(rng if wide else []), _pct(ok.idle_pct), f"{ok.steps}",
                      state, Text("◀ slowest", style="bold") if slow is not None and slow.address == address else "")
        return t

    # --- the focused worker's figures ------------------------------------------------------
    def _no_window(self) -> Text:
        """Why there are no figures yet."""
        last = self.history.last
        if last is None:
            return Text("waiting for the first window…", style="dim")
        if last.error:
            return Text("No window yet: the server has not answered (see the status line).", style="dim")
        empty = sum(1 for x in self.history.samples if x.empty)
        return Text(f"No activity yet: {empty} window{'s' if empty != 1 else ''} came back empty "
                    "(nothing ran on the server).", style="dim")

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
            value = getattr(ok, name)
            if name == "steps" and not ok.from_trace:
                value = None
            series = self.history.series(name)
            if value is None:
                t.add_row(label, Text(show(None), style="dim"),
                          Text(note if len(note) <= width else short, style="dim", overflow="ellipsis"), "")
                continue
            spark = Text(sparkline(series, width), style=PALETTE[i % len(PALETTE)])
            rng = f"{show(min(series))} … {show(max(series))}" if len(series) > 1 else ""
            if name == "mxu_pct" and ok.mxu_source and ok.mxu_source.startswith("from the profile window"):
                label = "MXU utilization (window FLOPs)"  # not the counters: labelled with its source
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
            t.add_row(op["name"], _ms(op["time_ms"]), f"{op['percent']:.1f}%",
                      bar_text(op["percent"] / top, bar_w, PALETTE[i % len(PALETTE)]), f"{op['count']}")
        return t

    def _status(self) -> tuple[Text, bool]:
        last = self.history.last
        reading = self.state.last_reading
        if reading is not None and reading.error:
            retry = retry_text(reading.time, reading.retry_in_s, time.time())
            return Text(f"✖ {_stamp(reading.time)}  {reading.error}{retry}"), True
        if last is None:
            msg = "waiting for the first window…"
            if reading is not None:
                msg = f"● {_stamp(reading.time)}  runtime metrics; {msg}"
            return Text(msg, style="dim" if reading is None else ""), False
        stamp = _stamp(last.time)
        if last.error:
            retry = retry_text(last.time, last.retry_in_s, time.time())
            return Text(f"✖ {stamp}  {last.error}{retry}"), True
        if last.empty:
            msg = f"○ {stamp}  empty window: nothing ran during the last {last.window_ms} ms"
        else:
            msg = f"● {stamp}  window from {SOURCES.get(last.source, last.source)}"
        if reading is not None:
            msg += f" · runtime metrics {_stamp(reading.time)}"
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

    def action_next_worker(self) -> None:
        if len(self.state.workers) > 1:
            self.focus_index = (self.focus_index + 1) % len(self.state.workers)
            self.redraw()

    def action_open_window(self) -> None:
        session = None
        if self.feed is not None:
            session = next((s for s in self.feed.sessions if s.address == self.address), None)
        if session is None or session.last_xspace is None:
            self.notify("No captured window yet (the server's Monitor answers carry no profile)",
                        severity="warning")
            return
        logdir = self.windows_dir or default_windows_dir(self.address)
        try:
            save_window(logdir, self.address, session.last_xspace, session.last_xspace_time or time.time())
        except (LiveError, ValueError, OSError) as e:
            self.notify(str(e), severity="error")
            return
        self.post_message(self.OpenWindow(logdir))
