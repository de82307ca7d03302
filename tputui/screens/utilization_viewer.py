"""Utilization viewer: per-unit utilization of TPU v6e / v7x chips from their hardware counters.

A table of every (chip, sample, unit) row with achieved, peak and their ratio, and for the
highlighted row's sample a bar per unit: the percentage first, then the bar (full at 100%, a `>`
where the achieved figure passes the peak). `s` sort, `/` filter, `x` CSV."""
from __future__ import annotations

import polars as pl
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tputui import format as fmt
from tputui.analysis.utilization_viewer import UtilizationResult
from tputui.screens.base import ToolScreen
from tputui.screens.op_tables import CSV_TIP, CsvExportMixin, ResultKeysMixin
from tputui.widgets.charts import PALETTE, bar_text
from tputui.widgets.table import FrameTable

BAR_WIDTH = 30


def _amount(v: float | None) -> str:
    """Counts and bytes with an SI prefix (1.347 G): the table stays narrow; CSV has every digit."""
    if v is None:
        return ""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3f} {prefix}"
    return fmt.count(v) if float(v).is_integer() else fmt.number(v, 1)


class UtilizationViewerScreen(ResultKeysMixin, CsvExportMixin[UtilizationResult], ToolScreen[UtilizationResult]):
    help_notes = ("Utilization of each unit of a TPU v6e / v7x chip from its hardware counters (XProf's utilization "
                  "viewer): achieved against peak per sample. The `_counters_` sample is the whole program, other "
                  "samples are kernels; node is the tensor core or SparseCore. Bars show the highlighted row's "
                  "sample, 100% at the right end.")
    BINDINGS = [Binding("x", "export_csv", "CSV", id="utilization_viewer.csv", tooltip=CSV_TIP)]
    RESULT_ACTIONS = frozenset({"export_csv"})
    DEFAULT_CSS = """
    UtilizationViewerScreen FrameTable { height: 1fr; border: round $foreground 55%; }
    UtilizationViewerScreen #uv-scroll { height: auto; max-height: 40%; padding: 0 1; }
    UtilizationViewerScreen #uv-bars { height: auto; }
    """

    def show(self, result: UtilizationResult) -> None:
        frame = result.with_percent()
        lead = ["host_name"] if frame["host"].n_unique() > 1 else []
        frame = frame.select(*lead, "device", "sample", "node", "name", "percent", "achieved", "peak", "unit",
                             "kernel", "host", "device_type")
        self.table = FrameTable(frame, id="uv-table", hidden=("host", "device_type"), formats={
            "percent": fmt.percent, "achieved": _amount, "peak": _amount})
        chips = frame.select("host", "device").n_unique()
        samples = frame.select("host", "device", "sample").n_unique()
        kinds = ", ".join(frame["device_type"].unique(maintain_order=True).to_list())
        self.table.border_title = (f"Utilization ({frame.height:,} rows · {chips} chip{'s' * (chips != 1)} {kinds} · "
                                   f"{samples} samples) · s sort · / filter · x CSV")
        self.body.mount(self.table)
        self.bars = Static(id="uv-bars")
        self.body.mount(VerticalScroll(self.bars, id="uv-scroll"))
        self.table.focus()
        self._bars(self.table.row())
        self.refresh_bindings()

    def on_frame_table_row_highlighted(self, event: FrameTable.RowHighlighted) -> None:
        self._bars(event.row)

    def _bars(self, row) -> None:
        if row is None:
            return
        r = self.loaded
        units = r.sample_units(row["host"], row["device"], row["sample"])
        self.bar_sample, self.bar_units = (row["host"], row["device"], row["sample"]), units
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, max_width=34)
        grid.add_column(justify="right", no_wrap=True)
        grid.add_column(no_wrap=True)
        for node, name, pct, *_ in units.iter_rows():
            over = pct is not None and pct > 100
            bar = bar_text((pct or 0.0) / 100, BAR_WIDTH, PALETTE[node % len(PALETTE)])
            this = (node, name) == (row["node"], row["name"])
            grid.add_row(Text(f"{node} {name}", overflow="ellipsis", style="bold" if this else ""),
                         fmt.percent(pct, missing="n/a"), bar + Text(">" if over else ""))
        title = Text(f"chip {row['device']} · sample {row['sample']} ({row['kernel']}): achieved / peak per unit "
                     "(node, name)", style="bold")
        outer = Table.grid()
        outer.add_row(title)
        outer.add_row(grid)
        self.bars.update(outer)
        # Keep the highlighted unit's bar in view (the title is the first line).
        at = units.with_row_index().filter((pl.col("node") == row["node"]) & (pl.col("name") == row["name"]))
        if at.height:
            self.query_one("#uv-scroll", VerticalScroll).scroll_to(y=max(0, at["index"][0] - 2), animate=False)

    def export_frame(self):
        return self.table.frame if self.result is not None else None
