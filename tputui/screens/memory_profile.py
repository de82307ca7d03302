"""Memory profile: an allocator's summary, its memory over time and what was live at the peak.

Keys: `m` memory id (allocator) picker; on the timeline ←/→ move the cursor one snapshot,
PgUp/PgDn a tenth of the timeline, Home/End, `p` jumps to the peak, `u` shows or hides free
memory, `v` opens the trace viewer at the cursor's moment (the allocation selected); Tab moves
to the breakdown table (`s` sort, `/` filter, `x` CSV).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.memory_profile import (
    AllocatorProfile,
    MemoryProfileResult,
    memory_event_row,
)
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin, TraceJumpMixin
from tputui.screens.pickers import PickerScreen
from tputui.widgets.charts import AreaChart
from tputui.widgets.summary_grid import summary_grid
from tputui.widgets.table import FrameTable

STACK_COLOR, HEAP_COLOR, FREE_COLOR, LINE_COLOR = "#e15759", "#f28e2b", "#59a14f", "#b07aa1"


def fmt_data_type(v: str | None) -> str:
    """XProf's INVALID data type (no tensor: stack, preallocated memory) reads as blank."""
    return "" if v in (None, "INVALID") else v


def fmt_ms(ps: float) -> str:
    """A time on the profile's clock (ps) in ms, as the chart's x axis and the records read it."""
    return fmt.duration_ms(ps / 1e9, 1)


def _summary_table(a: AllocatorProfile, width: int = 200) -> Table:
    s = a.summary()
    return summary_grid([
        [("#Allocations", f"{s['num_allocations']:,}"), ("#Deallocations", f"{s['num_deallocations']:,}"),
         ("Peak at", fmt_ms(s["peak_time_ps"]))],
        [("Peak heap (lifetime)", fmt.bytes_binary(s["peak_heap_usage_bytes"])),
         ("Peak in use (profile)", fmt.bytes_binary(s["peak_bytes_in_use"])), ("Step at peak", str(s["peak_step"]))],
        [("Stack at peak", fmt.bytes_binary(s["stack_reserved_bytes"])),
         ("Heap at peak", fmt.bytes_binary(s["heap_allocated_bytes"])),
         ("Fragmentation", fmt.fraction_percent(s["fragmentation"]))],
        [("Memory capacity", fmt.bytes_binary(s["memory_capacity_bytes"])),
         ("Free at peak", fmt.bytes_binary(s["free_memory_bytes"])),
         ("Events", f"{s['num_events']:,}")],
    ], width)


def _event_card(rec: dict | None) -> Text:
    """What XProf's timeline tooltip says about one snapshot."""
    if rec is None:
        return Text("")
    sign = -1 if rec["activity"] == "DEALLOCATION" else 1
    parts = [("timestamp", fmt_ms(rec["time_ps"])), ("event", rec["activity"].lower())]
    if rec["requested_bytes"] > 0:
        parts.append(("requested", fmt.bytes_binary(sign * rec["requested_bytes"])))
    parts.append(("allocated", fmt.bytes_binary(sign * rec["allocation_bytes"])))
    for key, label in (("tf_op", "op"), ("step_id", "step"), ("region_type", "region"), ("shape", "shape")):
        if rec[key] not in ("", None, 0):
            parts.append((label, str(rec[key])))
    if rec["data_type"] and rec["data_type"] != "INVALID":
        parts.append(("dtype", rec["data_type"]))
    parts.append(("in use", fmt.bytes_binary(rec["stack_bytes"] + rec["heap_bytes"])))
    t = Text()
    for i, (k, v) in enumerate(parts):
        t.append(("  " if i else "") + f"{k} ", style="dim")
        t.append(v, style="bold" if k in ("op", "in use") else "")
    return t


