"""Terminal charts: horizontal bars, stacked columns with a cursor, and a sparkline string.

Pie charts in XProf become horizontal bars here; step-time graphs become stacked columns.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

# Colours that read on dark and light terminals, in legend order.
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac"]
EIGHTHS = " ▁▂▃▄▅▆▇█"
HORIZONTAL_EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar_text(fraction: float, width: int, color: str = PALETTE[0]) -> Text:
    """A horizontal bar of `width` cells filled to `fraction` (eighth-cell resolution)."""
    fraction = max(0.0, min(1.0, fraction))
    cells = fraction * width
    full = int(cells)
    part = HORIZONTAL_EIGHTHS[int((cells - full) * 8)] if full < width else ""
    return Text("█" * full + part.strip(), style=color) + Text(" " * (width - full - len(part.strip())))


def sparkline(values: Sequence[float], width: int | None = None, lo: float | None = None,
              hi: float | None = None) -> str:
    """Unicode block sparkline of the last `width` values (min..max scaled, or a fixed lo..hi)."""
    vals = [v for v in values if v is not None][-width:] if width else [v for v in values if v is not None]
    if not vals:
        return ""
    lo = min(vals) if lo is None else lo
    hi = max(vals) if hi is None else hi
    span = hi - lo or 1.0
    return "".join(EIGHTHS[1 + int(max(0.0, min(1.0, (v - lo) / span)) * 7)] for v in vals)


class HBarChart(Static):
    """Labelled horizontal bars: [(label, value)], with a value column."""

    DEFAULT_CSS = "HBarChart { height: auto; }"

    def __init__(self, items: Sequence[tuple[str, float]] = (), *, title: str = "", unit: str = "",
                 bar_width: int = 30, label_width: int = 40, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items, self.title, self.unit = list(items), title, unit
        self.bar_width, self.label_width = bar_width, label_width

    def set_items(self, items: Sequence[tuple[str, float]]) -> None:
        self.items = list(items)
        self.update(self.render_chart())

    def on_mount(self) -> None:
        self.update(self.render_chart())

    def on_resize(self) -> None:
        self.update(self.render_chart())  # the widths follow the room

    def render_chart(self) -> RenderableType:
        t = Table.grid(padding=(0, 1))
        values = [f"{value:,.2f}{self.unit}" for _, value in self.items]
        value_w = max(map(len, values), default=0)
        label_w = min(self.label_width, max((len(label) for label, _ in self.items), default=0))
        bar_w = self.bar_width
        room = self.content_size.width
        if room and label_w + bar_w + value_w + 2 > room:  # narrow: the label gives way, then the bar
            spare = room - value_w - 2
            bar_w = max(min(bar_w, spare // 3), 1)
            label_w = max(spare - bar_w, 1)
        t.add_column(no_wrap=True, width=label_w)
        t.add_column(no_wrap=True, width=bar_w)
        t.add_column(justify="right", no_wrap=True, min_width=value_w)  # a number is never cut
        top = max((v for _, v in self.items), default=0) or 1.0
        for i, ((label, value), shown) in enumerate(zip(self.items, values)):
            t.add_row(Text(label, overflow="ellipsis"), bar_text(value / top, bar_w, PALETTE[i % len(PALETTE)]),
                      shown)
        if not self.items:
            t.add_row(Text("(no data)", style="dim"), "", "")
        if self.title:
            outer = Table.grid()
            outer.add_row(Text(self.title, style="bold"))
            outer.add_row(t)
            return outer
        return t


MAX_COLUMN_CELLS = 8


def _stack_cell(levels: list[tuple[float, int]], cell_lo: float) -> tuple[str, int | None]:
    """Character and category of the terminal cell whose bottom is `cell_lo` eighths up.

    A cell the stack fills shows the category at its middle as a full block; the cell where the
    stack ends shows a partial block of its height (so a short step is a short bar, not a full
    cell), in the colour of the topmost category.
    """
    if not levels or levels[-1][0] <= cell_lo:
        return " ", None
    height = levels[-1][0] - cell_lo
    if height < 8:
        return EIGHTHS[max(1, min(8, round(height)))], levels[-1][1]
    middle = cell_lo + 4
    return "█", next(k for lvl, k in levels if lvl > middle)


class StackedColumns(Widget, can_focus=True):
    """One column per x (e.g. a step), stacked by category, with a keyboard cursor.

    values[i][k] is category k's amount at column i. Left/Right move the cursor and post
    `StackedColumns.CursorMoved(index)`.
    """

    DEFAULT_CSS = "StackedColumns { height: 14; }"
    BINDINGS = [Binding("left", "move(-1)", "Prev", show=False), Binding("right", "move(1)", "Next", show=False),
                Binding("home", "home", show=False), Binding("end", "end", show=False)]
    cursor: reactive[int] = reactive(0)

    class CursorMoved(Message):
        def __init__(self, chart: StackedColumns, index: int) -> None:
            super().__init__()
            self.chart, self.index = chart, index

    def __init__(self, values: Sequence[Sequence[float]] = (), categories: Sequence[str] = (),
                 labels: Sequence[str] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.values = [list(v) for v in values]
        self.categories = list(categories)
        self.labels = list(labels)

    def set_data(self, values, categories, labels) -> None:
        self.values, self.categories, self.labels = [list(v) for v in values], list(categories), list(labels)
        self.cursor = min(self.cursor, max(0, len(self.values) - 1))
        self.refresh()

    def action_move(self, delta: int) -> None:
        if self.values:
            self.cursor = max(0, min(len(self.values) - 1, self.cursor + delta))

    def action_home(self) -> None:
        self.cursor = 0

    def action_end(self) -> None:
        self.cursor = max(0, len(self.values) - 1)

    def watch_cursor(self, index: int) -> None:
        self.post_message(self.CursorMoved(self, index))
        self.refresh()

    def render(self) -> RenderableType:
        height = max(3, self.size.height - 1)
        width = max(1, self.size.width)
        n = len(self.values)
        if not n:
            return Text("(no data)", style="dim")
        # Wide enough to read, narrow enough to compare; a gap between columns once they are wide.
        col_w = max(1, min(MAX_COLUMN_CELLS, width // n))
        gap = 1 if col_w >= 4 else 0
        # Scroll the window of columns so the cursor stays visible.
        per_screen = max(1, width // col_w)
        first = max(0, min(self.cursor - per_screen // 2, n - per_screen))
        shown = range(first, min(n, first + per_screen))
        top = max((sum(v) for v in self.values), default=0) or 1.0
        rows = [Text() for _ in range(height)]
        for i in shown:
            levels = []  # (top of category k in eighths of a row, k), bottom up; empty ones skipped
            acc = 0.0
            for k, v in enumerate(self.values[i]):
                if v > 0:
                    acc += v
                    levels.append((acc / top * height * 8, k))
            for r in range(height):
                ch, cat = _stack_cell(levels, (height - 1 - r) * 8)
                style = PALETTE[cat % len(PALETTE)] if cat is not None else ""
                if i == self.cursor:
                    style = f"{style} on grey23" if style else "on grey23"
                rows[r].append(ch * (col_w - gap), style=style)
                rows[r].append(" " * gap)
        axis = Text(f"{self.labels[first] if self.labels else first}", style="dim")
        axis.append(" " * max(1, (len(shown) * col_w) - len(axis.plain) - 8))
        axis.append(f"{self.labels[shown[-1]] if self.labels else shown[-1]}", style="dim")
        return Text("\n").join(rows + [axis])

    def legend(self) -> Text:
        t = Text()
        for k, c in enumerate(self.categories):
            t.append("■ ", style=PALETTE[k % len(PALETTE)])
            t.append(f"{c}  ")
        return t


AREA_AXIS_WIDTH = 10  # y-axis label cells of AreaChart


def _plain_number(v: float) -> str:
    return f"{v:,.0f}"


class AreaChart(Widget, can_focus=True):
    """Stacked areas over x, an optional 0..1 line, a marked peak and a keyboard cursor.

    Each terminal column shows the point with the largest stacked total among the points that
    fall in it (the same max-box idea XProf uses to thin its timeline); empty columns repeat
    the column before. ←/→ move the cursor point by point and post `AreaChart.CursorMoved`.
    """

    DEFAULT_CSS = "AreaChart { height: 14; } AreaChart:focus { background: $boost; }"
    BINDINGS = [
        Binding("left", "move(-1)", "Prev", show=False), Binding("right", "move(1)", "Next", show=False),
        Binding("pageup", "page(-1)", "Page left", show=False), Binding("pagedown", "page(1)", "Page right", show=False),
        Binding("home", "jump(0)", show=False), Binding("end", "jump(-1)", show=False),
        Binding("p", "peak", "Peak", id="chart.peak"),
    ]
    cursor: reactive[int] = reactive(0)

    class CursorMoved(Message):
        def __init__(self, chart: AreaChart, index: int) -> None:
            super().__init__()
            self.chart, self.index = chart, index

        @property
        def control(self) -> AreaChart:
            return self.chart

    def __init__(self, x: Sequence[float], series: Sequence[tuple[str, Sequence[float], str]], *,
                 line: tuple[str, Sequence[float], str] | None = None, peak: int | None = None,
                 x_format: Callable[[float], str] = str, y_format: Callable[[float], str] = _plain_number,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_data(x, series, line=line, peak=peak, refresh=False)
        self.x_format, self.y_format = x_format, y_format

    def set_data(self, x, series, *, line=None, peak=None, refresh: bool = True) -> None:
        self.x = np.asarray(x, np.float64)
        self.series = [(name, np.asarray(v, np.float64), color) for name, v, color in series]
        self.line = None if line is None else (line[0], np.asarray(line[1], np.float64), line[2])
        self.peak = peak
        self.total = np.sum([v for _, v, _ in self.series], axis=0) if self.series else np.zeros(len(self.x))
        if refresh:
            self.cursor = min(self.cursor, max(0, len(self.x) - 1))
            self.refresh()

    # --- keys --------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        if len(self.x):
            self.cursor = int(max(0, min(len(self.x) - 1, self.cursor + delta)))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, len(self.x) // 10))

    def action_jump(self, where: int) -> None:
        if len(self.x):
            self.cursor = 0 if where == 0 else len(self.x) - 1

    def action_peak(self) -> None:
        if self.peak is not None:
            self.cursor = self.peak

    def watch_cursor(self, index: int) -> None:
        self.post_message(self.CursorMoved(self, index))
        self.refresh()

    # --- drawing -----------------------------------------------------------------------
    def _columns(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        """(point shown in each of `width` columns or -1 before the first, column of each point)."""
        n = len(self.x)
        lo, hi = (self.x[0], self.x[-1]) if n else (0.0, 0.0)
        col = np.zeros(n, np.int64) if hi <= lo else np.rint((self.x - lo) / (hi - lo) * (width - 1)).astype(np.int64)
        shown = np.full(width, -1, np.int64)
        starts = np.searchsorted(col, np.arange(width), "left")
        ends = np.searchsorted(col, np.arange(width), "right")
        prev = -1
        for c in range(width):
            a, b = starts[c], ends[c]
            if b > a:
                prev = a + int(np.argmax(self.total[a:b]))
            shown[c] = prev
        return shown, col

    def render(self) -> RenderableType:
        n = len(self.x)
        if not n:
            return Text("(no data)", style="dim")
        width = max(4, self.size.width - AREA_AXIS_WIDTH)
        height = max(3, self.size.height - 2)
        shown, col_of = self._columns(width)
        top = float(self.total.max()) or 1.0
        cursor_col = int(col_of[self.cursor]) if n else -1
        peak_col = int(col_of[self.peak]) if self.peak is not None and n else -1

        grid: list[list[tuple[str, str]]] = [[(" ", "")] * width for _ in range(height)]
        for c in range(width):
            p = shown[c]
            if p < 0:
                continue
            cum = np.cumsum([v[p] for _, v, _ in self.series]) / top * height * 8
            for r in range(height):  # r = 0 is the bottom row
                lo = r * 8
                if cum[-1] <= lo:
                    break
                mid = next((k for k, h in enumerate(cum) if h > lo + 4), len(cum) - 1)
                fill = cum[-1] - lo
                ch = "█" if fill >= 8 else EIGHTHS[max(1, int(fill))]
                grid[height - 1 - r][c] = (ch, self.series[mid][2])
            if self.line is not None:
                r = int(round(min(1.0, max(0.0, self.line[1][p])) * (height - 1)))
                grid[height - 1 - r][c] = ("•", f"bold {self.line[2]}")

        out = Text()
        marker = Text(" " * AREA_AXIS_WIDTH)
        if peak_col >= 0:
            label = f"▼ peak {self.y_format(self.total[self.peak])}"
            start = min(peak_col, max(0, width - len(label)))
            marker.append(" " * start)
            marker.append(label if start == peak_col else label[1:] + " ▼", style="bold")
        out.append_text(marker)
        out.append("\n")
        for i, row in enumerate(grid):
            axis = self.y_format(top) if i == 0 else ("0" if i == height - 1 else "")
            out.append(axis.rjust(AREA_AXIS_WIDTH - 1)[: AREA_AXIS_WIDTH - 1] + "│", style="dim")
            for c, (ch, style) in enumerate(row):
                if c == cursor_col:
                    style = f"{style} on grey30" if style else "on grey30"
                elif c == peak_col and ch == " ":
                    ch, style = "┊", "dim"
                out.append(ch, style=style)
            out.append("\n")
        left, right = self.x_format(self.x[0]), self.x_format(self.x[-1])
        out.append(" " * AREA_AXIS_WIDTH + left + " " * max(1, width - len(left) - len(right)) + right, style="dim")
        return out

    def legend(self) -> Text:
        t = Text()
        for name, _, color in self.series:
            t.append("■ ", style=color)
            t.append(f"{name}  ")
        if self.line is not None:
            t.append("• ", style=self.line[2])
            t.append(f"{self.line[0]}  ")
        return t
