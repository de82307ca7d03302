"""Memory viewer: one XLA module's memory use over its program, and the buffers at the peak.

The buffer list's `lifetime` column is a text Gantt over the module's program points: where each
buffer is allocated and freed in the heap simulation (═ for buffers that live for the whole
program: parameters, outputs, constants); the list's title says which cell holds the peak.

Keys: `m` module picker (the largest module opens first), `M` memory-space picker (HBM, VMEM,
host, ...); on the heap curve ←/→ walk program points, `p` jumps to the peak; `b` switches the
buffer list between program order and size order; Tab moves between curve and list (`s` sort, `/` filter, `x` CSV); `v`
shows the instruction at the cursor (curve) or the one defining the buffer (list) in the trace
viewer (TPU profiles: the device runs the module's ops as events).
"""
from __future__ import annotations

import polars as pl
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.hlo_ops import module_program_id
from tputui.analysis.memory_viewer import MemoryViewerResult, PeakBuffer, memory_space_name
from tputui.analysis.op_events import hlo_op_rows
from tputui.screens.base import ToolScreen
from tputui.screens.graph_jump import GraphJumpMixin, graph_binding
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin, TraceJumpMixin
from tputui.screens.pickers import PickerScreen
from tputui.widgets.charts import HORIZONTAL_EIGHTHS, AreaChart
from tputui.widgets.summary_grid import summary_grid
from tputui.widgets.table import FrameTable

DATA_COLOR, PADDING_COLOR = "#4e79a7", "#edc948"
BAR_WIDTH = 16
GANTT_WIDTH = 24  # program points drawn in the lifetime column


def _mib(v: float) -> str:
    """A MiB figure (as XProf reports them) in the unit that reads best."""
    return fmt.bytes_binary(v * (1 << 20))


def _mib_number(v: float | None) -> str:
    """A MiB column cell: the figure only (the header names the unit), blank for none."""
    return fmt.number(v, 2) if v else ""


def _mib_short(v: float) -> str:
    return fmt.bytes_binary_short(v * (1 << 20))


def fmt_bar(fraction: float | None) -> str:
    if fraction is None:
        return ""
    cells = max(0.0, min(1.0, fraction)) * BAR_WIDTH
    full = int(cells)
    part = HORIZONTAL_EIGHTHS[int((cells - full) * 8)] if full < BAR_WIDTH else ""
    return ("█" * full + part.strip()).ljust(BAR_WIDTH)


