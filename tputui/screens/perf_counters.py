"""Performance counters: every counter sample (chip, kernel / `_counters_` line, counter, value in
hex and decimal, description, set), and for the highlighted counter its value on every chip and
sample as bars. `s` sort, `/` filter, `x` CSV."""
from __future__ import annotations

from textual.binding import Binding

from tputui.analysis.perf_counters import PerfCountersResult
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable


class PerfCountersScreen(ResultKeysMixin, CsvExportMixin[PerfCountersResult], ToolScreen[PerfCountersResult]):
    help_notes = ("Hardware counters as the TPU runtime sampled them: the `_counters_` line is the whole program, "
                  "other lines are kernels. Bars compare the highlighted counter across chips and samples.")
    BINDINGS = [Binding("x", "export_csv", "CSV", id="perf_counters.csv", tooltip=CSV_TIP)]
    RESULT_ACTIONS = frozenset({"export_csv"})
    DEFAULT_CSS = """
    PerfCountersScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    PerfCountersScreen #pc-bars { height: auto; max-height: 12; padding: 0 1; }
    """

    def show(self, result: PerfCountersResult) -> None:
        frame = result.tables()["counters"].select("host", "chip", "kernel", "sample", "counter", "value_hex", "value",
                                                   "description", "set")
        self.table = FrameTable(frame, id="pc-table", key="counter", formats={"value": lambda v: f"{v:,}"})
        self.table.border_title = (f"Counter samples ({frame.height:,}, {frame['chip'].n_unique()} chips)"
                                   " · s sort · / filter · x CSV")
        self.body.mount(self.table)
        self.bars = HBarChart(id="pc-bars", label_width=48)
        self.body.mount(self.bars)
        self.table.focus()
        self._bars(self.table.row())
        self.refresh_bindings()

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._bars(event.row)

    def _bars(self, row) -> None:
        if row is None:
            return
        r = self.loaded
        per = r.per_chip(row["counter"])
        self.bars.title = f"{row['counter']} on every chip and sample"
        self.bars.set_items([(f"{h} chip {c} · {k} (sample {s})", float(v))
                             for h, c, k, s, v in per.iter_rows()])

    def export_frame(self):
        return self.table.frame if self.result is not None else None
