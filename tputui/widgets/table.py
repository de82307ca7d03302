"""FrameTable: a virtual, Polars-backed table that stays fast at 100k+ rows.

Only the visible rows are sliced out of the DataFrame and formatted (Line API), so first
paint, scrolling, sorting and filtering cost O(visible rows) + one Polars sort/filter.

Keys: arrows / PgUp / PgDn / Home / End move the cursor; `<` `>` pick a column; `s` sorts
by it (again: reverse); `/` filters rows by a substring of any text column; Esc clears; `c`
chooses the columns shown. A `key` column (the name) stays on screen when scrolling sideways.
Posts `FrameTable.RowHighlighted` and `FrameTable.RowSelected` (Enter) with the row as a dict.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.geometry import Size
from textual.markup import escape
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from tputui.widgets.type_ahead import text_is_typed

Formatter = Callable[[Any], str]
_DRAWN_TITLE = Widget.__dict__["border_title"]  # Textual's descriptor for the title drawn in the border
MAX_COL_WIDTH = 60
KEY_COL_WIDTH = 40  # the frozen name column: long names end in "…", the numbers keep the room
SAMPLE_ROWS = 200


def default_format(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if value != value:  # NaN
            return ""
        return f"{value:,.3f}" if abs(value) < 1e15 else f"{value:.3e}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


class FrameTable(ScrollView, can_focus=True):
    """A sortable, filterable view of a Polars DataFrame (rows drawn on demand)."""

    DEFAULT_CSS = """
    FrameTable { height: 1fr; }
    FrameTable > .frametable--header { text-style: bold; background: $panel; }
    FrameTable > .frametable--cursor { background: $accent 40%; text-style: bold; }
    FrameTable > .frametable--sorted { text-style: bold underline; }
    """
    COMPONENT_CLASSES = {"frametable--header", "frametable--cursor", "frametable--sorted"}
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("less_than_sign,left", "column(-1)", "Prev column", show=False,
                tooltip="previous column (the one s sorts by)"),
        Binding("greater_than_sign,right", "column(1)", "Next column", show=False,
                tooltip="next column (the one s sorts by)"),
        Binding("s", "sort", "Sort", id="table.sort",
                tooltip="sort by the highlighted column (numbers biggest first; again: reverse)"),
        Binding("slash", "filter", "Filter", id="table.filter", priority=True,  # type_ahead.py
                tooltip="filter rows by a substring of any text column (Enter keeps it, Esc clears)"),
        Binding("c", "choose_columns", "Columns", show=False, id="table.columns",
                tooltip="choose the columns shown (rarely needed ones start hidden; CSV keeps them all)"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("enter", "select", "Select", show=False, tooltip="open the highlighted row (where the screen has more)"),
    ]

    cursor_row: reactive[int] = reactive(0)
    cursor_col: reactive[int] = reactive(0)

    class RowHighlighted(Message):
        def __init__(self, table: FrameTable, row: dict[str, Any] | None) -> None:
            super().__init__()
            self.table, self.row = table, row

        @property
        def control(self) -> FrameTable:
            return self.table

    class RowSelected(RowHighlighted):
        pass

    def __init__(self, frame: pl.DataFrame | None = None, *, formats: dict[str, Formatter] | None = None,
                 hidden: tuple[str, ...] = (), sort: tuple[str, bool] | None = None,
                 key: str | None = None, lead: tuple[str, ...] = (),
                 name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.formats = dict(formats or {})
        self.hidden = set(hidden)
        # Numbers first: `key` (the name column) is drawn first and stays put when scrolling
        # sideways; `lead` columns (the metrics) follow it; the rest keep the frame's order.
        self.key, self.lead = key, tuple(lead)
        self._source = pl.DataFrame()
        self._view = pl.DataFrame()
        self._columns: list[str] = []
        self._widths: list[int] = []
        self.sort_by: tuple[str, bool] | None = sort
        self.filter_text = ""
        self._title_base: str | None = None
        if frame is not None:
            self.set_frame(frame)

    # --- data --------------------------------------------------------------------------
    def set_frame(self, frame: pl.DataFrame, keep_cursor: bool = False) -> None:
        self._source = frame
        self._columns = self._display_order(frame.columns)
        self._widths = self._measure(frame)
        self._refresh_view(keep_cursor)

    def _display_order(self, columns: list[str]) -> list[str]:
        first = [c for c in (self.key, *self.lead) if c and c in columns]
        return [c for c in first + [c for c in columns if c not in first] if c not in self.hidden]

    @property
    def frozen_width(self) -> int:
        """Cells of the key column (and its gap) that stay on screen when scrolling sideways."""
        if self.key and self._columns and self._columns[0] == self.key:
            return self._widths[0] + 1
        return 0

    def set_hidden(self, hidden: set[str]) -> None:
        """Show only the columns not in `hidden` (the column chooser; export keeps them all)."""
        current = self._columns[self.cursor_col] if self._columns else None
        self.hidden = set(hidden)
        self.set_frame(self._source, keep_cursor=True)
        self.cursor_col = self._columns.index(current) if current in self._columns else 0

    @property
    def all_columns(self) -> list[str]:
        """Every column the chooser offers, in display order (hidden ones too)."""
        return [c for c in self._display_order(self._source.columns) + sorted(self.hidden) if c in self._source.columns]

    @property
    def frame(self) -> pl.DataFrame:
        """The rows as shown: filtered and sorted."""
        return self._view

    @property
    def row_count(self) -> int:
        return self._view.height

    def _measure(self, frame: pl.DataFrame) -> list[int]:
        sample = frame.head(SAMPLE_ROWS)
        if frame.height > SAMPLE_ROWS:  # the widest values are often at the end too
            sample = pl.concat([sample, frame.tail(SAMPLE_ROWS // 4)])
        widths = []
        for c in self._columns:
            fmt = self.formats.get(c, default_format)
            cells = [fmt(v) for v in sample[c].to_list()]
            w = max([len(c) + 2] + [len(x) for x in cells])
            widths.append(min(w, KEY_COL_WIDTH if c == self.key else MAX_COL_WIDTH))
        return widths

    def _refresh_view(self, keep_cursor: bool = False) -> None:
        view = self._source
        if self.filter_text:
            needle = self.filter_text.lower()
            text_cols = [c for c, t in view.schema.items()
                         if t in (pl.String, pl.Categorical) or isinstance(t, pl.Enum)]
            if text_cols:
                view = view.filter(pl.any_horizontal(
                    pl.col(c).cast(pl.String).str.to_lowercase().str.contains(needle, literal=True)
                    for c in text_cols))
            else:
                view = view.clear()
        if self.sort_by and self.sort_by[0] in view.columns:
            col, desc = self.sort_by
            view = view.sort(col, descending=desc, nulls_last=True, maintain_order=True)
        self._view = view
        # Header + rows (+ the filter line at the bottom while a filter is on).
        self.virtual_size = Size(sum(self._widths) + len(self._widths), view.height + 1 + bool(self.filter_text))
        if not keep_cursor:
            self.cursor_row = 0
        self.cursor_row = max(0, min(self.cursor_row, view.height - 1))
        self._title_filter()
        self.refresh()
        self._post_highlight()

    # The screen's title (border_title) is kept apart from the one drawn: while a filter is on,
    # the drawn title leads with it and its counts ("/matmul 7 of 29 · Ops"), as k9s does.
    @property
    def border_title(self) -> str | None:
        return getattr(self, "_title_base", None)

    @border_title.setter
    def border_title(self, title: str | None) -> None:
        self._title_base = title
        self._title_filter()

    def _title_filter(self) -> None:
        title = self._title_base
        if getattr(self, "filter_text", "") and hasattr(self, "_view"):  # (Widget.__init__ sets a title early)
            shown = f"/{escape(self.filter_text)} {self._view.height:,} of {self._source.height:,}"
            title = f"{shown} · {title}" if title else shown
        _DRAWN_TITLE.__set__(self, title)

    def row(self, index: int | None = None) -> dict[str, Any] | None:
        i = self.cursor_row if index is None else index
        if not 0 <= i < self._view.height:
            return None
        return self._view.row(i, named=True)

    def sort(self, column: str, descending: bool = False) -> None:
        self.sort_by = (column, descending)
        self._refresh_view()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._refresh_view()

    # --- drawing -----------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if self.filter_text and y == self.size.height - 1:
            return self._filter_strip(width)
        if y == 0:
            strip = self._header_strip()
        else:
            index = scroll_y + y - 1
            if index >= self._view.height:
                if index == 0 and self.filter_text:
                    return Strip([Segment(f" no row matches {self.filter_text!r}".ljust(width)[:width],
                                          self.rich_style + Style(dim=True))])
                return Strip.blank(width, self.rich_style)
            strip = self._row_strip(index)
        frozen = min(self.frozen_width, width)
        if frozen:  # the key column stays; the rest scrolls under it
            strip = Strip.join([strip.crop(0, frozen), strip.crop(frozen + scroll_x, scroll_x + width)])
        else:
            strip = strip.crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, self.rich_style)

    def _filter_strip(self, width: int) -> Strip:
        """While a filter is on, the last line says so (it hides rows even with the bar closed)."""
        text = (f" filter {self.filter_text!r}: {self._view.height:,} of {self._source.height:,} rows"
                "  · / edit · Esc clear")
        return Strip([Segment(text[:width].ljust(width), self.get_component_rich_style("frametable--header"))])

    def _header_strip(self) -> Strip:
        base = self.get_component_rich_style("frametable--header")
        sorted_style = base + self.get_component_rich_style("frametable--sorted")
        segs = []
        for i, (c, w) in enumerate(zip(self._columns, self._widths)):
            mark = ""
            if self.sort_by and self.sort_by[0] == c:
                mark = " ▼" if self.sort_by[1] else " ▲"
            label = (c + mark)[:w].ljust(w)
            style = sorted_style if i == self.cursor_col else base
            segs.append(Segment(label, style))
            segs.append(Segment(" ", base))
        return Strip(segs)

    def _row_strip(self, index: int) -> Strip:
        row = self._view.row(index)
        style = self.rich_style
        if index == self.cursor_row:
            style = style + self.get_component_rich_style("frametable--cursor")
        segs = []
        names = self._view.columns
        for c, w in zip(self._columns, self._widths):
            v = row[names.index(c)]
            text = self.formats.get(c, default_format)(v)
            if len(text) > w:
                text = text[: w - 1] + "…"
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            segs.append(Segment(text.rjust(w) if numeric else text.ljust(w), style))
            segs.append(Segment(" ", style))
        return Strip(segs)

    # --- keys --------------------------------------------------------------------------
    def watch_cursor_row(self, old: int, new: int) -> None:
        visible = max(1, self.size.height - 1 - bool(self.filter_text))
        top = self.scroll_offset.y
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False)
        self.refresh()
        self._post_highlight()

    def watch_cursor_col(self) -> None:
        frozen = self.frozen_width
        if frozen and self.cursor_col == 0:
            self.refresh()
            return
        left = sum(self._widths[: self.cursor_col]) + self.cursor_col - frozen
        right = left + (self._widths[self.cursor_col] if self._widths else 0)
        room = self.size.width - frozen
        if left < self.scroll_offset.x:
            self.scroll_to(x=left, animate=False)
        elif right > self.scroll_offset.x + room:
            self.scroll_to(x=right - room, animate=False)
        self.refresh()

    def _post_highlight(self) -> None:
        self.post_message(self.RowHighlighted(self, self.row()))

    def action_cursor(self, delta: int) -> None:
        if self._view.height:
            self.cursor_row = max(0, min(self._view.height - 1, self.cursor_row + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        if self._view.height:
            self.cursor_row = 0 if where == 0 else self._view.height - 1

    def action_column(self, delta: int) -> None:
        if self._columns:
            self.cursor_col = (self.cursor_col + delta) % len(self._columns)

    def action_sort(self) -> None:
        if not self._columns:
            return
        col = self._columns[self.cursor_col]
        numeric = self._source.schema[col].is_numeric()
        if self.sort_by and self.sort_by[0] == col:
            desc = not self.sort_by[1]
        else:
            desc = numeric  # biggest first is what one wants for times and counts
        self.sort(col, desc)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "filter":  # a priority key: while text is typed, `/` is text
            return not text_is_typed(self.screen)
        return True

    def action_filter(self) -> None:
        from tputui.widgets.filter_bar import FilterBar

        bars = self.screen.query(FilterBar)
        bar = bars.first() if bars else None
        if bar is None:
            bar = FilterBar(self)
            self.screen.mount(bar)
        bar.open(self)

    def action_choose_columns(self) -> None:
        from tputui.widgets.column_chooser import ColumnChooser

        def chosen(hidden: set[str] | None) -> None:
            if hidden is not None:
                self.set_hidden(hidden)

        self.app.push_screen(ColumnChooser(self.all_columns, self.hidden, self.key), chosen)

    def action_clear_filter(self) -> None:
        if not self.filter_text:
            raise SkipAction()  # nothing to clear: Esc goes on to the app (back)
        self.set_filter("")

    def action_select(self) -> None:
        self.post_message(self.RowSelected(self, self.row()))

    def column_at(self, x: int) -> int | None:
        """The column under screen cell `x` (the frozen key column stays at the left)."""
        frozen = self.frozen_width
        content_x = x if frozen and x < frozen else x + self.scroll_offset.x
        left = 0
        for i, w in enumerate(self._widths):
            if left <= content_x < left + w + 1:
                return i
            left += w + 1
        return None

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)  # inside the border, if any
        if offset is None:
            return
        if offset.y == 0:  # a header: sort by that column (again: reverse), as `s` does
            col = self.column_at(offset.x)
            if col is not None:
                self.cursor_col = col
                self.action_sort()
            return
        index = self.scroll_offset.y + offset.y - 1
        if 0 <= index < self._view.height:
            self.cursor_row = index


def fit_table_height(table: FrameTable, max_height: int, _tries: int = 5) -> None:
    """As tall as its rows (+ header + border, + the horizontal scrollbar when the columns are
    wider than the table), at most `max_height`: no blank rows under a short table."""
    if not table.scrollable_content_region.width and _tries:  # not laid out yet: fit once it is
        table.call_after_refresh(fit_table_height, table, max_height, _tries - 1)
        return
    wide = table.virtual_size.width > table.scrollable_content_region.width
    table.styles.height = min(max_height, table.row_count + 3 + int(wide))