def gantt_cell(span: tuple[int, int] | None, points: int, whole: bool, width: int = GANTT_WIDTH) -> str:
    """One buffer's lifetime over `points` program points as `width` cells: █ live, · not;
    ═ all along when it lives for the whole program; blank for the folded small buffers."""
    if points <= 0 or (span is None and not whole):
        return ""
    if span is None:
        return "═" * width
    first = min(width - 1, span[0] * width // points)
    last = max(first, min(width - 1, span[1] * width // points))
    return "·" * first + "█" * (last - first + 1) + "·" * (width - 1 - last)


def _space_label(color: int) -> str:
    return f"{memory_space_name(color)} ({color})"


def _summary(r: MemoryViewerResult, width: int = 200) -> Table:
    last = ("Scoped VMEM (max)", f"{fmt.bytes_binary(r.max_scoped_vmem_bytes)}  {r.max_scoped_vmem_instruction}") \
        if r.max_scoped_vmem_bytes else ("Buffers at peak", f"{len(r.buffers):,}")
    groups = [
        [("Peak memory", _mib(r.peak_heap_mib)), ("Unpadded peak", _mib(r.peak_unpadded_heap_mib)),
         ("Padding at peak", _mib(r.peak_padding_mib))],
        [("Parameters", fmt.bytes_binary(r.entry_parameters_bytes)),
         ("Outputs (maybe live out)", fmt.bytes_binary(r.maybe_live_out_bytes)),
         ("Temporaries at peak", fmt.bytes_binary(r.peak_heap_bytes))],
        [("Total allocated", fmt.bytes_binary(r.total_allocation_bytes)), ("Program points", f"{len(r.heap_bytes):,}"), last],
    ]
    for group, cell in zip(groups, _hbm_cells(r)):  # one more line: the HBM beside the peak
        group.append(cell)
    return summary_grid(groups, width)


def _hbm_cells(r: MemoryViewerResult) -> list[tuple[str, str]]:
    """The device's HBM, the headroom the peak leaves and the batch that would fit, when the
    capacity is known (HBM space only)."""
    h = r.hbm
    if h is None or h.capacity_bytes is None or h.headroom_bytes is None:
        return []
    room = (f"{fmt.bytes_binary(h.headroom_bytes)}, fits" if h.fits
            else f"over by {fmt.bytes_binary(-h.headroom_bytes)}")
    batch = f"about {h.batch_factor:.1f}x" if h.batch_factor else "-"
    return [("HBM per device", fmt.bytes_binary(h.capacity_bytes)), ("Headroom at peak", room),
            ("Larger batch fits", batch)]


def _buffer_card(b: PeakBuffer | None) -> Text:
    if b is None:
        return Text("")
    t = Text()

    def field(label: str, value: str, style: str = "") -> None:
        if value:
            t.append(("  " if t.plain else "") + f"{label} ", style="dim")
            t.append(value, style=style)

    if b.is_small:
        field("buffers under 16 KiB, together", fmt.bytes_binary(b.size_bytes), "bold")
        return t
    field("name", b.name, "bold")
    field("allocation type", b.category)
    field("size", fmt.bytes_binary(b.size_bytes), "bold")
    field("unpadded", fmt.bytes_binary(b.unpadded_bytes))
    field("expansion", f"{b.expansion:.2f}x" if b.expansion else "")
    field("extra", fmt.bytes_binary(b.extra_bytes) if b.extra_bytes else "")
    field("shape", b.shape)
    field("framework op", b.tf_op_name)
    field("op", f"{b.op_code} operation" if b.op_code else "")  # XProf's words
    field("category", b.op_category if b.op_category != b.op_code else "")
    field("source", f"{b.source_file}:{b.source_line}" if b.source_file else "")
    return t


class MemoryViewerScreen(
        ResultKeysMixin,
        TraceJumpMixin[MemoryViewerResult],
        GraphJumpMixin[MemoryViewerResult],
        CsvExportMixin[MemoryViewerResult],
        ToolScreen[MemoryViewerResult]):
    chart: AreaChart | None = None  # None: the memory space has no heap simulation to draw
    help_notes = ("The curve is the module's heap over its program points (data + padding); the list is every "
                  "buffer live at the peak. Buffers under 16 KiB are folded into one row, as in XProf.")
    BINDINGS = [
        Binding("m", "pick_module", "Module", id="memory_viewer.module", tooltip="pick the HLO module (program)"),
        Binding("M", "pick_space", "Memory space", id="memory_viewer.space",
                tooltip="pick the memory space (HBM, VMEM, host, ...)"),
        Binding("b", "toggle_order", "By size / program order", id="memory_viewer.order",
                tooltip="list the buffers by size or in program order"),
        Binding("v", "show_in_trace", "Show in trace", id="memory_viewer.trace",
                tooltip="open the trace viewer on the instruction at the cursor (curve) or defining the buffer (list)"),
        Binding("x", "export_csv", "CSV", id="memory_viewer.csv",
                tooltip=CSV_TIP),
        graph_binding("memory_viewer"),
    ]
    RESULT_ACTIONS = frozenset({"pick_module", "pick_space", "toggle_order", "show_in_trace", "export_csv",
                                "show_in_graph"})
    DEFAULT_CSS = """
    MemoryViewerScreen #mv-head { height: auto; padding: 0 1; }
    MemoryViewerScreen #mv-summary { height: auto; padding: 0 1; }
    MemoryViewerScreen #mv-hbm-advice { height: auto; padding: 0 1; }
    MemoryViewerScreen AreaChart { height: 1fr; min-height: 7; max-height: 14; border: round $foreground 55%; }
    MemoryViewerScreen #mv-point { height: auto; padding: 0 1; }
    MemoryViewerScreen FrameTable { height: 1fr; min-height: 6; border: round $foreground 55%; }
    MemoryViewerScreen #mv-buffer { height: auto; max-height: 3; padding: 0 1; }
    """

    by_size = False

    def show(self, result: MemoryViewerResult) -> None:
        r = result
        self.body.mount(Static(Text.assemble(
            ("Module ", "dim"), (r.module, "bold"),
            (f"  ({len(r.modules)} modules: m to pick)" if len(r.modules) > 1 else "  (the only module)", "dim"),
            ("   memory space ", "dim"), (r.memory_space_label, "bold"),
            (f"  ({len(r.memory_spaces)} spaces: M to pick)" if len(r.memory_spaces) > 1 else "", "dim")),
            id="mv-head"))
        self.body.mount(Static(_summary(r, (self.size.width or 120) - 2), id="mv-summary"))
        if r.hbm is not None and r.hbm.advice:
            self.body.mount(Static(Text(r.hbm.advice, style="dim"), id="mv-hbm-advice"))
        focus = None
        if r.heap_bytes:
            self.peak_point = r.peak_point
            self.chart = AreaChart(range(len(r.heap_bytes)),
                                   [("data", r.unpadded_heap_mib, DATA_COLOR), ("padding", r.padding_heap_mib, PADDING_COLOR)],
                                   peak=self.peak_point, x_format=lambda x: f"point {int(x)}",
                                   y_format=_mib_short, id="mv-chart")
            self.chart.border_title = "Memory use over program points"
            self.chart.border_subtitle = self.chart.legend().plain
            self.body.mount(self.chart)
            self.body.mount(Static("", id="mv-point"))
            focus = self.chart
        else:
            self.chart = None
            if r.buffers or r.total_allocation_bytes or r.peak_heap_mib:
                why = "No heap simulation for this memory space: every buffer lives for the whole program."
            else:
                space = r.memory_space_label
                hints = ([("M: another memory space")] if len(r.memory_spaces) > 1 else []) + \
                    (["m: another module"] if len(r.modules) > 1 else [])
                why = (f"No buffers of this module in memory space {space}: its HLO proto assigns none here."
                       + (f" ({', '.join(hints)})" if hints else ""))
            self.body.mount(Static(Text(why, style="dim"), id="mv-point"))
        top = r.largest_buffer_mib or 1.0
        self.table = FrameTable(id="mv-buffers", key="name", hidden=("rank", "op_code", "logical_buffer_id", "alloc_point",
                                                         "free_point"), formats={
            "size_mib": lambda v: f"{fmt_bar(v / top)} {fmt.number(v, 2)}",
            "unpadded_size_mib": _mib_number, "extra_mib": _mib_number})
        self.body.mount(self.table)
        self.body.mount(Static("", id="mv-buffer"))
        self._fill_table()
        (focus or self.table).focus()
        if self.chart is not None:
            self.chart.cursor = self.peak_point
            self._show_point(self.peak_point)
        self.refresh_bindings()

    def _fill_table(self) -> None:
        r = self.loaded
        frame = r.buffer_table(self.by_size)
        points = len(r.heap_bytes)
        cells = [gantt_cell(None if a is None else (a, f), points, lb != -1)
                 for a, f, lb in zip(frame["alloc_point"], frame["free_point"], frame["logical_buffer_id"])]
        names = frame.columns
        at = names.index("size_mib") + 1
        frame = frame.with_columns(lifetime=pl.Series(cells, dtype=pl.String)).select(
            names[:at] + ["lifetime"] + names[at:])
        self.table.sort_by = None
        self.table.set_frame(frame)
        how = "by size" if self.by_size else "in program order"
        other = "program order" if self.by_size else "by size"
        peak_cell = min(GANTT_WIDTH - 1, self.peak_point * GANTT_WIDTH // points) + 1 if points else 0
        lifetime = f" · lifetime: {points} points, peak in cell {peak_cell}/{GANTT_WIDTH}" if points else ""
        self.table.border_title = (f"Buffers live at the peak, {how} ({frame.height}){lifetime} · b {other}"
                                   " · v trace · s sort · / filter · x CSV")
        self._show_buffer(self.table.row())

    def on_resize(self) -> None:
        if self.result is not None and self.query("#mv-summary"):
            self.query_one("#mv-summary", Static).update(_summary(self.result, (self.size.width or 120) - 2))

    def on_area_chart_cursor_moved(self, event: AreaChart.CursorMoved) -> None:
        self._show_point(event.index)

    def _show_point(self, index: int) -> None:
        r = self.loaded
        if not r.heap_bytes or not 0 <= index < len(r.heap_bytes):
            return
        name = r.instruction_names[index] or "(end of program)"
        text = Text.assemble(("program point ", "dim"), (f"{index}", "bold"),
                             (" ▲ peak" if index == self.peak_point else "", "bold"),
                             ("  instruction ", "dim"), (name, "bold"),
                             ("  heap ", "dim"), (_mib(r.heap_mib[index]), ""))
        unpadded = Text.assemble(("unpadded ", "dim"), (_mib(r.unpadded_heap_mib[index]), ""))
        # Figures stay whole: on a narrow screen the second one starts its own line.
        fits = text.cell_len + 2 + unpadded.cell_len <= (self.size.width or 120) - 2
        text.append_text(Text("  " if fits else "\n") + unpadded)
        for w in self.query("#mv-point").results(Static):
            w.update(text)

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._show_buffer(event.row)

    def _show_buffer(self, row) -> None:
        r = self.loaded
        buf = r.buffer_at(row["rank"], self.by_size) if row else None
        for w in self.query("#mv-buffer").results(Static):
            w.update(_buffer_card(buf))

    def action_toggle_order(self) -> None:
        if self.result is not None:
            self.by_size = not self.by_size
            self._fill_table()

    def action_pick_module(self) -> None:
        if self.result is None:
            return
        ranked = self.result.modules_by_size()
        width = max(len(m) for m, _ in ranked)
        choices = [(m, f"{m:<{width}}  {fmt.bytes_binary(v) + ' allocated' if v else 'nothing allocated'}")
                   for m, v in ranked]
        note = "largest allocation first" if self.result.device_kind == "CPU" else "largest HBM allocation first"
        self.app.push_screen(PickerScreen("HLO module", choices, self.result.module, note=note), self._module_picked)

    def _module_picked(self, module: str | None) -> None:
        if module and module != self.loaded.module:
            self._reopen(module=module, memory_space=0)

    def action_pick_space(self) -> None:
        if self.result is None:
            return
        spaces = sorted(set(self.result.memory_spaces) | {0})
        choices = [(str(c), _space_label(c)) for c in spaces]
        self.app.push_screen(PickerScreen("Memory space", choices, str(self.result.memory_space)), self._space_picked)

    def _space_picked(self, space: str | None) -> None:
        if space is not None and int(space) != self.loaded.memory_space:
            self._reopen(module=self.loaded.module, memory_space=int(space))

    def _reopen(self, **options) -> None:
        """Run the analysis again for another module / space (a fresh screen, like the app's pickers)."""
        self.options = {**self.options, **options}
        self.by_size = False
        self.load()

    def graph_target(self):
        target = self.trace_target()
        if target is None or isinstance(target, str):
            return target
        return target[0], self.loaded.module  # the instruction, in this very module

    def trace_target(self):
        r = self.loaded
        if self.table.has_focus or self.chart is None:
            row = self.table.row()
            if row is None:
                return None
            buf = r.buffer_at(row["rank"], self.by_size)
            if buf is None or buf.is_small:
                return "the small buffers are many instructions: pick a single buffer"
            name = buf.name.split("{", 1)[0]  # "copy-start{1}": the instruction, not the tuple index
        else:
            i = self.chart.cursor
            name = r.instruction_names[i] if 0 <= i < len(r.instruction_names) else ""
            if not name:
                return "the end of the program is no instruction"
        program = module_program_id(r.module)
        return name, lambda frame: hlo_op_rows(frame, [name], program)

    def export_frame(self):
        # The lifetime cells are drawing; the CSV keeps the alloc / free program points they come from.
        return self.table.frame.drop("lifetime", strict=False) if self.result is not None else None
