"""The diff screen (`D`): two runs side by side, then the op deltas.

Top: step time (count, mean, median, min, max, sigma) and the overview KPIs, A | B | B - A | %.
Below: every HLO and framework op with its time in A and B, largest change first (s sort, / filter,
x CSV); `V` / `v` (Enter: B, or the side the op ran on) open the op's events in that run's trace
viewer. Everything drawn comes from `analysis.diff.RunDiff`, loaded by `compare.diff_runs` in a worker.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import SimpleNamespace

import polars as pl
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tputui import format as fmt
from tputui.analysis.diff import RunDiff
from tputui.analysis.op_events import framework_op_rows, hlo_op_rows
from tputui.analysis.trace_cache import in_pieces
from tputui.compare import DiffStep, diff_runs
from tputui.data.progress import Pace
from tputui.data.run_data import RunData
from tputui.errors import UserError
from tputui.screens.app_api import ToolsApp, tools_app
from tputui.screens.base import ContextBar, progress_line
from tputui.screens.stacked import BackTable, StackedScreen
from tputui.widgets.footer import KeyFooter
from tputui.widgets.table import FrameTable

OP_COLUMNS = ["table", "side", "kind", "name", "only_in", "a_time_us", "b_time_us", "delta_us", "delta_pct",
              "a_occurrences", "b_occurrences", "a_flop_rate_gflops", "b_flop_rate_gflops"]


NARROW = 110  # columns below which the two summary tables stack


def _fmt(v, digits: int = 3) -> str:
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 1000):
        return fmt.count(v)
    return fmt.number(v, digits, missing="-")


def _signed(v, suffix: str = "") -> str:
    return "-" if v is None else f"{v:+,.3f}{suffix}"


def _fmt_delta_pct(v) -> str:
    return "" if v is None else f"{v:+.1f}%"  # signed, unlike format.percent


def _fmt_delta_us(v) -> str:
    return "" if v is None else f"{v:+,.3f}"


class DiffScreen(StackedScreen[RunDiff]):
    help_notes = ("A is the run you compare with, B the run you came from. Op times are total self times (µs); "
                  "rows sorted by the size of the change. [b]v[/b] / [b]Enter[/b] open the highlighted op's "
                  "events in B's trace viewer, [b]V[/b] in A's.")
    BINDINGS = [
        Binding("escape", "back", "Back", id="diff.back", tooltip="back to the tool you came from"),
        Binding("V", "show_in_trace('a')", "Trace A", id="diff.trace_a", tooltip="the highlighted op's events in run A"),
        Binding("v", "show_in_trace('b')", "Trace B", id="diff.trace_b", tooltip="the highlighted op's events in run B"),
        Binding("x", "export_csv", "CSV", id="diff.csv", tooltip="write the op deltas as shown to a CSV file here"),
    ]
    DEFAULT_CSS = """
    DiffScreen #diff-progress { padding: 0 1; color: $text-muted; }
    DiffScreen #diff-error { padding: 1 2; color: $error; }
    DiffScreen #diff-top { height: auto; max-height: 50%; overflow-y: auto; }
    DiffScreen #diff-steps, DiffScreen #diff-kpis { width: 1fr; height: auto; padding: 0 1; }
    DiffScreen #diff-notes { height: auto; padding: 0 1; color: $text-muted; }
    DiffScreen FrameTable { height: 1fr; min-height: 5; border: round $foreground 55%; }
    """
    tool = SimpleNamespace(title="Diff", name="diff")  # the title `?` shows

    def __init__(self, run_a: RunData, label_a: str, run_b: RunData, label_b: str, host: str | None) -> None:
        super().__init__()
        self.run_a, self.run_b, self.label_a, self.label_b, self.host = run_a, run_b, label_a, label_b, host
        self.result: RunDiff | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        host = self.host or "all hosts"
        yield ContextBar(f"[b]Diff[/b]  │  A [b]{self.label_a}[/b]  │  B [b]{self.label_b}[/b]  │  {host}"
                         "  [dim](v / V trace B / A · Esc back · ? help)[/dim]", id="context")
        with Vertical(id="body"):
            yield Static("comparing…", id="diff-progress", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self._started = time.monotonic()
        self._pace, self._step, self._detail = Pace(), "", ""
        self._ticker = self.set_interval(1.0, self._draw_progress)  # the seconds move between steps
        self.load()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("show_in_trace", "export_csv") and self.result is None:
            return False
        return True

    @work(thread=True, exclusive=True, group="diff", description="diff")
    def load(self) -> None:
        self.report(lambda progress: diff_runs(self.run_a, self.run_b, self.host, self.label_a, self.label_b,
                                               progress))

    def show_progress(self, text: str) -> None:
        if isinstance(text, DiffStep):  # which tool of which run: the count, with its pace
            self._pace.note(text, time.monotonic())
            self._step, self._detail = text, ""
        else:  # what that tool's load is doing
            self._detail = text
        self._draw_progress()

    def _draw_progress(self) -> None:
        line = progress_line(f"comparing: {self._step}" if self._step else "comparing…", self._pace, self._started)
        for w in self.query("#diff-progress").results(Static):
            w.update(f"{line}\n  {self._detail}" if self._detail else line)

    async def show_failure(self, message: str) -> None:
        self._ticker.stop()
        self.error = message
        body = self.query_one("#body", Vertical)
        await body.remove_children()
        await body.mount(Static(message, id="diff-error", markup=False))
        self.notify(message, title="Diff", severity="error", timeout=8)

    async def show_result(self, d: RunDiff) -> None:
        self._ticker.stop()
        self.result = d
        body = self.query_one("#body", Vertical)
        await body.remove_children()
        top = Horizontal(Static(self._steps_table(d), id="diff-steps"), Static(self._kpi_table(d), id="diff-kpis"),
                         id="diff-top")
        ops = d.tables()["ops"].select(OP_COLUMNS)
        table = BackTable(ops, id="diff-ops", formats={
            "a_time_us": fmt.number, "b_time_us": fmt.number, "delta_us": _fmt_delta_us, "delta_pct": _fmt_delta_pct})
        only = f"{int((ops['only_in'] == 'A').sum())} only in A, {int((ops['only_in'] == 'B').sum())} only in B"
        table.border_title = f"Op deltas ({ops.height:,}; {only}) · s sort · / filter · v / V trace B / A · x CSV"
        await body.mount(top, Static(self._notes(d), id="diff-notes", markup=False), table)
        self._fit_top()
        table.focus()
        self.refresh_bindings()

    def on_resize(self) -> None:
        self._fit_top()

    def _fit_top(self) -> None:
        """Side by side when there is room, else the step table above the KPIs (numbers stay whole)."""
        for top in self.query("#diff-top"):
            top.styles.layout = "horizontal" if self.size.width >= NARROW else "vertical"

    def _steps_table(self, d: RunDiff) -> Table:
        t = Table(title="Step time (ms)", title_justify="left", expand=True, box=None, padding=(0, 1))
        for col in ("", "A", "B", "B - A", "%"):
            t.add_column(col, justify="left" if not col else "right", no_wrap=True)
        st = d.step_time_table()
        if d.step_a is None and d.step_b is None:
            t.add_row("no steps", "-", "-", "", "")
        for r in st.iter_rows(named=True) if (d.step_a or d.step_b) else []:
            if r["figure"] == "count":  # a count of steps, not ms
                t.add_row("steps", *(_fmt(None if v is None else int(v)) for v in (r["a"], r["b"])),
                          "-" if r["delta"] is None else f"{int(r['delta']):+d}", _fmt_delta_pct(r["delta_pct"]))
                continue
            t.add_row(r["figure"].removesuffix("_ms"), _fmt(r["a"]), _fmt(r["b"]), _signed(r["delta"]),
                      _fmt_delta_pct(r["delta_pct"]))
        g = d.gate
        if g["delta_pct"] is not None and g["measure"] != "mean step time":
            t.add_row(g["measure"], fmt.duration_us(g["a"]), fmt.duration_us(g["b"]), "",
                      _fmt_delta_pct(g["delta_pct"]))
        for r in d.step_breakdown.iter_rows(named=True) if d.step_a and d.step_b else []:
            if r["a_ms"] or r["b_ms"]:
                t.add_row(Text("  " + r["category"], style="dim"), _fmt(r["a_ms"]), _fmt(r["b_ms"]),
                          _signed(r["delta_ms"]), _fmt_delta_pct(r["delta_pct"]))
        return t

    def _kpi_table(self, d: RunDiff) -> Table:
        t = Table(title="Overview", title_justify="left", expand=True, box=None, padding=(0, 1))
        for col in ("", "A", "B", "B - A"):
            t.add_column(col, justify="left" if not col else "right", no_wrap=True)
        for r in d.kpis.iter_rows(named=True):
            if r["a"] or r["b"]:
                t.add_row(r["kpi"], _fmt(r["a"], 2), _fmt(r["b"], 2), _signed(r["delta"]))
        if not t.row_count:
            t.add_row(Text("every figure is 0 in both runs", style="dim"), "", "", "")
        for r in d.memory.filter(pl.col("figure") == "peak_bytes_in_use").iter_rows(named=True):
            t.add_row(f"peak memory {r['allocator']} (MiB)", *(_fmt(None if v is None else v / 2**20, 1)
                                                             for v in (r["a"], r["b"])),
                      _signed(None if r["delta"] is None else r["delta"] / 2**20))
        return t

    def _notes(self, d: RunDiff) -> str:
        bits = [f"input-bound classification A: {d.bottleneck['a'] or '-'} · B: {d.bottleneck['b'] or '-'}"]
        missing = sorted({n.split(":")[0].removeprefix("no ") for s in (d.a, d.b) for n in s.notes
                          if n.startswith("no ")})
        if missing:
            bits.append("no data: " + ", ".join(missing))
        return " · ".join(bits)

    # --- keys ----------------------------------------------------------------------------
    def action_export_csv(self) -> None:
        self.export_table_csv(self.query_one("#diff-ops", FrameTable), "diff")

    def on_frame_table_row_selected(self, event: FrameTable.RowSelected) -> None:
        event.stop()
        row = event.row
        self.action_show_in_trace("a" if row and row["only_in"] == "A" else "b")

    def action_show_in_trace(self, side: str) -> None:
        row = self.query_one("#diff-ops", FrameTable).row() if self.result else None
        if row is None:
            self.notify("select an op first", severity="warning")
            return
        if row["only_in"] and row["only_in"].lower() != side:
            self.notify(f"{row['name']} ran only in {row['only_in']}", severity="warning")
            return
        run = self.run_a if side == "a" else self.run_b
        self._find(run, row)

    @work(thread=True, exclusive=True, group="diff-trace", description="finding events")
    def _find(self, run: RunData, row: dict) -> None:
        host = self.host or run.hosts[0]
        try:
            if in_pieces(run, host):
                # No frame of a giant host (its size many times over): the trace viewer finds the
                # op's events by name in its index, as the op tables' jump does.
                self.post_message(self.EventsFound(run, host, row["name"], (), by_name=True))
                return
            frame = run.frame(host)
            if row["table"] == "hlo":
                rows = hlo_op_rows(frame, [row["name"]])
            else:
                rows = framework_op_rows(frame, row["side"], row["name"])
        except Exception as e:  # noqa: BLE001 - say it, keep the screen
            self.post_message(self.EventsNotFound(f"could not find the events of {row['name']}: {e}"))
            return
        self.post_message(self.EventsFound(run, host, row["name"], tuple(int(r) for r in rows)))

    # The finder's answers, as messages: a closed screen drops them.
    class EventsFound(Message, bubble=False):
        def __init__(self, run: RunData, host: str, name: str, rows: tuple[int, ...], by_name: bool = False) -> None:
            super().__init__()
            self.run, self.host, self.name, self.rows, self.by_name = run, host, name, rows, by_name

    class EventsNotFound(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def on_diff_screen_events_not_found(self, event: EventsNotFound) -> None:
        if self is self.app.screen:
            self.notify(event.text, severity="error")

    def on_diff_screen_events_found(self, event: EventsFound) -> None:
        self._open(event.run, event.host, event.name, event.rows, event.by_name)

    def _open(self, run: RunData, host: str, name: str, rows: tuple[int, ...], by_name: bool = False) -> None:
        from tputui.screens.trace_viewer import TraceFocus

        if not self.is_mounted or self is not self.app.screen:
            return
        if not rows and not by_name:
            self.notify(f"no events of {name} on host {host}", severity="warning")
            return
        # The trace viewer shows one host: the one the events were found on.
        tools_app(self).open_run_data(run, host if len(run.hosts) > 1 else None, "trace_viewer",
                                      focus=TraceFocus(names=(name,)) if by_name else TraceFocus(frame_rows=rows))


class PathPrompt(ModalScreen[str | None]):
    """Ask for a logdir, run folder or profile file to compare with (Enter picks, Esc cancels)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    PathPrompt { align: center middle; }
    PathPrompt > Vertical { width: 80; max-width: 95%; height: auto; border: round $accent;
                            background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Compare with[/b]  [dim]a logdir, run folder or .xplane.pb file · Enter · Esc[/dim]")
            yield Input(placeholder="/path/to/logdir or gs://bucket/logdir", id="path")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)


