"""HLO stats: the flat per-HLO table (sort `s`, filter `/`, CSV `x`) with a bar of the top ops
by self time and the selected op's HLO text below."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static

from tputui.analysis.hlo_stats import HloStats
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CsvExportMixin, fmt_pct100, fmt_us
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable


class HloStatsScreen(CsvExportMixin, ToolScreen):
    BINDINGS = [Binding("x", "export_csv", "CSV", id="hlo.csv")]
    DEFAULT_CSS = """
    HloStatsScreen #top { height: auto; max-height: 10; padding: 0 1; }
    HloStatsScreen FrameTable { height: 1fr; border: round $panel; }
    HloStatsScreen #expr { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    """

    def show(self, result: HloStats) -> None:
        rows = result.rows
        top = rows.head(8)
        self.body.mount(HBarChart(list(zip(top["hlo_op_name"].to_list(), top["total_self_time"].to_list())),
                                  title="Top HLO ops by self time", unit=" us", id="top"))
        self.table = FrameTable(rows, hidden=("hlo_op_expression",), id="hlo", formats={
            "total_time": fmt_us, "avg_time": fmt_us, "total_self_time": fmt_us, "avg_self_time": fmt_us,
            "total_self_time_percent": fmt_pct100, "cumulative_total_self_time_percent": fmt_pct100})
        self.table.border_title = f"HLO ops ({rows.height:,}) · s sort · / filter · x CSV"
        self.body.mount(self.table)
        self.body.mount(Static("", id="expr", markup=False))
        self.table.focus()
        self._show_expr(self.table.row())

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._show_expr(event.row)

    def _show_expr(self, row) -> None:
        self.expression = row["hlo_op_expression"] if row else ""
        for w in self.query("#expr"):
            w.update(self.expression)

    def export_frame(self):
        return self.table.frame if self.result is not None else None
