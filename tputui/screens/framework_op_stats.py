"""Framework op stats: the op table (sort `s`, filter `/`), IDLE toggle `i`, CSV `x`, `v` shows
the selected op's events in the trace viewer, and XProf's four pie charts as bars: each side's
self time by op and by op type, as a share of that side's total (sides without ops are left out)."""
from __future__ import annotations

from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.framework_op_stats import EXPORT_RENAMES, FrameworkOpStats
from tputui.analysis.op_events import framework_op_rows
from tputui.screens.base import ToolScreen
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

TOP = 8
UNITS = Units({"measured_flop_rate": "GFLOP/s", "model_flop_rate": "GFLOP/s",
               "measured_memory_bw": "GB/s", "operational_intensity": "FLOP/B"})
IDLE = "IDLE"
NO_OPS = "No framework ops in this profile (no TensorFlow / tf.data ops on the host or device): only IDLE, as in XProf."


def tail_label(name: str, width: int) -> str:
    """Op names share their scope prefix ("jit(train_step)/jit(main)/..."): keep the end, which differs."""
    return name if len(name) <= width else "…" + name[-(width - 1):]


class FrameworkOpStatsScreen(
        ResultKeysMixin, TraceJumpMixin[FrameworkOpStats], CsvExportMixin[FrameworkOpStats], ToolScreen[FrameworkOpStats]):
    help_notes = ("Times in human units (CSV keeps µs); other units are in the column headers. The bars are "
                  "XProf's pie charts: each side's self time by op and by op type, as a share of that side's "
                  "total. [b]v[/b] opens the trace viewer with the highlighted op's events selected.")
    BINDINGS = [Binding("i", "toggle_idle", "IDLE on/off", id="fos.idle",
                        tooltip="show or hide the IDLE rows (time without ops) in the table and charts"),
                Binding("v", "show_in_trace", "Show in trace", id="fos.trace",
                        tooltip="open the trace viewer on the highlighted op's events (Enter too)"),
                Binding("x", "export_csv", "CSV", id="fos.csv", tooltip=CSV_TIP)]
    RESULT_ACTIONS = frozenset({"toggle_idle", "show_in_trace", "export_csv"})
    DEFAULT_CSS = """
    FrameworkOpStatsScreen #charts { height: auto; max-height: 10; }
    FrameworkOpStatsScreen #charts > HBarChart { width: 1fr; padding: 0 1; }
    FrameworkOpStatsScreen #note { color: $text-muted; padding: 0 1; }
    FrameworkOpStatsScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    """
    include_idle = True

    def show(self, result: FrameworkOpStats) -> None:
        self.sides = result.sides_with_ops
        self.charts = {}
        for side in self.sides:
            self.charts[side] = (HBarChart(title=f"{side}: self time by op", unit="%", id=f"{side.lower()}-ops"),
                                 HBarChart(title=f"{side}: self time by op type", unit="%", id=f"{side.lower()}-types"))
        pct = {c: fmt.fraction_percent for c in result.with_idle.columns if c.endswith("_percent")}
        times = {c: fmt.human_us for c in TIME_COLUMNS}
        # On a device profile the device's share is the one that matters: it comes first.
        shares = ("host_total_self_time_percent", "device_total_self_time_percent")
        if "Device" in self.sides:
            shares = shares[::-1]
        self.table = FrameTable(formats=UNITS.formats({**times, **pct}), id="ops", key="operation", hidden=("rank",),
                                lead=("total_self_time", *shares, "occurrences", "avg_self_time",
                                      "total_time", "avg_time"))
        if self.sides:
            self.body.mount(Horizontal(*(c for pair in self.charts.values() for c in pair), id="charts"))
        else:
            self.body.mount(Static(NO_OPS, id="note"))
        self.body.mount(self.table)
        self._fill()
        self.table.focus()
        self.refresh_bindings()

    def on_resize(self) -> None:
        if getattr(self, "sides", None):
            self._size_charts()
            self._fill_charts()

    def _size_charts(self) -> None:
        """Label and bar widths that fit every chart side by side (values are short percents)."""
        if not self.sides:
            return
        n = 2 * len(self.sides)
        per_chart = max(16, (self.size.width or 120) // n - 2)
        bar = max(4, min(20, per_chart // 4))
        label = max(6, per_chart - bar - 9)
        for pair in self.charts.values():
            for chart in pair:
                chart.bar_width, chart.label_width = bar, label

    def _fill(self) -> None:
        r = self.loaded
        table = r.table(self.include_idle)
        self.table.set_frame(UNITS.show(table))
        self.table.border_title = (f"Framework ops ({table.height:,}) · IDLE "
                                   f"{'shown' if self.include_idle else 'hidden'}"
                                   " · s sort · / filter · i IDLE · v trace · x CSV")
        self._size_charts()
        self._fill_charts()

    def _fill_charts(self) -> None:
        r = self.loaded
        for side, (by_op, by_type) in self.charts.items():
            ops = r.self_time_shares(side, "operation", self.include_idle, TOP)
            by_op.set_items([(tail_label(name, by_op.label_width), pct) for name, pct in ops])
            types = r.self_time_shares(side, "type", self.include_idle, TOP)
            by_type.set_items([(name or "(no type)", pct) for name, pct in types])

    def action_toggle_idle(self) -> None:
        if self.result is None:
            return
        self.include_idle = not self.include_idle
        self._fill()

    def trace_target(self):
        row = self.table.row()
        if row is None:
            return None
        if row["operation"] == IDLE:
            return "IDLE is time without ops: it has no events to show"
        side, name = row["host_or_device"], row["operation"]
        return f"{name} ({side.lower()})", lambda frame: framework_op_rows(frame, side, name)

    def export_frame(self):
        """The rows as shown, with `tputui export`'s column names (op_name, total_time_us, ...)."""
        if self.result is None:
            return None
        frame = UNITS.raw(self.table.frame)
        return frame.rename({k: v for k, v in EXPORT_RENAMES.items() if k in frame.columns})
