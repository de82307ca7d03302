"""GPU kernel stats: the kernel table (sort `s`, filter `/`, CSV `x`, `v` shows the kernel's
launches in the trace viewer) and the top kernels as bars."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.kernel_stats import KernelStats
from tputui.analysis.op_events import kernel_rows
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin, TraceJumpMixin
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable

NO_KERNELS = "The GPU planes hold no kernel launches (events with kernel_details and a duration): nothing to list."


class KernelStatsScreen(
        ResultKeysMixin, TraceJumpMixin[KernelStats], CsvExportMixin[KernelStats], ToolScreen[KernelStats]):
    help_notes = ("One row per kernel launch configuration (kernel, grid, block, op); durations in µs (as "
                  "their headers and the CSV say). "
                  "[b]v[/b] opens the trace viewer with that row's launches selected.")
    BINDINGS = [Binding("v", "show_in_trace", "Show in trace", id="kernels.trace",
                        tooltip="open the trace viewer on the highlighted kernel's launches (Enter too)"),
                Binding("x", "export_csv", "CSV", id="kernels.csv", tooltip=CSV_TIP)]
    RESULT_ACTIONS = frozenset({"show_in_trace", "export_csv"})
    DEFAULT_CSS = """
    KernelStatsScreen #top { height: auto; max-height: 12; padding: 0 1; }
    KernelStatsScreen .note { color: $text-muted; padding: 0 1; }
    KernelStatsScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    """

    def show(self, result: KernelStats) -> None:
        if result.rows.height == 0:
            self.body.mount(Static(NO_KERNELS, classes="note", id="note"))
        else:
            self.top = HBarChart(result.top_kernels(10), title="Top kernels by total duration", unit=" µs", id="top")
            self._size_chart()
            self.body.mount(self.top)
        durations = ("total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us")
        self.table = FrameTable(result.rows, id="kernels", key="kernel_name", hidden=("rank",),
                                lead=(*durations[:2], "occurrences", *durations[2:], "occupancy_pct", "op_name"),
                                formats={c: (lambda v: fmt.number(v, 3)) for c in durations})  # µs, as the header says
        self.table.border_title = f"Kernels ({result.rows.height:,}) · s sort · / filter · v trace · x CSV"
        self.body.mount(self.table)
        self.table.focus()
        self.refresh_bindings()

    def _size_chart(self) -> None:
        """Bars and names that fit the width, values never clipped (up to 50 cells of name)."""
        value = max((len(f"{v:,.2f} µs") for _, v in self.top.items), default=8)
        room = max(20, (self.size.width or 120) - 4 - value)
        self.top.bar_width = max(6, min(30, room // 4))
        self.top.label_width = max(10, min(50, room - self.top.bar_width - 2))

    def on_resize(self) -> None:
        if hasattr(self, "top"):
            self._size_chart()
            self.top.set_items(self.top.items)

    def trace_target(self):
        row = self.table.row()
        if row is None:
            return None
        name, op, grid, block = row["kernel_name"], row["op_name"], row["grid_dim"], row["block_dim"]
        return name, lambda frame: kernel_rows(frame, name, op, grid, block)

    def export_frame(self):
        return self.table.frame if self.result is not None else None
