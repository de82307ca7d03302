"""Overview page: performance summary, step-time graph, top device ops, run environment,
recommendation and diagnostics (all hosts together, or the host picked with `h`).

Keys: ←/→ Home/End move the step cursor on the graph (its breakdown reads under it); Tab moves
to the top-ops table (`s` sort, `/` filter); `n` opens the tool XProf recommends next,
`i` the input pipeline analyzer; `x` writes the top ops as CSV; PgUp/PgDn scroll the page.
Narrower than NARROW_WIDTH columns, the summary and the recommendation stack instead of sitting
side by side.
"""
from __future__ import annotations

import polars as pl
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.input_analysis import without_section_refs
from tputui.analysis.overview import OverviewResult
from tputui.screens.app_api import tools_app
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CsvExportMixin
from tputui.widgets.step_chart import BREAKDOWN, StepChart
from tputui.widgets.table import FrameTable, fit_table_height

NARROW_WIDTH = 110
OPS_TABLE_MAX_HEIGHT = 14
# XProf's words for its bottleneck classes, said as what they mean for the user.
BOTTLENECK_WORDS = {"host": "host (input-bound)", "both": "input and device (possibly input-bound)",
                    "device": "device (not input-bound)", "unknown": "unknown (no steps measured)"}


def _summary(r: OverviewResult) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True, min_width=18)
    t.add_column()
    st = r.step_time_ms
    if st:
        t.add_row("Average step time", f"{st['avg']:,.3f} ms over {st['count']} steps")
        t.add_row("  spread", f"σ {st['stddev']:,.3f} · min {st['min']:,.3f} · max {st['max']:,.3f} ms")
        labels = dict(BREAKDOWN)
        parts = [(labels[c], v) for c, v in r.step_parts_ms if c in labels]
        t.add_row("  of which", ", ".join(f"{label} {fmt.duration_ms(v)}" for label, v in parts) or "-")
    else:
        t.add_row("Average step time", Text("unknown (no step marker)", style="dim"))
    tpu = r.stats.hardware_type == "TPU"
    device = r.stats.hardware_type in ("TPU", "GPU")
    dash = Text("n/a on CPU/GPU", style="dim")
    on_cpu = Text("n/a on CPU", style="dim")  # no device: a 0.0% would read as a measurement
    t.add_row("Device idle time", fmt.percent(r.device_idle_time_percent) if tpu else dash)
    t.add_row("Host idle time", fmt.percent(r.host_idle_time_percent) if tpu else dash)
    t.add_row("Device duty cycle", fmt.percent(r.device_duty_cycle_percent) if tpu else dash)
    t.add_row("FLOPS utilization", fmt.percent(r.flop_rate_utilization_percent) + " of roofline" if device else on_cpu)
    t.add_row("Memory bandwidth", fmt.percent(r.memory_bw_utilization_percent) + " of HBM peak" if device else on_cpu)
    t.add_row("MXU utilization", fmt.percent(r.stats.mxu_utilization_percent) if r.stats.mxu_utilization_percent
              else Text("no counters", style="dim"))
    t.add_row("16/32-bit compute",
              f"{fmt.percent(r.device_compute_16bit_percent)} / {fmt.percent(r.device_compute_32bit_percent)}"
              if device else on_cpu)
    t.add_row("Op placement", f"host {fmt.percent(r.host_tf_op_percent)} · device {fmt.percent(r.device_tf_op_percent)}")
    return t


TOP_ADVICE = 3


def _recommendation(r: OverviewResult) -> Text:
    rec = r.recommendation()
    # On TPU steps XProf leaves the generic bottleneck empty and states the input pipeline's verdict
    # instead (its `input_conclusion`); say that rather than an empty "Bottleneck:".
    bottleneck = rec["bottleneck"] or r.pipeline.bottleneck.input_classification
    statement = rec["statement"] or rec["input_conclusion"]
    t = Text()
    t.append(f"Bottleneck: {BOTTLENECK_WORDS.get(bottleneck, bottleneck or 'not classified')}\n", style="bold")
    if statement:
        t.append(statement + "\n")
    for key in ("all_other_statement", "kernel_launch_statement", "device_collectives_statement",
                "precision_statement"):
        if rec[key]:
            t.append(rec[key] + "\n", style="italic")
    t.append(without_section_refs(rec["summary_next_step"]) + "\n", style="dim")
    if rec["next_tool"]:
        t.append("Next: ", style="bold")
        t.append(f"{rec['next_tool']}  (J to open)")
    if r.advice:  # the top of the advice tool's list (XProf's smart suggestions first)
        t.append(f"\nAdvice ({len(r.advice)}, all in the Advice tool):", style="bold")
        for item in r.advice[:TOP_ADVICE]:
            t.append(f"\n  • {item['title']}", style="bold" if item["severity"] == "high" else "")
            n = len(item["ops"])
            t.append(f" ({item['source']}, {n} op{'' if n == 1 else 's'})" if n else f" ({item['source']})", style="dim")
    return t


