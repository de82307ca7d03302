"""HLO stats: the flat per-HLO table (sort `s`, filter `/`, CSV `x`, `v` shows the op's events in
the trace viewer) with a bar of the top ops by self time and the selected op's HLO text below."""
from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.hlo_stats import HloStats
from tputui.analysis.op_events import hlo_op_rows
from tputui.screens.base import ToolScreen
from tputui.screens.graph_jump import GraphJumpMixin, graph_binding
from tputui.screens.op_tables import (
    CSV_TIP,
    TIME_COLUMNS,
    CsvExportMixin,
    ResultKeysMixin,
    TraceJumpMixin,
    Units,
)
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable

UNITS = Units({"model_flop_rate": "GFLOP/s", "normalized_flop_rate": "GFLOP/s",
               **{c: "GiB/s" for c in ("measured_memory_bw", "hbm_bw", "cmem_read_bw", "cmem_write_bw")},
               "operational_intensity": "FLOP/B"})


class HloStatsScreen(
        ResultKeysMixin,
        TraceJumpMixin[HloStats],
        GraphJumpMixin[HloStats],
        CsvExportMixin[HloStats],
        ToolScreen[HloStats]):
    help_notes = ("One row per HLO op; times in human units (CSV keeps µs), rates and bandwidths with their "
                  "unit in the header. The line under the table is the highlighted op's HLO text. [b]v[/b] opens "
                  "the trace viewer on its events.")
    BINDINGS = [Binding("v", "show_in_trace", "Show in trace", id="hlo.trace",
                        tooltip="open the trace viewer on the highlighted op's events (Enter too)"),
                Binding("x", "export_csv", "CSV", id="hlo.csv", tooltip=CSV_TIP), graph_binding("hlo")]
    RESULT_ACTIONS = frozenset({"show_in_trace", "export_csv", "show_in_graph"})
    DEFAULT_CSS = """
    HloStatsScreen #top { height: auto; max-height: 10; padding: 0 1; }
    HloStatsScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    HloStatsScreen #expr { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    """

    def show(self, result: HloStats) -> None:
        rows = result.rows
        top = rows.head(max(3, min(8, ((self.size.height or 40) - 16) // 2)))  # small terminals keep the table
        self.body.mount(HBarChart(list(zip(top["hlo_op_name"].to_list(), top["total_self_time_percent"].to_list())),
                                  title="Top HLO ops: share of self time", unit="%", id="top"))
        def pct(v):
            return fmt.percent(v, 2)

        self.table = FrameTable(
            UNITS.show(rows), hidden=("hlo_op_expression", "rank", "program_id"), id="hlo", key="hlo_op_name",
            lead=("total_self_time", "total_self_time_percent", "occurrences", "avg_self_time", "category",
                  "bound_by", "total_time", "avg_time"),
            formats=UNITS.formats({"rank": fmt.count, **{c: fmt.human_us for c in TIME_COLUMNS},
                                   "total_self_time_percent": pct, "cumulative_total_self_time_percent": pct,
                                   "dma_stall_percent": pct}))
        self.table.border_title = f"HLO ops ({rows.height:,}) · s sort · / filter · v trace · x CSV"
        self.body.mount(self.table)
        self.body.mount(Static("", id="expr", markup=False))
        self.table.focus()
        self._show_expr(self.table.row())
        self.refresh_bindings()

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._show_expr(event.row)

    def _show_expr(self, row) -> None:
        self.expression = row["hlo_op_expression"] if row else ""
        for w in self.query("#expr").results(Static):
            w.update(self.expression)

    def graph_target(self):
        row = self.table.row()
        if row is None:
            return None
        program = row["program_id"]
        return row["hlo_op_name"], int(program) if program and str(program).isdigit() else None

    def trace_target(self):
        row = self.table.row()
        if row is None:
            return None
        name, program = row["hlo_op_name"], row["program_id"]
        program_id = int(program) if program and str(program).isdigit() else None
        return name, lambda frame: hlo_op_rows(frame, [name], program_id)

    def export_frame(self):
        return UNITS.raw(self.table.frame) if self.result is not None else None
