"""Pod viewer: step picker, topology heatmap (hosts -> chips -> cores) coloured by a step-breakdown
category, the per-chip breakdown as stacked columns, and the send/recv channel table.

The pod viewer always covers every host of the run (as XProf's does): the context bar says so,
and a host picked with `h` is where the heatmap cursor starts. Colouring starts with the category
that takes the most time over all steps (device compute on a TPU pod, input on an input-bound CPU run).

Keys: `[` / `]` (or left / right on the step bar) pick the step, `c` cycles the category, arrows
move over the heatmap, tab moves between panes (on the per-chip columns ←/→ read one chip's
breakdown); selecting a channel highlights its cores."""
from __future__ import annotations

import polars as pl
from rich.markup import escape
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.pod_viewer import CATEGORY_KEYS, CATEGORY_NAMES, PodViewerResult
from tputui.screens.base import ToolScreen
from tputui.widgets.charts import PALETTE, StackedColumns
from tputui.widgets.heatmap import Cell, Heatmap
from tputui.widgets.step_chart import y_axis
from tputui.widgets.table import FrameTable

CHIP_CHART_HEIGHT = 8


class StepBar(Static, can_focus=True):
    """`◀ step 3 ▶  (2 of 5)` — left / right change the step."""

    BINDINGS = [Binding("left", "screen.step(-1)", "Prev step", show=False),
                Binding("right", "screen.step(1)", "Next step", show=False)]


def _parse_cores(spec: str) -> set[int]:
    out: set[int] = set()
    for part in (spec or "").split(","):
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        elif part.strip().lstrip("-").isdigit():
            out.add(int(part))
    return out


