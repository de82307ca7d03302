"""The first screen: what this run holds (hosts, planes, lines, span, capture options)."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.containers import Horizontal
from textual.widgets import Static

from tputui.analysis.summary import RunSummary
from tputui.screens.base import ToolScreen
from tputui.widgets.table import FrameTable


def fmt_ps(ps: float | None) -> str:
    """Picoseconds in the unit a person reads best."""
    if ps is None:
        return "-"
    for unit, scale in (("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3)):
        if abs(ps) >= scale:
            return f"{ps / scale:,.3f} {unit}"
    return f"{ps:,.0f} ps"


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


class SummaryScreen(ToolScreen):
    DEFAULT_CSS = """
    SummaryScreen #facts { height: auto; padding: 0 1; }
    SummaryScreen #facts > Static { width: 1fr; height: auto; }
    SummaryScreen FrameTable { height: 1fr; border: round $panel; }
    """

    def show(self, result: RunSummary) -> None:
        self.body.mount(Horizontal(
            Static(self._overview(result), id="overview"),
            Static(self._options(result), id="options"),
            id="facts"))
        lines = result.tables()["lines"].select(
            "host", "plane_name", "name", "events",
            span=(result.tables()["lines"]["last_end_ps"] - result.tables()["lines"]["first_ps"]))
        table = FrameTable(lines, id="lines", formats={"span": fmt_ps})
        table.border_title = "Lines (threads / device lines) — s sort · / filter"
        self.body.mount(table)
        table.focus()

    def _overview(self, r: RunSummary) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("Run", r.run)
        t.add_row("Hosts", ", ".join(h.host for h in r.hosts))
        t.add_row("Devices", f"{r.device_count} × {r.device_type}" if r.device_count else "none (host only)")
        t.add_row("Events", f"{r.num_events:,}")
        for h in r.hosts:
            planes = ", ".join(f"{n} ({e:,})" for n, e in zip(h.planes["name"], h.planes["events"]))
            t.add_row(f"{h.host}", Text(f"{fmt_bytes(h.size_bytes)}; span "
                                        f"{fmt_ps(h.span_ps[1] - h.span_ps[0]) if h.span_ps else '-'}"))
            t.add_row("  planes", Text(planes, overflow="fold"))
            for msg in h.errors:
                t.add_row("  error", Text(msg, style="red"))
            for msg in h.warnings:
                t.add_row("  warning", Text(msg, style="yellow"))
        return t

    def _options(self, r: RunSummary) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        h = r.hosts[0] if r.hosts else None
        t.add_row("Capture options", "" if h and h.capture_options else "(not recorded)")
        if h:
            keep = ("host_tracer_level", "device_tracer_level", "python_tracer_level", "include_dataset_ops",
                    "enable_hlo_proto", "duration_ms", "repository_path", "session_id")
            for k in keep:
                if k in h.capture_options and h.capture_options[k] not in ("", "0", None):
                    t.add_row(f"  {k}", str(h.capture_options[k]))
            if h.start_time_ns and h.stop_time_ns:
                t.add_row("  captured for", fmt_ps((h.stop_time_ns - h.start_time_ns) * 1000))
        return t

