"""The first screen: what this run holds (hosts, planes, lines, span, capture options, and the
batch size when the profile records one)."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.summary import HostSummary, RunSummary
from tputui.screens.app_api import tools_app
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin
from tputui.tools import TOOLS
from tputui.widgets.table import FrameTable

MAX_HOST_LINES = 8  # hosts listed one per line; the rest are counted


class SummaryScreen(CsvExportMixin[RunSummary], ToolScreen[RunSummary]):
    BINDINGS = [Binding("x", "export_csv", "CSV", id="summary.csv", tooltip=CSV_TIP)]
    DEFAULT_CSS = """
    SummaryScreen #facts { height: auto; max-height: 50%; padding: 0 1; overflow-y: auto; }
    SummaryScreen #facts > Static { width: 1fr; height: auto; }
    SummaryScreen #next { height: auto; padding: 0 1; margin-bottom: 1; }
    SummaryScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    """

    tools_with_data: list[str] | None = None

    @work(thread=True, exclusive=True, group="summary-tools", description="tools with data")
    def find_tools(self) -> None:
        """Which tools have data: the first thing a newcomer needs (after the facts, so they
        draw at once); the tool picker reuses the answer."""
        self.post_message(self.ToolsFound(tools_app(self).tools_with_data(self.run_data)))

    class ToolsFound(Message, bubble=False):
        def __init__(self, names: list[str]) -> None:
            super().__init__()
            self.names = names

    def on_summary_screen_tools_found(self, event: ToolsFound) -> None:
        self.tools_with_data = event.names
        for w in self.query("#next").results(Static):
            w.update(self._next_text())

    def show(self, result: RunSummary) -> None:
        self.body.mount(Horizontal(
            Static(self._overview(result), id="overview"),
            Static(self._options(result), id="options"),
            id="facts"))
        self.body.mount(Static(self._next_text(), id="next"))
        self.find_tools()
        table = FrameTable(result.line_spans(), id="lines", formats={"span": lambda ps: fmt.duration_ps(ps, missing="-")})
        table.border_title = "Lines (threads / device lines) — s sort · / filter"
        self.body.mount(table)
        table.focus()

    def _next_text(self) -> Text:
        if self.tools_with_data is None:
            return Text("t opens a tool (finding the tools with data in this run…)", style="dim")
        names = [t.title for t in TOOLS if t.name in self.tools_with_data and t.name != "summary"]
        if not names:
            return Text("t opens a tool", style="dim")
        text = Text.assemble(("t", "bold"), f" opens a tool; with data in this run: {', '.join(names)}")
        text.stylize("dim", 1)
        return text

    def _overview(self, r: RunSummary) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold", no_wrap=True)
        t.add_column()
        t.add_row("Run", r.run)
        t.add_row("Hosts", f"{len(r.hosts)}" if len(r.hosts) > 1 else (r.hosts[0].host if r.hosts else "-"))
        t.add_row("Devices", f"{r.device_count} × {r.device_type}" if r.device_count else "none (host only)")
        t.add_row("Events", f"{r.num_events:,}")
        if r.batch_sizes:  # only when the profile records it
            t.add_row("Batch size", Text.assemble(", ".join(str(b) for b in r.batch_sizes),
                                                  (f"  (from {r.batch_source})", "dim")))
        many = len(r.hosts) > 1
        for i, h in enumerate(r.hosts):
            if i == MAX_HOST_LINES and many:
                t.add_row("", Text(f"… and {len(r.hosts) - i} more hosts (h picks one)", style="dim"))
            span = fmt.duration_ps(h.span_ps[1] - h.span_ps[0]) if h.span_ps else "-"
            events = h.num_events
            if not many:
                t.add_row("File", Text(f"{fmt.bytes_decimal(h.size_bytes)} · span {span}"))
            elif i < MAX_HOST_LINES:
                t.add_row(h.host, Text(f"{fmt.bytes_decimal(h.size_bytes)} · span {span} · {events:,} events"))
            if not many:
                t.add_row("Planes", Text(_planes_text(h), overflow="fold"))
            for msg in h.errors:
                t.add_row(f"{h.host} error" if many else "Error", Text(msg, style="red"))
            for msg in h.warnings:
                t.add_row(f"{h.host} warning" if many else "Warning", Text(msg, style="yellow"))
        return t

    def _options(self, r: RunSummary) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        h = r.hosts[0] if r.hosts else None
        t.add_row("Capture options", "" if h and h.capture_options else Text("(not recorded)", style="dim"))
        if h:
            keep = ("host_tracer_level", "device_tracer_level", "python_tracer_level", "include_dataset_ops",
                    "enable_hlo_proto", "duration_ms", "repository_path", "session_id")
            for k in keep:
                if k in h.capture_options and h.capture_options[k] not in ("", "0", None):
                    t.add_row(f"  {k}", str(h.capture_options[k]))
            if h.start_time_ns and h.stop_time_ns:
                t.add_row("  captured for", fmt.duration_ps((h.stop_time_ns - h.start_time_ns) * 1000))
        return t


    def export_frame(self):
        tables = self.query("#lines").results(FrameTable)
        return next((t.frame for t in tables), None)


def _planes_text(h: HostSummary) -> str:
    """Planes with events, with their counts; empty ones only counted."""
    planes, full = h.planes, h.planes_with_events
    text = ", ".join(f"{n} ({e:,} events)" for n, e in zip(full["name"], full["events"]))
    empty = planes.height - full.height
    return text + (f"; {empty} empty" if empty else "") if text else f"{planes.height} planes, no events"
