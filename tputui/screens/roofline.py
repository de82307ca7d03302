"""Roofline model: a log-log scatter of ops (FLOP/s against FLOP/byte) under the device's roofs
(peak FLOP rate, HBM bandwidth), the op table (sort `s`, filter `/`, CSV `x`, `v` shows the op's
events in the trace viewer), infeed/outfeed toggle `i`. The highlighted op is drawn as ◆ on the
chart; the table leads with the columns the chart plots (bound by, intensity, rates)."""
from __future__ import annotations

import math

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.op_events import hlo_op_rows
from tputui.analysis.roofline import RooflineModel
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
from tputui.widgets.table import FrameTable

UNITS = Units({**{c: "GFLOP/s" for c in ("measured_flop_rate", "model_flop_rate", "optimal_flop_rate")},
               **{c: "GiB/s" for c in ("measured_memory_bw", "hbm_bw", "cmem_read_bw", "cmem_write_bw",
                                        "vmem_read_bw", "vmem_write_bw")},
               **{c: "FLOP/B" for c in ("operational_intensity", "hbm_operational_intensity",
                                         "cmem_read_operational_intensity", "cmem_write_operational_intensity",
                                         "vmem_read_operational_intensity", "vmem_write_operational_intensity",
                                         "bottleneck_operational_intensity")}})
# What the chart is about, right after the op's name; the rest keep XProf's order.
LEADING = ("rank", "category", "operation", "bound_by", "operational_intensity", "measured_flop_rate",
           "measured_memory_bw", "roofline_efficiency", "total_self_time", "total_self_time_percent")


def lead_columns(ops):
    first = [c for c in LEADING if c in ops.columns]
    return ops.select(first + [c for c in ops.columns if c not in first])


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
    out.append(f"y: GFLOP/s (log) · roof: peak {peak_gflops:,.0f} GFLOP/s, HBM {peak_gib:,.1f} GiB/s, "
               f"ridge {ridge:,.1f} FLOP/B · {len(pts)} of {len(points)} ops have flops", style="dim")
    return out


class RooflineScreen(
        ResultKeysMixin,
        TraceJumpMixin[RooflineModel],
        GraphJumpMixin[RooflineModel],
        CsvExportMixin[RooflineModel],
        ToolScreen[RooflineModel]):
    help_notes = ("Each ● is an op with FLOPs at (operational intensity, FLOP rate); ◆ is the highlighted one. Left "
                  "of the ridge the HBM bandwidth bounds an op, right of it the peak FLOP rate. [b]/[/b] filters the "
                  "table and the chart together.")
    BINDINGS = [Binding("e", "toggle_feed", "Infeed/outfeed", id="roofline.feed",
                        tooltip="include or exclude infeed / outfeed ops (XProf's toggle)"),
                Binding("v", "show_in_trace", "Show in trace", id="roofline.trace",
                        tooltip="open the trace viewer on the highlighted op's events (Enter too)"),
                Binding("x", "export_csv", "CSV", id="roofline.csv", tooltip=CSV_TIP), graph_binding("roofline")]
    RESULT_ACTIONS = frozenset({"toggle_feed", "show_in_trace", "export_csv", "show_in_graph"})
    DEFAULT_CSS = """
    RooflineScreen #chart { height: auto; padding: 0 1; }
    RooflineScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    """
    include_feed = True

    def show(self, result: RooflineModel) -> None:
        self.chart = Static("", id="chart")
        pct = {c: fmt.fraction_percent for c in ("total_self_time_percent", "cumulative_total_self_time_percent",
                                    "total_time_in_percentage", "roofline_efficiency", "compute_efficiency",
                                    "max_mem_bw_utilization")}
        self.table = FrameTable(id="ops", hidden=("step", "include_infeed_outfeed", "source_info", "rank"),
                                key="operation", formats=UNITS.formats({"rank": fmt.count, **pct,
                                                                        **{c: fmt.human_us for c in TIME_COLUMNS}}))
        self.body.mount(self.chart)
        self.body.mount(self.table)
        self._fill()
        self.table.focus()
        self.refresh_bindings()

    def _fill(self) -> None:
        ops = self.loaded.ops(self.include_feed)
        self.table.set_frame(UNITS.show(lead_columns(ops)))
        feed = "included" if self.include_feed else "excluded"
        self.table.border_title = (f"Ops ({ops.height:,}), infeed/outfeed {feed}"
                                   " · s sort · / filter · e infeed/outfeed · v trace · x CSV")
        self._draw(self.table.row())

    def _draw(self, row) -> None:
        p = self.loaded.properties
        ops = self.table.frame
        x, y = UNITS.name("operational_intensity"), UNITS.name("measured_flop_rate")
        pts = list(zip(ops[x].to_list(), ops[y].to_list()))
        mark = (row[x], row[y]) if row else None
        width = max(30, min(100, (self.size.width or 100) - 16))
        # Leave the table at least half the screen (a 24-line terminal still lists ~10 ops).
        height = max(5, min(14, ((self.size.height or 40) - 12) // 2))
        self.chart_text = scatter(pts, p["peak_flop_rate"], p["peak_hbm_bw"], width=width, height=height, mark=mark)
        self.chart.update(self.chart_text)

    def on_resize(self) -> None:
        if self.result is not None and hasattr(self, "table"):
            self._draw(self.table.row())

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        if self.result is not None and hasattr(self, "chart"):
            self._draw(event.row)

    def action_toggle_feed(self) -> None:
        if self.result is None:
            return
        self.include_feed = not self.include_feed
        self._fill()

    def graph_target(self):
        row = self.table.row()
        if row is None:
            return None
        if row["operation"] == "Program":
            return "the Program row sums every op: pick an op"
        program = row.get("hlo_module_id") or ""
        return row["operation"], int(program) if str(program).isdigit() else None

    def trace_target(self):
        row = self.table.row()
        if row is None:
            return None
        name, program = row["operation"], row.get("hlo_module_id") or ""
        if name == "Program":  # XProf's whole-program row
            return "the Program row sums every op: pick an op"
        program_id = int(program) if str(program).isdigit() else None
        return name, lambda frame: hlo_op_rows(frame, [name], program_id)

    def export_frame(self):
        """The rows as shown, in `tputui export`'s column order."""
        if self.result is None:
            return None
        return UNITS.raw(self.table.frame).select(self.result.rows.columns)