class MemoryProfileScreen(
        ResultKeysMixin,
        TraceJumpMixin[MemoryProfileResult],
        CsvExportMixin[MemoryProfileResult],
        ToolScreen[MemoryProfileResult]):
    help_notes = ("The timeline is one allocator's stack + heap over the profile ([b]m[/b] picks another); the line "
                  "under it describes the snapshot at the cursor; the table is what was allocated at the peak.")
    BINDINGS = [
        Binding("m", "pick_memory", "Memory id", id="memory_profile.memory_id",
                tooltip="pick the allocator (memory id) to show"),
        Binding("u", "toggle_free", "Free on/off", id="memory_profile.free",
                tooltip="show or hide free memory on the timeline"),
        Binding("v", "show_in_trace", "Show in trace", id="memory_profile.trace",
                tooltip="open the trace viewer around the timeline cursor's moment"),
        Binding("x", "export_csv", "CSV", id="memory_profile.csv",
                tooltip=CSV_TIP),
    ]
    RESULT_ACTIONS = frozenset({"pick_memory", "toggle_free", "show_in_trace", "export_csv"})
    DEFAULT_CSS = """
    MemoryProfileScreen #mp-head { height: auto; padding: 0 1; }
    MemoryProfileScreen #mp-summary { height: auto; padding: 0 1; }
    MemoryProfileScreen AreaChart { height: 1fr; min-height: 8; max-height: 18; border: round $foreground 55%; }
    MemoryProfileScreen #mp-event { height: auto; max-height: 3; padding: 0 1; }
    MemoryProfileScreen FrameTable { height: 1fr; min-height: 6; border: round $foreground 55%; }
    """

    show_free: bool = False
    memory_id: str = ""

    def show(self, result: MemoryProfileResult) -> None:
        self.memory_id = self.options.get("memory_id") or result.memory_ids[0]
        self.body.mount(Static("", id="mp-head"))
        self.body.mount(Static("", id="mp-summary"))
        self.chart = AreaChart([], [], x_format=fmt_ms, y_format=fmt.bytes_binary_short, id="mp-chart")
        self.body.mount(self.chart)
        self.body.mount(Static("", id="mp-event"))
        formats: dict[str, Callable[[Any], str]] = {
            "allocation_bytes": fmt.bytes_binary, "requested_bytes": fmt.bytes_binary, "data_type": fmt_data_type}
        self.table = FrameTable(id="mp-breakdown", formats=formats, hidden=("step_id",))
        self.body.mount(self.table)
        self._draw()
        self.chart.focus()
        self.refresh_bindings()

    @property
    def allocator(self) -> AllocatorProfile:
        return self.loaded.allocators[self.memory_id]

    def _draw(self) -> None:
        a = self.allocator
        tl = a.timeline
        ids = self.loaded.memory_ids
        self.query_one("#mp-head", Static).update(Text.assemble(
            ("Memory id ", "dim"), (self.memory_id, "bold"),
            (f"  ({ids.index(self.memory_id) + 1} of {len(ids)}: m to pick)" if len(ids) > 1 else "", "dim"),
            ("   host ", "dim"), (self.loaded.host, "")))
        self.query_one("#mp-summary", Static).update(_summary_table(a, (self.size.width or 120) - 2))
        series = [("stack", tl["stack_bytes"].to_numpy(), STACK_COLOR), ("heap", tl["heap_bytes"].to_numpy(), HEAP_COLOR)]
        if self.show_free:
            series.append(("free", tl["free_bytes"].to_numpy(), FREE_COLOR))
        times = tl["time_ps"].to_numpy()
        peak = a.peak_index
        self.chart.set_data(times, series, line=("fragmentation", tl["fragmentation"].to_numpy(), LINE_COLOR), peak=peak)
        self.chart.border_title = "Memory timeline"
        free_hint = "" if self.show_free else f" ({self.key_for('toggle_free')}: show free)"
        self.chart.border_subtitle = f"{self.chart.legend().plain}{free_hint} · {self.key_for('show_in_trace')} trace"
        self.table.set_frame(a.breakdown)
        self.table.border_title = (f"Memory breakdown at the peak (step {a.peak_step}): "
                                   f"{a.breakdown.height} rows · s sort · / filter · x CSV")
        self.chart.cursor = peak or 0
        self._show_event(self.chart.cursor)

    def on_resize(self) -> None:
        if self.result is not None and self.query("#mp-summary"):
            self.query_one("#mp-summary", Static).update(_summary_table(self.allocator, (self.size.width or 120) - 2))

    def on_frame_table_row_selected(self, event) -> None:
        # A breakdown row has no moment of its own (`v` goes by the timeline cursor): keep the
        # mixin's Enter-opens-the-trace handler from running too.
        event.stop()
        event.prevent_default()

    def on_area_chart_cursor_moved(self, event: AreaChart.CursorMoved) -> None:
        self._show_event(event.index)

    def _show_event(self, index: int) -> None:
        tl = self.allocator.timeline
        rec = tl.row(index, named=True) if 0 <= index < len(tl) else None
        for w in self.query("#mp-event").results(Static):
            w.update(_event_card(rec))

    def action_pick_memory(self) -> None:
        if self.result is None:
            return
        choices = [(m, f"{m}   peak {fmt.bytes_binary(a.peak_in_use_bytes)}") for m, a in self.result.allocators.items()]
        self.app.push_screen(PickerScreen("Memory id", choices, self.memory_id), self._picked)

    def _picked(self, memory_id: str | None) -> None:
        if memory_id and memory_id != self.memory_id:
            self.memory_id = memory_id
            self._draw()

    def action_toggle_free(self) -> None:
        if self.result is not None:
            self.show_free = not self.show_free
            cursor = self.chart.cursor
            self._draw()
            self.chart.cursor = cursor

    def trace_target(self):
        """The snapshot under the cursor: its allocation event selected, a few ms either side in view."""
        tl = self.allocator.timeline
        i = self.chart.cursor
        if not 0 <= i < len(tl):
            return None
        t, activity, memory_id = int(tl["time_ps"][i]), tl["activity"][i], self.memory_id
        span = int(tl["time_ps"][-1] - tl["time_ps"][0]) if len(tl) > 1 else 0
        half = max(10**9, span // 50)  # at least 1 ms, else 2% of the timeline

        def find(frame):
            from tputui.screens.trace_viewer import TraceFocus

            row = memory_event_row(frame, t, activity, memory_id)
            if row is None:
                return ()
            start = int(frame.start_ps[row])
            return TraceFocus(frame_rows=(row,), start_ps=start - half, end_ps=start + half)

        return f"the {activity.lower()} at {fmt_ms(t)}", find

    def export_frame(self):
        return self.table.frame if self.result is not None else None
