"""Input pipeline analyzer: am I input-bound, and where does the input time go?

Sections numbered as XProf numbers them (its verdicts say "Section 3"), their parts lettered so no
number repeats (2a, 2b, ...), in reading order: (1) the
verdict; (2) device side: the per-step graph, step-time and input-% statistics (and on TPUs with
several cores, the range of input wait across cores per step, drawn as XProf draws it: the
average with a min-max interval); (3) host side: input time by kind and the input-op table; then the tf.data
bottleneck analysis and XProf's recommendations.

Keys: ←/→ Home/End move the step cursor on the graph; Tab moves to the input-op table (`s` sort,
`/` filter, `x` CSV); `o` opens the overview page; PgUp/PgDn scroll the page.
"""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.input_pipeline import RECOMMENDATIONS, InputPipelineResult
from tputui.analysis.tf_data import SLOW_CALL_PS
from tputui.screens.app_api import tools_app
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CsvExportMixin
from tputui.widgets.charts import HBarChart
from tputui.widgets.step_chart import BREAKDOWN, StepChart
from tputui.widgets.table import FrameTable, fit_table_height

# TPU steps: XProf's TensorCore breakdown (idle = waiting for the host, not for input).
TPU_BREAKDOWN = [("device_compute_ms", "TensorCore compute"), ("input_ms", "Input (infeed)"),
                 ("output_ms", "Output (outfeed)"), ("host_transfer_ms", "Host transfer"),
                 ("other_ms", "TensorCore idle")]
INPUT_OPS_MAX_HEIGHT = 12
RANGE_HEIGHT = 6  # rows of the per-core range chart
RANGE_COLUMNS = ("infeed_percent_min", "infeed_percent_avg", "infeed_percent_max")  # XProf's, per step
NARROW_WIDTH = 120  # below this the device and host boxes stack instead of sitting side by side

HOST_LABELS = [
    ("enqueue", "Enqueuing data to the device"),
    ("preprocessing", "Data preprocessing"),
    ("advanced_file_read", "Reading data from files in advance"),
    ("demanded_file_read", "Reading data from files on demand"),
    ("unclassified_non_enqueue", "Other data reading or processing"),
]


def _verdict(r: InputPipelineResult) -> Text:
    t = Text()
    b = r.bottleneck
    style = {"host": "bold red", "both": "bold yellow", "device": "bold green"}.get(b.input_classification, "bold")
    t.append(b.input_statement + "\n", style=style)
    if r.has_steps:
        ip = r.input_percent_summary()
        t.append(f"Per step, input is {fmt.percent(ip['avg'])} of the step time on average (σ {ip['stddev']:.1f}, "
                 f"min {fmt.percent(ip['min'])}, max {fmt.percent(ip['max'])})\n")
    if b.output_statement:
        t.append(b.output_statement + "\n")
    for s in (b.all_other_statement, b.kernel_launch_statement, b.device_collectives_statement):
        if s:
            t.append(s + "\n", style="italic")
    t.append(r.next_step, style="dim")
    return t


def _device_stats(r: InputPipelineResult) -> Table:
    t = Table(box=None, padding=(0, 1), show_edge=False)
    for col in ("", "avg", "σ", "min", "max"):
        t.add_column(col, justify="right" if col else "left", no_wrap=True)
    st, ip = r.step_time_summary(), r.input_percent_summary()
    t.add_row("Step time (ms)", *(fmt.number(st[k]) for k in ("avg", "stddev", "min", "max")))
    t.add_row("Input (% of step)", *(f"{ip[k]:.1f}" for k in ("avg", "stddev", "min", "max")))
    if r.core_ranges is not None and len(r.core_ranges):
        cr = r.core_ranges
        t.add_row("Step range across cores (ms)", "", "", fmt.number(fmt.figure(cr["step_time_min_ms"].min())),
                  fmt.number(fmt.figure(cr["step_time_max_ms"].max())))
    return t


def has_core_range(r: InputPipelineResult) -> bool:
    """TPU steps measured on more than one core: XProf draws their input wait as a range."""
    cr = r.core_ranges
    return (r.has_steps and all(c in r.step_table.columns for c in RANGE_COLUMNS)
            and cr is not None and len(cr) > 0 and (fmt.figure(cr["cores"].max()) or 0) > 1)


