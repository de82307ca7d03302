"""Pod viewer: step picker, topology heatmap (hosts -> chips -> cores) coloured by a step-breakdown
category, the per-chip breakdown as stacked columns, and the send/recv channel table.

Keys: `[` / `]` (or left / right on the step bar) pick the step, `c` cycles the category, arrows
move over the heatmap, tab moves between panes; selecting a channel highlights its cores."""
from __future__ import annotations

import polars as pl
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Static

from tputui.analysis.pod_viewer import CATEGORY_KEYS, CATEGORY_NAMES, PodViewerResult
from tputui.screens.base import ToolScreen
from tputui.widgets.charts import StackedColumns
from tputui.widgets.heatmap import Cell, Heatmap
from tputui.widgets.table import FrameTable


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
        Binding("c", "category(1)", "Category", id="pod.category"),
    ]
    DEFAULT_CSS = """
    PodViewerScreen StepBar { height: 1; padding: 0 1; }
    PodViewerScreen StepBar:focus { background: $accent 30%; }
    PodViewerScreen Heatmap { padding: 0 1; }
    PodViewerScreen Heatmap:focus { background: $boost; }
    PodViewerScreen .line { height: 1; padding: 0 1; }
    PodViewerScreen #details { height: 1; padding: 0 1; color: $text; }
    PodViewerScreen StackedColumns { height: 8; padding: 0 1; }
    PodViewerScreen #channels { height: 1fr; min-height: 4; border: round $panel; }
    """
    step_index: reactive[int] = reactive(0, init=False)
    category: reactive[int] = reactive(0, init=False)

    def show(self, result: PodViewerResult) -> None:
        self.pod = result
        self.steps = result.step_numbers
        if not self.steps:
            warn = " ".join(result.diagnostics.get("warnings", [])) or "No steps."
            self.body.mount(Static(f"{result.device_type}: {warn}", classes="error", markup=False))
            return
        self.body.mount(StepBar("", id="stepbar"))
        self.heatmap = Heatmap(id="heatmap")
        self.body.mount(self.heatmap)
        self.body.mount(Static("", id="legend", classes="line"))
        self.body.mount(Static("", id="details"))
        self.chips = StackedColumns(id="chips")
        self.body.mount(self.chips)
        self.body.mount(Static("", id="chip_legend", classes="line"))
        self.channels = FrameTable(result.channels, id="channels", formats={
            "data_mib": lambda v: f"{v:.2f}", "latency_us": lambda v: f"{v:.2f}",
            "bandwidth_gibps": lambda v: f"{v:.2f}", "send_delay_us": lambda v: f"{v:.2f}"})
        self.channels.border_title = (f"Send/recv channels ({len(result.channels)}) · s sort · / filter"
                                      if len(result.channels) else "No send/recv channels")
        self.body.mount(self.channels)
        self._redraw()
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
        bar.append(f"   {len(df)} cores · {self.pod.device_type}   [ ] step · c category", style="dim")
        self.query_one("#stepbar", StepBar).update(bar)
        self.query_one("#legend", Static).update(self.heatmap.legend())
        # Stacked columns: per chip (x = global chip id), the mean over its cores, in ms.
        per_chip = (df.group_by("chip", maintain_order=True)
                    .agg([pl.col(f"{k}_us").mean() / 1000 for k in CATEGORY_KEYS]).sort("chip"))
        used = [k for k in CATEGORY_KEYS if per_chip[f"{k}_us"].sum() > 0]
        self.chips.set_data([[r[f"{k}_us"] for k in used] for r in per_chip.iter_rows(named=True)],
                            [CATEGORY_NAMES[k] for k in used], [str(c) for c in per_chip["chip"].to_list()])
        legend = self.chips.legend()
        legend.append("  (per chip, x = global chip id, ms)", style="dim")
        self.query_one("#chip_legend", Static).update(legend)
        self._update_details(self.heatmap.current)

    def _update_details(self, unit) -> None:
        if unit is None:
            return
        df = self.step_frame().filter(pl.col("core").is_in(list(unit.cores)))
        key = self.category_key
        val = df[f"{key}_us"].mean() / 1000 if len(df) else 0.0
        total = df["total_us"].mean() / 1000 if len(df) else 0.0
        pct = 100 * val / total if total else 0.0
        t = Text()
        if self.heatmap.level == "core":
            r = df.row(0, named=True)
            t.append(f"core {r['core']}", style="bold")
            t.append(f" · chip {r['chip']} (core {r['core_on_chip']} on chip) · host {r['host']}")
        else:
            t.append(unit.label if self.heatmap.level == "chip" else f"host {unit.host}", style="bold")
            t.append(f" · {len(unit.cores)} cores (mean)" + (f" · host {unit.host}" if self.heatmap.level == "chip" else ""))
        t.append(f" · {CATEGORY_NAMES[key]} {val:.3f} ms ({pct:.1f}% of {total:.3f} ms step)")
        self.query_one("#details", Static).update(t)

    # --- events -------------------------------------------------------------------------------
    def on_heatmap_cursor_moved(self, event: Heatmap.CursorMoved) -> None:
        if getattr(self, "steps", None):
            self._update_details(event.unit)

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._highlight_channel(event.row)

    def _highlight_channel(self, row) -> None:
        """While the channel table has focus, its current channel's cores are drawn as ◆."""
        if not hasattr(self, "heatmap"):
            return
        if row and self.channels.has_focus:
            self.heatmap.set_highlight(_parse_cores(row["src_cores"]) | _parse_cores(row["dst_cores"]))
        else:
            self.heatmap.set_highlight(())

    def on_descendant_focus(self, event) -> None:
        if hasattr(self, "channels"):
            self._highlight_channel(self.channels.row() if self.channels.has_focus else None)
