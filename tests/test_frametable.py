"""FrameTable shows numbers first: the name column leads and stays put when scrolling sideways,
the metric columns follow, rarely needed ones sit behind the column chooser, times read in
human units while CSV keeps the full-precision µs (checked on tf_loop's framework op stats)."""
from __future__ import annotations

import polars as pl
from conftest import PROFILES, settle

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.format import human_us as fmt_time_us
from tputui.widgets.column_chooser import ColumnChooser
from tputui.widgets.table import FrameTable


def line(table: FrameTable, y: int) -> str:
    return table.render_line(y).text


def test_times_in_human_units():
    assert [fmt_time_us(v) for v in (77.8e6, 1_264_298.27, 1234.5, 412.0, 41.25, 0.035, 0, None)] == [
        "77.8 s", "1.26 s", "1.23 ms", "412 us", "41.2 us", "35.0 ns", "0", ""]


async def test_numbers_first_and_the_name_column_stays_when_scrolling():
    app = TputuiApp(open_logdir(str(PROFILES / "tf_loop")), tool="framework_op_stats")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#ops", FrameTable)
        header = line(table, 0)
        assert header.startswith("operation") and "total_self_time" in header and "rank" not in header
        first = table.row(0)
        assert line(table, 1).startswith(first["operation"])
        assert fmt_time_us(first["total_self_time"]) in line(table, 1)  # a number on screen at 120 columns
        for _ in range(12):  # far to the right: the name column is still the first thing on each line
            await pilot.press("right")
        await pilot.pause()
        assert table.scroll_offset.x > 0
        assert line(table, 0).startswith("operation") and line(table, 1).startswith(first["operation"])
        assert "total_self_time" not in line(table, 0).split()  # scrolled past


async def test_column_chooser_brings_back_a_hidden_column_and_csv_keeps_all():
    app = TputuiApp(open_logdir(str(PROFILES / "tf_loop")), tool="framework_op_stats")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#ops", FrameTable)
        assert "rank" in screen.export_frame().columns  # hidden on screen, still exported
        exported = screen.export_frame()
        assert exported["total_self_time_us"].dtype == pl.Float64  # full precision, not the shown text
        await pilot.press("c")
        assert isinstance(app.screen, ColumnChooser)
        chooser = app.screen
        options = [chooser.query_one("SelectionList").get_option_at_index(i).value
                   for i in range(chooser.query_one("SelectionList").option_count)]
        assert "operation" not in options and options[-1] == "rank"  # the name always shows
        await pilot.press("end", "space", "enter")
        await pilot.pause()
        assert app.screen is screen and "rank" in table._columns
        assert table._columns.index("rank") == 1 + len(table.lead)  # after the name and the metrics
        await pilot.press("c", "home", "space", "enter")  # hide the first metric
        await pilot.pause()
        assert "total_self_time" not in line(table, 0).split() and "total_self_time" not in table._columns