def range_chart(names: list[str], lo: list[float], avg: list[float], hi: list[float], width: int,
                height: int = RANGE_HEIGHT) -> Text:
    """A column per step (neighbouring steps share a column when they do not fit): │ from the
    least to the most of the cores, ● the average, on a y-axis of the values' own range."""
    axis_w = 8
    n = len(names)
    cols = max(1, min(n, width - axis_w - 1))
    each = max(1, min(4, (width - axis_w - 1) // n)) if n <= width - axis_w - 1 else 1
    buckets = [(c * n // cols, max(c * n // cols + 1, (c + 1) * n // cols)) for c in range(cols)]
    b_lo = [min(lo[a:b]) for a, b in buckets]
    b_hi = [max(hi[a:b]) for a, b in buckets]
    b_avg = [sum(avg[a:b]) / (b - a) for a, b in buckets]
    bottom, top = min(b_lo), max(b_hi)
    span = (top - bottom) or 1.0

    def row(v: float) -> int:
        return round((v - bottom) / span * (height - 1))

    grid = [[" "] * (cols * each) for _ in range(height)]
    for c in range(cols):
        r_lo, r_hi, r_avg = row(b_lo[c]), row(b_hi[c]), row(b_avg[c])
        x = c * each + each // 2
        for r in range(r_lo, r_hi + 1):
            grid[height - 1 - r][x] = "│"
        grid[height - 1 - r_avg][x] = "●"
    t = Text(no_wrap=True)
    for i, line in enumerate(grid):
        label = f"{top:.1f}" if i == 0 else f"{bottom:.1f}" if i == height - 1 else ""
        t.append(label.rjust(axis_w - 2) + " ┤", style="dim")
        for ch in line:
            t.append(ch, style="bold" if ch == "●" else "cyan")
        t.append("\n")
    first, last = names[0], names[-1]
    t.append(" " * axis_w + first + (last.rjust(cols * each - len(first)) if n > 1 else ""), style="dim")
    return t


def _core_range(r: InputPipelineResult, width: int) -> Text:
    st, cr = r.step_table, r.core_ranges
    if cr is None:  # has_core_range said no
        return Text("")
    lo, avg, hi = (st[c].to_list() for c in RANGE_COLUMNS)
    t = range_chart([str(n) for n in st["name"].to_list()], lo, avg, hi, width)
    worst = st.sort("infeed_percent_max", descending=True).row(0, named=True)
    t.append(f"\n{int(fmt.figure(cr['cores'].max()) or 0)} cores · most waiting core: step {worst['name']}, cores from "
             f"{worst['infeed_percent_min']:.1f}% to {worst['infeed_percent_max']:.1f}% "
             f"(avg {worst['infeed_percent_avg']:.1f}%) · step time across cores "
             f"{fmt.number(fmt.figure(cr['step_time_min_ms'].min()))} to "
             f"{fmt.number(fmt.figure(cr['step_time_max_ms'].max()))} ms",
             style="dim")
    return t


def _tf_data(r: InputPipelineResult) -> Text:
    t = Text()
    tfd = r.tf_data
    if tfd is None:
        t.append("No tf.data input pipeline in this profile.", style="dim")
        return t
    t.append(tfd.summary + "\n", style="bold red" if tfd.is_input_bound else "")
    for p in tfd.pipelines:
        t.append(f"\n{p.host} · {p.name}", style="bold")
        t.append(f"  {p.calls} calls, latency avg {fmt.number(p.avg_latency_ps / 1e6, 1)} µs, min "
                 f"{fmt.number(p.min_latency_ps / 1e6, 1)}, max {fmt.number(p.max_latency_ps / 1e6, 1)}; "
                 f"{p.slow_calls} slow (> {SLOW_CALL_PS // 1_000_000} µs)\n")
        if p.bottleneck_iterator:
            t.append("  Bottleneck: ", style="bold")
            t.append(f"{p.bottleneck_iterator}", style="bold yellow")
            t.append(f"  {p.bottleneck_long_name}  ({fmt.number(p.bottleneck_latency_ps / 1e6, 1)} µs self time in the "
                     "slowest call)\n")
            t.append(f"  Suggestion: {p.suggestion}\n", style="italic")
    return t


class InputPipelineScreen(CsvExportMixin[InputPipelineResult], ToolScreen[InputPipelineResult]):
    BINDINGS = [
        Binding("O", "overview", "Overview", id="input_pipeline.overview"),
        Binding("x", "export_csv", "CSV", id="input_pipeline.csv"),
    ]
    DEFAULT_CSS = """
    InputPipelineScreen #ip-scroll { height: 1fr; }
    InputPipelineScreen #ip-verdict { height: auto; border: round $foreground 55%; padding: 0 1; }
    InputPipelineScreen #ip-sides { height: auto; }
    InputPipelineScreen #ip-sides.narrow { layout: vertical; }
    InputPipelineScreen #ip-device { width: 1fr; height: auto; border: round $foreground 55%; padding: 0 1; }
    InputPipelineScreen #ip-host { width: 1fr; height: auto; border: round $foreground 55%; padding: 0 1; }
    InputPipelineScreen #ip-core-range { height: auto; border: round $foreground 55%; padding: 0 1; }
    InputPipelineScreen .ip-diagnostic { height: auto; padding: 0 1; color: $text-muted; }
    InputPipelineScreen #ip-ops { height: 12; border: round $foreground 55%; }
    InputPipelineScreen #ip-no-ops { height: auto; border: round $foreground 55%; padding: 0 1; color: $text-muted; }
    InputPipelineScreen #ip-tfdata { height: auto; border: round $foreground 55%; padding: 0 1; }
    InputPipelineScreen #ip-recs { height: auto; padding: 0 1; color: $text-muted; }
    """

    def show(self, result: InputPipelineResult) -> None:
        scroll = VerticalScroll(id="ip-scroll")
        self.body.mount(scroll)
        verdict = Static(_verdict(result), id="ip-verdict")
        verdict.border_title = "1 · Summary"
        scroll.mount(verdict)
        if result.has_steps:
            categories = TPU_BREAKDOWN if result.hardware_type == "TPU" else BREAKDOWN
            scroll.mount(StepChart(result.step_table, title="2a · Step time and input (ms)", categories=categories,
                                   autofocus=True, id="ip-steps"))
        if has_core_range(result):
            core_range = Static(_core_range(result, (self.size.width or 120) - 4), id="ip-core-range")
            core_range.border_title = "2b · Input wait across cores per step (% of step time: │ min to max, ● avg)"
            scroll.mount(core_range)
        sides = Horizontal(id="ip-sides", classes="narrow" if self.size.width < NARROW_WIDTH else "")
        scroll.mount(sides)
        device = Static(_device_stats(result) if result.has_steps else
                        Text("No step time measured: no device-side analysis.", style="dim"), id="ip-device")
        device.border_title = "2c · Device side: step-time and input statistics"
        hb = result.host_breakdown
        host = HBarChart([(label, hb[key]) for key, label in HOST_LABELS], unit=" ms", bar_width=8,
                         label_width=max(len(label) for _, label in HOST_LABELS), id="ip-host")
        host.border_title = "3a · Host side: input time by kind"
        sides.mount(device, host)
        for d in result.diagnostics:
            scroll.mount(Static(Text(f"{d['severity']}: {d['message']}"), classes="ip-diagnostic"))
        ops: Widget
        if len(result.input_ops):
            ops = FrameTable(result.input_ops, id="ip-ops", sort=("self_ms", True), formats={
                "total_percent": lambda v: fmt.percent(v, 2), "self_percent": lambda v: fmt.percent(v, 2)})
            ops.border_title = f"3b · Input ops on the host: {len(result.input_ops)} · s sort · / filter · x CSV"
            ops.styles.height = min(INPUT_OPS_MAX_HEIGHT, len(result.input_ops) + 3)  # refitted once laid out
        else:
            ops = Static("No input ops on the host: no tf.data or infeed activity in this profile.", id="ip-no-ops")
            ops.border_title = "3b · Input ops on the host"
        scroll.mount(ops)
        tfd = Static(_tf_data(result), id="ip-tfdata")
        tfd.border_title = "tf.data bottleneck analysis"
        scroll.mount(tfd)
        recs = Static(Text("Recommendations:\n" + "\n".join(f"• {r}" for r in RECOMMENDATIONS)), id="ip-recs")
        scroll.mount(recs)
        if not result.has_steps and len(result.input_ops):
            ops.focus()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        for sides in self.query("#ip-sides"):
            sides.set_class(self.size.width < NARROW_WIDTH, "narrow")
        for chart in self.query("#ip-core-range").results(Static):
            chart.update(_core_range(self.loaded, (self.size.width or 120) - 4))
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        for table in self.query("#ip-ops").results(FrameTable):
            fit_table_height(table, INPUT_OPS_MAX_HEIGHT)

    _table_cursor = 0

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        # The table may sit below the fold (small terminals): bring it up when its cursor moves.
        table = event.table
        if table.id == "ip-ops" and table.has_focus and table.cursor_row != self._table_cursor:
            table.scroll_visible()
        self._table_cursor = table.cursor_row

    def export_frame(self):
        tables = self.query("#ip-ops").results(FrameTable)
        return next((t.frame for t in tables), None)

    def action_overview(self) -> None:
        tools_app(self).open_tool("overview_page")
