"""Roofline model: a log-log scatter of ops (FLOP/s against FLOP/byte) under the device's roofs
(peak FLOP rate, HBM bandwidth), the op table (sort `s`, filter `/`, CSV `x`), infeed/outfeed
toggle `i`. The highlighted op is drawn as ◆ on the chart."""
from __future__ import annotations

import math

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from tputui.analysis.roofline import RooflineModel
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CsvExportMixin, fmt_pct, fmt_us
from tputui.widgets.table import FrameTable


def scatter(points: list[tuple[float, float]], peak_gflops: float, peak_gib: float,
            width: int = 72, height: int = 14, mark: tuple[float, float] | None = None) -> Text:
    """Log-log roofline chart as text: x = operational intensity (FLOP/B), y = GFLOP/s."""
    pts = [(x, y) for x, y in points if x > 0 and y > 0]
    bw = peak_gib * (1 << 30) / 1e9  # GB/s, so that ridge = peak / bw
    ridge = peak_gflops / bw if bw else 1.0
    xs = [x for x, _ in pts] + [ridge]
    ys = [y for _, y in pts] + [peak_gflops]
    x0, x1 = math.log10(min(xs)) - 0.5, math.log10(max(xs)) + 0.5
    y0, y1 = math.log10(max(min(ys), 1e-9)) - 0.5, math.log10(max(ys)) + 0.3
    grid = [[" "] * width for _ in range(height)]
    style = [[""] * width for _ in range(height)]

    def cell(x, y):
        cx = int((math.log10(x) - x0) / (x1 - x0) * (width - 1))
        cy = height - 1 - int((math.log10(y) - y0) / (y1 - y0) * (height - 1))
        return cx, cy

    for cx in range(width):  # the roof: min(peak, bw * intensity)
        x = 10 ** (x0 + cx / (width - 1) * (x1 - x0))
        y = min(peak_gflops, bw * x) if bw else peak_gflops
        _, cy = cell(x, y)
        if 0 <= cy < height:
            grid[cy][cx], style[cy][cx] = ("─" if bw * x >= peak_gflops else "╱"), "yellow"
    for x, y in pts:
        cx, cy = cell(x, y)
        if 0 <= cx < width and 0 <= cy < height:
            grid[cy][cx], style[cy][cx] = "●", "cyan"
    if mark and mark[0] > 0 and mark[1] > 0:
        cx, cy = cell(*mark)
        if 0 <= cx < width and 0 <= cy < height:
            grid[cy][cx], style[cy][cx] = "◆", "bold magenta"
    out = Text()
    for r in range(height):
        label = f"{10 ** (y1 - r / (height - 1) * (y1 - y0)):>9.3g} │" if r % 4 == 0 else " " * 10 + "│"
        out.append(label, style="dim")
        for c in range(width):
            out.append(grid[r][c], style=style[r][c] or None)
        out.append("\n")
    out.append(" " * 10 + "└" + "─" * width + "\n", style="dim")
    out.append(f"{'':10} {10 ** x0:<10.3g}{'FLOP/byte (log)':^{width - 20}}{10 ** x1:>10.3g}\n", style="dim")
    out.append(f"GFLOP/s (log) · roof: peak {peak_gflops:,.0f} GFLOP/s, HBM {peak_gib:,.1f} GiB/s, "
               f"ridge {ridge:,.1f} FLOP/B · {len(pts)} of {len(points)} ops have flops", style="dim")
    return out


class RooflineScreen(CsvExportMixin, ToolScreen):
    BINDINGS = [Binding("i", "toggle_feed", "Infeed/outfeed", id="roofline.feed"),
                Binding("x", "export_csv", "CSV", id="roofline.csv")]
    DEFAULT_CSS = """
    RooflineScreen #chart { height: auto; padding: 0 1; }
    RooflineScreen FrameTable { height: 1fr; border: round $panel; }
    """
    include_feed = True

    def show(self, result: RooflineModel) -> None:
        self.chart = Static("", id="chart")
        pct = {c: fmt_pct for c in ("total_self_time_percent", "cumulative_total_self_time_percent",
                                    "total_time_in_percentage", "roofline_efficiency", "compute_efficiency",
                                    "max_mem_bw_utilization")}
        self.table = FrameTable(id="ops", hidden=("step", "include_infeed_outfeed", "source_info"), formats={
            "total_time": fmt_us, "avg_time": fmt_us, "total_self_time": fmt_us, "avg_self_time": fmt_us, **pct})
        self.body.mount(self.chart)
        self.body.mount(self.table)
        self._fill()
        self.table.focus()

    def _fill(self) -> None:
        ops = self.result.ops(self.include_feed)
        self.table.set_frame(ops)
        self.table.border_title = (f"Ops ({ops.height:,}), infeed/outfeed {'included' if self.include_feed else 'excluded'}"
                                   " · s sort · / filter · i infeed/outfeed · x CSV")
        self._draw(self.table.row())

    def _draw(self, row) -> None:
        p = self.result.properties
        ops = self.table.frame
        pts = list(zip(ops["operational_intensity"].to_list(), ops["measured_flop_rate"].to_list()))
        mark = (row["operational_intensity"], row["measured_flop_rate"]) if row else None
        width = max(30, min(100, (self.size.width or 100) - 16))
        self.chart_text = scatter(pts, p["peak_flop_rate"], p["peak_hbm_bw"], width=width, mark=mark)
        self.chart.update(self.chart_text)

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        if self.result is not None and hasattr(self, "chart"):
            self._draw(event.row)

    def action_toggle_feed(self) -> None:
        if self.result is None:
            return
        self.include_feed = not self.include_feed
        self._fill()

    def export_frame(self):
        return self.table.frame if self.result is not None else None
