"""Step-time graph: one stacked column per step (XProf's step-time breakdown), a y-axis in ms, a
legend and a line that reads the step under the cursor. Shared by the overview and input pipeline
screens."""
from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from tputui import format as fmt
from tputui.widgets.charts import PALETTE, StackedColumns

# (step table column, legend label), bottom of the stack first.
BREAKDOWN = [
    ("device_compute_ms", "Device compute"),
    ("device_to_device_ms", "Device to device"),
    ("device_collectives_ms", "Collectives"),
    ("host_compute_ms", "Host compute"),
    ("kernel_launch_ms", "Kernel launch"),
    ("input_ms", "Input"),
    ("output_ms", "Output"),
    ("compile_ms", "Compilation"),
    ("other_ms", "All others"),
]
CHART_HEIGHT = 10  # StackedColumns: CHART_HEIGHT - 1 rows of bars + the step-label row


def step_card(row: dict, categories: Sequence[tuple[str, str]] = BREAKDOWN) -> Text:
    """`Step train 3: 23.20 ms  Input 21.18 (91.3%) · Host compute 0.92 · ...` (non-zero parts)."""
    total = row["step_time_ms"] or 0.0
    t = Text()
    t.append(f"Step {row['name']}", style="bold")
    t.append(f": {fmt.duration_ms(total)}  ")
    parts = sorted(((row[c], label, k) for k, (c, label) in enumerate(categories) if row.get(c)),
                   reverse=True)
    for i, (v, label, k) in enumerate(parts):
        if i:
            t.append(" · ", style="dim")
        t.append("■ ", style=PALETTE[k % len(PALETTE)])
        t.append(f"{label} {fmt.number(v)}")
        if total:
            t.append(f" ({fmt.share_percent(v, total)})", style="dim")
    return t


def axis_number(v: float) -> str:
    """Three significant digits without exponent noise: 25.9, 2.87, 0.0172, 1,234."""
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if v >= 0.001 else f"{v:.1e}"


def y_axis(top: float, height: int = CHART_HEIGHT, unit: str = "ms") -> Text:
    """Labels for the chart's left edge: `top` on the first bar row, half way, 0 on the last bar row
    (StackedColumns scales every column to the tallest step, so its top row is `top`)."""
    rows = height - 1
    labels = {0: f"{axis_number(top)} {unit}", rows // 2: axis_number(top * (rows - rows // 2) / rows),
              rows - 1: "0"}
    width = max(len(s) for s in labels.values())
    lines = [(labels[r].rjust(width) + " ┤") if r in labels else " " * width + " │" for r in range(rows)]
    return Text("\n".join(lines + [""]), style="dim")


class StepChart(Vertical):
    """Stacked step columns with a y-axis, legend and the cursor step's breakdown; ←/→ Home/End."""

    DEFAULT_CSS = f"""
    StepChart {{ height: auto; border: round $foreground 55%; }}
    StepChart .plot {{ height: {CHART_HEIGHT}; }}
    StepChart .axis {{ width: auto; height: {CHART_HEIGHT}; }}
    StepChart StackedColumns {{ height: {CHART_HEIGHT}; width: 1fr; }}
    StepChart StackedColumns:focus {{ background: $boost; }}
    StepChart .legend {{ height: auto; color: $text-muted; }}
    StepChart .card {{ height: auto; }}
    """

    def __init__(self, steps: pl.DataFrame, *, title: str = "Step-time graph (ms)",
                 categories: Sequence[tuple[str, str]] = BREAKDOWN, autofocus: bool = False,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.autofocus = autofocus
        self.steps = steps
        # Only the categories some step has (XProf's graph stacks all nine, mostly zero).
        self.categories = [(c, label) for c, label in categories
                           if c in steps.columns and (steps[c] > 0).any()] or [(categories[-1])]
        self.border_title = f"{title}: {len(steps)} steps · ←/→ step · Home/End"
        self.values = [[r[c] or 0.0 for c, _ in self.categories] for r in self.steps.iter_rows(named=True)]
        self.top = max((sum(v) for v in self.values), default=0.0)
        self._shown = -1

    def compose(self) -> ComposeResult:
        labels = [str(n) for n in self.steps["name"].to_list()]
        chart = StackedColumns(self.values, [label for _, label in self.categories], labels)
        with Horizontal(classes="plot"):
            yield Static(y_axis(self.top), classes="axis")
            yield chart
        yield Static(chart.legend(), classes="legend")
        yield Static("", classes="card")

    @property
    def chart(self) -> StackedColumns:
        return self.query_one(StackedColumns)

    def on_mount(self) -> None:
        if not self.query(StackedColumns):  # the app closed while this mounted: nothing to draw into
            return
        self._show(0)
        if self.autofocus:
            self.chart.focus(scroll_visible=False)

    def on_stacked_columns_cursor_moved(self, event: StackedColumns.CursorMoved) -> None:
        moved = event.index != self._shown
        self._show(event.index)
        # The page may have scrolled the graph away (small terminals): bring it back when the
        # user moves its cursor, not when it first draws.
        if moved and self.chart.has_focus:
            self.scroll_visible()

    def _show(self, index: int) -> None:
        if 0 <= index < len(self.steps):
            self._shown = index
            self.query_one(".card", Static).update(step_card(self.steps.row(index, named=True), self.categories))
