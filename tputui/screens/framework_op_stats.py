"""Framework op stats: the op table (sort `s`, filter `/`), IDLE toggle `i`, CSV `x`, and XProf's
four pie charts as bars: self time by op and by op type, on the host and on the device."""
from __future__ import annotations

from textual.binding import Binding
from textual.containers import Horizontal

from tputui.analysis.framework_op_stats import FrameworkOpStats
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CsvExportMixin, fmt_pct, fmt_us
from tputui.widgets.charts import HBarChart
from tputui.widgets.table import FrameTable

TOP = 8


class FrameworkOpStatsScreen(CsvExportMixin, ToolScreen):
    BINDINGS = [Binding("i", "toggle_idle", "IDLE on/off", id="fos.idle"),
                Binding("x", "export_csv", "CSV", id="fos.csv")]
    DEFAULT_CSS = """
    FrameworkOpStatsScreen #charts { height: auto; max-height: 12; }
    FrameworkOpStatsScreen #charts > HBarChart { width: 1fr; padding: 0 1; }
    FrameworkOpStatsScreen FrameTable { height: 1fr; border: round $panel; }
    """
    include_idle = True

    def show(self, result: FrameworkOpStats) -> None:
        self.charts = [HBarChart(title=t, unit=" us", bar_width=14, label_width=22, id=f"chart{i}")
                       for i, t in enumerate(("Host: self time by op", "Host: by op type",
                                              "Device: self time by op", "Device: by op type"))]
        pct = {c: fmt_pct for c in result.with_idle.columns if c.endswith("_percent")}
        self.table = FrameTable(formats={"total_time": fmt_us, "avg_time": fmt_us, "total_self_time": fmt_us,
                                         "avg_self_time": fmt_us, **pct}, id="ops")
        self.body.mount(Horizontal(*self.charts, id="charts"))
        self.body.mount(self.table)
        self._fill()
        self.table.focus()

    def _fill(self) -> None:
        r: FrameworkOpStats = self.result
        table = r.table(self.include_idle)
        self.table.set_frame(table)
        self.table.border_title = (f"Framework ops ({table.height:,}) — IDLE {'shown' if self.include_idle else 'hidden'}"
                                   " · s sort · / filter · i IDLE · x CSV")
        for i, side in enumerate(("Host", "Device")):
            ops = table.filter(table["host_or_device"] == side).head(TOP)
            self.charts[2 * i].set_items(list(zip(ops["operation"].to_list(), ops["total_self_time"].to_list())))
            by_type = r.self_time_by_type(side, self.include_idle).head(TOP)
            self.charts[2 * i + 1].set_items(list(zip(by_type["type"].to_list(), by_type["total_self_time"].to_list())))

    def action_toggle_idle(self) -> None:
        if self.result is None:
            return
        self.include_idle = not self.include_idle
        self._fill()

    def export_frame(self):
        return self.table.frame if self.result is not None else None
