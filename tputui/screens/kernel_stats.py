"""GPU kernel stats: the kernel table (sort `s`, filter `/`, CSV `x`) and the top kernels as bars."""
from __future__ import annotations

from textual.binding import Binding

from tputui.analysis.kernel_stats import KernelStats
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CsvExportMixin, fmt_us
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable


class KernelStatsScreen(CsvExportMixin, ToolScreen):
    BINDINGS = [Binding("x", "export_csv", "CSV", id="kernels.csv")]
    DEFAULT_CSS = """
    KernelStatsScreen #top { height: auto; max-height: 12; padding: 0 1; }
    KernelStatsScreen FrameTable { height: 1fr; border: round $panel; }
    """

    def show(self, result: KernelStats) -> None:
        self.body.mount(HBarChart(result.top_kernels(10), title="Top kernels by total duration", unit=" us",
                                  label_width=50, id="top"))
        self.table = FrameTable(result.rows, id="kernels", formats={
            c: fmt_us for c in ("total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us")})
        self.table.border_title = f"Kernels ({result.rows.height:,}) · s sort · / filter · x CSV"
        self.body.mount(self.table)
        self.table.focus()

    def export_frame(self):
        return self.table.frame if self.result is not None else None
