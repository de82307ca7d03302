"""Wide tables keep their key: the name column stays on screen when scrolling sideways, and the
numbers that matter come first (megascale's sort column, the device share on device profiles)."""
from __future__ import annotations

from conftest import make_app, settle

from tputui.widgets.table import FrameTable


def header(table: FrameTable) -> str:
    return "".join(seg.text for seg in table.render_line(0))


async def test_megascale_shows_its_sort_column_and_keeps_the_name_when_scrolled():
    app = make_app("pod/dcn_2slices", "megascale_stats")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#rows", FrameTable)
        assert table._columns[:2] == ["name", "aggregated_total_stall_ms"]
        assert "aggregated_total_stall_ms"[:10] in header(table)  # on screen at 80 columns
        for _ in range(len(table._columns)):
            await pilot.press("right")
        await pilot.pause()
        assert table.scroll_offset.x > 0 and header(table).startswith("name")


async def test_framework_op_stats_puts_the_device_share_first_on_device_profiles():
    for profile, first in (("tpu_v6e_inference", "device"), ("tf_loop", "host")):
        app = make_app(profile, "framework_op_stats")
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            cols = app.screen.query_one("#ops", FrameTable)._columns
            shares = [c for c in cols if c.endswith("_total_self_time_percent")]
            assert shares[0].startswith(first), (profile, shares)


async def test_input_pipeline_section_numbers_do_not_repeat():
    app = make_app("tf_keras", "input_pipeline_analyzer")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        titles = [str(w.border_title) for w in app.screen.query("*") if w.border_title]
        titles += [w.title for w in app.screen.query("StepChart") if getattr(w, "title", "")]
        numbers = [t.split(" · ")[0] for t in titles if " · " in t and t.split(" · ")[0][0].isdigit()]
        assert len(numbers) >= 4 and len(numbers) == len(set(numbers)), numbers


async def test_trace_viewer_opens_at_the_profile_start_not_before():
    app = make_app("tpu_v6e_inference", "trace_viewer")
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(40):
            await settle(pilot)
            if getattr(app.screen, "timeline", None) is not None:
                break
        tl = app.screen.timeline
        assert tl.ix.t_min >= 0 and tl.t0 == 0 <= tl.ix.t_min


async def test_a_click_on_a_header_sorts_by_that_column():
    app = make_app("tf_loop", "framework_op_stats")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#ops", FrameTable)
        col = table._columns.index("total_self_time")
        x = sum(table._widths[:col]) + col + 1
        assert x < table.size.width, (x, table.size, table.region)
        await pilot.click("#ops", offset=(x + 1, 1))  # inside the border: the header line
        await pilot.pause()
        first = table.sort_by
        assert first[0] == "total_self_time"
        await pilot.click("#ops", offset=(x + 1, 1))  # inside the border: the header line
        await pilot.pause()
        assert table.sort_by == ("total_self_time", not first[1])
        await pilot.click("#ops", offset=(5, 3))  # border, header, row 0, then row 1
        await pilot.pause()
        assert table.cursor_row == 1