def _environment(r: OverviewResult) -> Text:
    env = r.run_environment()
    t = Text()
    for label, value in (("Hosts", f"{env['host_count']} ({', '.join(env['hosts'])})"),
                         ("Device type", env["device_type"]), ("Device cores", str(env["device_core_count"])),
                         ("Training", "yes" if env["is_training"] else "no")):
        t.append(f"{label}: ", style="bold")
        t.append(value + "   ")
    batch = env.get("batch_size")
    if batch:  # beyond XProf: recorded by the profile, or derived from the step program (labelled)
        t.append("\nBatch size: ", style="bold")
        t.append(f"{batch['value']:,}" + (f" (all: {', '.join(map(str, batch['values']))})"
                                          if len(batch["values"]) > 1 else ""))
        t.append(f"  {batch['source']}: {batch['detail']}", style="dim")
    rt = env.get("tpu_runtime")
    if rt:  # from the TPU runtime log (--tpu-logs)
        init = f"init {rt['init_seconds']:.1f} s" if rt["init_seconds"] is not None else "init time not logged"
        size = rt["premapped_buffer_bytes"]
        buffer = f"premapped buffer {fmt.bytes_binary(size)}" if size is not None else "premapped buffer not logged"
        failed = rt["premapped_allocation_failures"]
        t.append("\nTPU runtime: ", style="bold")
        t.append(f"{init}, {buffer}" + (f", {failed} allocation failure(s)" if failed else ""))
        t.append(f"  ({rt['log']})", style="dim")
    return t


def _diagnostics(r: OverviewResult) -> Text:
    if not r.pipeline.diagnostics and not r.hints:
        return Text("No diagnostics.", style="dim")
    t = Text()
    for d in r.pipeline.diagnostics:
        t.append(f"{d['severity']}: ", style="bold yellow" if d["severity"] == "WARNING" else "bold red")
        t.append(d["message"] + "\n")
    for hint in r.hints:  # ours, beyond XProf's diagnostics
        t.append("HINT: ", style="bold cyan")
        t.append(hint + "\n")
    return t


class OverviewScreen(CsvExportMixin[OverviewResult], ToolScreen[OverviewResult]):
    BINDINGS = [
        Binding("J", "next_tool", "Next tool", id="overview.next"),
        Binding("I", "open('input_pipeline_analyzer')", "Input pipeline", id="overview.input_pipeline"),
        Binding("x", "export_csv", "CSV", id="overview.csv"),
    ]
    DEFAULT_CSS = """
    OverviewScreen #ov-scroll { height: 1fr; }
    OverviewScreen #ov-top { height: auto; }
    OverviewScreen #ov-top.narrow { layout: vertical; }
    OverviewScreen #ov-summary { width: 1fr; height: auto; border: round $foreground 55%; padding: 0 1; }
    OverviewScreen #ov-rec { width: 1fr; height: auto; border: round $foreground 55%; padding: 0 1; }
    OverviewScreen #ov-no-steps { height: auto; border: round $foreground 55%; padding: 0 1; color: $text-muted; }
    OverviewScreen #ov-ops { height: 14; border: round $foreground 55%; }
    OverviewScreen #ov-no-ops { height: auto; border: round $foreground 55%; padding: 0 1; color: $text-muted; }
    OverviewScreen #ov-env { height: auto; padding: 0 1; }
    OverviewScreen #ov-diag { height: auto; padding: 0 1; }
    """

    def show(self, result: OverviewResult) -> None:
        scroll = VerticalScroll(id="ov-scroll")
        self.body.mount(scroll)
        top = Horizontal(id="ov-top", classes="narrow" if self.size.width < NARROW_WIDTH else "")
        scroll.mount(top)
        summary = Static(_summary(result), id="ov-summary")
        summary.border_title = "Performance summary"
        rec = Static(_recommendation(result), id="ov-rec")
        rec.border_title = "Recommendation for next step"
        top.mount(summary, rec)
        if result.has_steps:
            scroll.mount(StepChart(result.steps, autofocus=True, id="ov-steps"))
        else:
            note = Static("No step-time graph: no step markers in this profile (see the warning below).",
                          id="ov-no-steps")
            note.border_title = "Step-time graph"
            scroll.mount(note)
        if len(result.top_ops):
            shown = result.top_ops.select(
                pl.col("self_time_percent").alias("time %"), pl.col("cumulative_time_percent").alias("cumulative %"),
                "category", pl.col("name").alias("operation"), pl.col("flop_rate_gflops").alias("GFLOP/s"))
            ops: Widget = FrameTable(shown, id="ov-ops", formats={
                "time %": lambda v: fmt.percent(v, 2), "cumulative %": lambda v: fmt.percent(v, 2),
                "GFLOP/s": lambda v: fmt.number(v, 1)})
            ops.border_title = f"Top {len(result.top_ops)} device ops by self time · s sort · / filter · x CSV"
            ops.styles.height = min(OPS_TABLE_MAX_HEIGHT, len(shown) + 3)  # refitted once laid out
        else:
            ops = Static("No device ops: this profile has no TPU or GPU device.", id="ov-no-ops")
            ops.border_title = "Top device ops"
        scroll.mount(ops)
        env = Static(_environment(result), id="ov-env")
        scroll.mount(env)
        scroll.mount(Static(_diagnostics(result), id="ov-diag"))
        if not result.has_steps and len(result.top_ops):
            ops.focus()

        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        for top in self.query("#ov-top"):
            top.set_class(self.size.width < NARROW_WIDTH, "narrow")
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        for table in self.query("#ov-ops").results(FrameTable):
            fit_table_height(table, OPS_TABLE_MAX_HEIGHT)

    _table_cursor = 0

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        # The table may sit below the fold (small terminals): bring it up when its cursor moves.
        table = event.table
        if table.id == "ov-ops" and table.has_focus and table.cursor_row != self._table_cursor:
            table.scroll_visible()
        self._table_cursor = table.cursor_row

    def export_frame(self):
        tables = self.query("#ov-ops").results(FrameTable)
        return next((t.frame for t in tables), None)

    def action_next_tool(self) -> None:
        if self.result is None:
            return
        nxt = self.result.recommendation()["next_tool"]
        if nxt is None:
            self.notify("no step time measured: nothing to recommend", severity="warning")
            return
        self.action_open(nxt)

    def action_open(self, tool: str) -> None:
        tools_app(self).open_tool(tool)