class PodViewerScreen(ToolScreen):
    BINDINGS = [
        Binding("right_square_bracket", "step(1)", "Next step", id="pod.next"),
        Binding("left_square_bracket", "step(-1)", "Prev step", id="pod.prev"),
        Binding("k", "category(1)", "Category", id="pod.category"),
    ]
    DEFAULT_CSS = """
    PodViewerScreen StepBar { height: 1; padding: 0 1; }
    PodViewerScreen StepBar:focus { background: $accent 30%; }
    PodViewerScreen Heatmap { padding: 0 1; }
    PodViewerScreen Heatmap:focus { background: $boost; }
    PodViewerScreen .line { height: 1; padding: 0 1; }
    PodViewerScreen #chip_legend { height: auto; }
    PodViewerScreen #details { height: 2; padding: 0 1; color: $text; }
    PodViewerScreen #chip-plot { height: 8; padding: 0 1; }
    PodViewerScreen #chip-axis { width: auto; height: 8; }
    PodViewerScreen StackedColumns { height: 8; width: 1fr; }
    PodViewerScreen StackedColumns:focus { background: $boost; }
    PodViewerScreen #channels { height: 1fr; min-height: 4; border: round $panel; }
    """  # 8 = CHIP_CHART_HEIGHT
    channels: FrameTable | None = None
    step_index: reactive[int] = reactive(0, init=False)
    category: reactive[int] = reactive(0, init=False)

    def context_text(self) -> str:
        # The pod viewer reads every host whatever `h` picked: say so instead of one host's name.
        hosts = self.run_data.hosts
        where = f"hosts [b]all {len(hosts)}[/b]" if len(hosts) > 1 else f"host [b]{escape((hosts or ['-'])[0])}[/b]"
        start = f" · cursor starts on {escape(self.host)}" if self.host and len(hosts) > 1 else ""
        return (f"[b]{escape(self.tool.title)}[/b]  │  run [b]{escape(self.run_data.name)}[/b]  │  "
                f"{where}{start}  [dim](t tool · r run · h host · ? help · q quit)[/dim]")

    def show(self, result: PodViewerResult) -> None:
        self.pod = result
        self.steps = result.step_numbers
        if not self.steps:
            t = Text(f"No steps to show: this {result.device_type or ''} profile has no step markers.\n".replace("  ", " "),
                     style="bold")
            t.append(" ".join(result.diagnostics.get("warnings", [])), style="dim")
            self.body.mount(Static(t, id="no-steps", classes="error"))
            return
        # Start on the category that takes the most time over all steps.
        self.set_reactive(PodViewerScreen.category, result.dominant_category)
        self.body.mount(StepBar("", id="stepbar"))
        self.heatmap = Heatmap(id="heatmap")
        self.body.mount(self.heatmap)
        self.body.mount(Static("", id="legend", classes="line"))
        self.body.mount(Static("", id="details"))
        self.chips = StackedColumns(id="chips")
        self.chip_axis = Static("", id="chip-axis")
        self.body.mount(Horizontal(self.chip_axis, self.chips, id="chip-plot"))
        self.body.mount(Static("", id="chip_legend", classes="line"))
        if len(result.channels):
            two = {c: (lambda v: fmt.number(v, 2)) for c in ("data_mib", "latency_us", "bandwidth_gibps", "send_delay_us")}
            self.channels = FrameTable(result.channels, id="channels", formats=two)
            self.channels.border_title = f"Send/recv channels ({len(result.channels)}) · s sort · / filter"
            self.body.mount(self.channels)
        else:
            self.body.mount(Static("No send/recv channels: no cross-core send / recv-done ops in this profile.",
                                   id="no-channels", classes="line"))
        self._redraw()
        if self.host:  # the host picked with `h`: start the cursor on its first cell
            self.heatmap.cursor = next((i for i, u in enumerate(self.heatmap.units) if u.host == self.host), 0)
        self.heatmap.focus()

    # --- state ------------------------------------------------------------------------------
    def action_step(self, delta: int) -> None:
        if getattr(self, "steps", None):
            self.step_index = max(0, min(len(self.steps) - 1, self.step_index + delta))

    def action_category(self, delta: int) -> None:
        if getattr(self, "steps", None):
            self.category = (self.category + delta) % len(CATEGORY_KEYS)

    def watch_step_index(self) -> None:
        self._redraw()

    def watch_category(self) -> None:
        self._redraw()

    @property
    def step(self) -> int:
        return self.steps[self.step_index]

    @property
    def category_key(self) -> str:
        return CATEGORY_KEYS[self.category]

    def step_frame(self) -> pl.DataFrame:
        return self.pod.step_frame(self.step)

    def _redraw(self) -> None:
        if not getattr(self, "steps", None) or not self.is_mounted:
            return
        df = self.step_frame()
        key = self.category_key
        cells = [Cell(r["core"], r["host"] or "?", r["chip"] if r["chip"] is not None else -1, r[f"{key}_us"] / 1000)
                 for r in df.iter_rows(named=True)]
        self.heatmap.set_cells(cells)
        bar = Text()
        bar.append(" ◀ ", style="bold")
        bar.append(f"step {self.step}", style="bold")
        bar.append(" ▶ ", style="bold")
        bar.append(f" ({self.step_index + 1} of {len(self.steps)})   ", style="dim")
        bar.append("colour: ", style="dim")
        bar.append(CATEGORY_NAMES[key], style="bold")
        bar.append(f"   {len(df)} core{'s' if len(df) != 1 else ''} · {self.pod.device_type}   "
                   "[ ] step · k category", style="dim")
        self.query_one("#stepbar", StepBar).update(bar)
        self.query_one("#legend", Static).update(self.heatmap.legend())
        # Stacked columns: per chip (x = global chip id), the mean over its cores, in ms.
        self.per_chip = self.pod.chip_frame(self.step)
        self.chip_keys = [k for k in CATEGORY_KEYS if f"{k}_ms" in self.per_chip.columns]
        values = [[r[f"{k}_ms"] for k in self.chip_keys] for r in self.per_chip.iter_rows(named=True)]
        self.chips.set_data(values, [CATEGORY_NAMES[k] for k in self.chip_keys],
                            [str(c) for c in self.per_chip["chip"].to_list()])
        self.chip_axis.update(y_axis(self.per_chip["total_ms"].max() or 0.0, CHIP_CHART_HEIGHT))
        legend = Text("per chip (ms): ", style="dim")
        legend.append_text(self.chips.legend())
        self.query_one("#chip_legend", Static).update(legend)
        if self.chips.has_focus:
            self._chip_details(self.chips.cursor)
        else:
            self._update_details(self.heatmap.current)

    def _update_details(self, unit) -> None:
        if unit is None:
            return
        key = self.category_key
        mean = self.pod.cores_mean_ms(self.step, unit.cores)
        val, total = mean[key], mean["total"]
        pct = fmt.share_percent(val, total, missing="0.0%")
        t = Text()
        if self.heatmap.level == "core":
            core = next(iter(unit.cores))
            info = self.pod.core_info(core)
            t.append(f"core {core}", style="bold")
            if info is not None:
                t.append(f" · chip {info.chip} (core {info.core_on_chip} on chip) · host {info.host}")
        else:
            t.append(unit.label if self.heatmap.level == "chip" else f"host {unit.host}", style="bold")
            t.append(f" · {len(unit.cores)} cores (mean)" + (f" · host {unit.host}" if self.heatmap.level == "chip" else ""))
        t.append(f" · {CATEGORY_NAMES[key]} {fmt.duration_ms(val)} ({pct} of {fmt.duration_ms(total)} step)")
        self.query_one("#details", Static).update(t)

    def _chip_details(self, index: int) -> None:
        """One chip's breakdown (the per-chip columns' cursor), largest part first."""
        if not 0 <= index < len(self.per_chip):
            return
        r = self.per_chip.row(index, named=True)
        total = r["total_ms"]
        t = Text()
        t.append(f"chip {r['chip']}", style="bold")
        t.append(f" · host {r['host']} · mean of its {r['cores']} core{'s' if r['cores'] != 1 else ''}: "
                 f"{fmt.duration_ms(total)}  ")
        parts = sorted(((r[f"{k}_ms"], k, i) for i, k in enumerate(self.chip_keys) if r[f"{k}_ms"] > 0), reverse=True)
        for n, (v, k, i) in enumerate(parts):
            if n:
                t.append(" · ", style="dim")
            t.append("■ ", style=PALETTE[i % len(PALETTE)])
            t.append(f"{CATEGORY_NAMES[k]} {v:.3f}")
            t.append(f" ({fmt.share_percent(v, total)})" if total else "", style="dim")
        self.query_one("#details", Static).update(t)

    # --- events -------------------------------------------------------------------------------
    def on_stacked_columns_cursor_moved(self, event: StackedColumns.CursorMoved) -> None:
        if getattr(self, "steps", None) and event.chart.has_focus:
            self._chip_details(event.index)
    def on_heatmap_cursor_moved(self, event: Heatmap.CursorMoved) -> None:
        if getattr(self, "steps", None):
            self._update_details(event.unit)

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._highlight_channel(event.row)

    def _highlight_channel(self, row) -> None:
        """While the channel table has focus, its current channel's cores are drawn as ◆."""
        if not hasattr(self, "heatmap"):
            return
        if row and self.channels is not None and self.channels.has_focus:
            self.heatmap.set_highlight(_parse_cores(row["src_cores"]) | _parse_cores(row["dst_cores"]))
        else:
            self.heatmap.set_highlight(())

    def on_descendant_focus(self, event) -> None:
        if self.channels is not None:
            self._highlight_channel(self.channels.row() if self.channels.has_focus else None)
        # The details line reads whichever pane has the focus: a chip's columns, else the heatmap.
        if getattr(self, "steps", None):
            if self.chips.has_focus:
                self._chip_details(self.chips.cursor)
            elif event.widget is self.heatmap:
                self._update_details(self.heatmap.current)