OTHER = "\x00other"  # the picker's "another logdir…" entry


def open_diff_picker(app: ToolsApp, picker_cls: Callable[..., ModalScreen[str | None]]) -> None:
    """`D`: a picker of the logdir's other runs (and "another logdir or file…"); the pick is run A,
    the app's current run is B."""
    current = app.run_data
    choices = [(r.name, f"{r.name}   ({len(r.hosts)} host{'s' if len(r.hosts) != 1 else ''})")
               for r in app.logdir.runs if r.name != current.name]
    choices.append((OTHER, "another logdir, run folder or file…"))

    def open_diff(run_a: RunData, label_a: str) -> None:
        app.push_screen(DiffScreen(run_a, label_a, current, current.name, app.host))

    def picked(name: str | None) -> None:
        if name == OTHER:
            def typed(path: str | None) -> None:
                if path:
                    _open_path(app, path, open_diff)

            app.push_screen(PathPrompt(), typed)
        elif name:
            open_diff(RunData(app.logdir.run(name), use_cache=app.use_cache, jobs=app.jobs, dask=app.dask), name)

    app.push_screen(picker_cls("Compare this run with (A)", choices, None,
                               f"[dim]B is this run: {current.name}[/dim]"), picked)


def _open_path(app: ToolsApp, path: str, open_diff: Callable[[RunData, str], None]) -> None:
    from tputui.data.logdir import open_logdir

    try:
        logdir = open_logdir(path)
        run = logdir.runs[0] if logdir.runs else None
        if run is None:
            raise UserError(f"no runs in {path}")
    except UserError as e:
        app.notify(str(e), title="Diff", severity="error", timeout=8)
        return
    open_diff(RunData(run, use_cache=app.use_cache, jobs=app.jobs, dask=app.dask),
              f"{os.path.basename(path.rstrip('/'))} · {run.name}")
