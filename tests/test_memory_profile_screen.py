"""The memory profile screen from the keyboard: summary, timeline cursor, allocator picker, breakdown."""
from __future__ import annotations

from functools import partial

import conftest
from conftest import settle

from tputui.screens.memory_profile import AreaChart, MemoryProfileScreen
from tputui.screens.pickers import PickerScreen
from tputui.widgets.table import FrameTable

SIZE = (120, 40)


make_app = partial(conftest.make_app, tool="memory_profile", use_cache=False)


def card(screen) -> str:
    return str(screen.query_one("#mp-event").render())


async def test_timeline_cursor_and_breakdown():
    app = make_app("tf_keras")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryProfileScreen) and screen.error is None
        chart = screen.query_one(AreaChart)
        a = screen.allocator
        # The cursor starts on the peak: the card says what happened there.
        assert a.timeline["time_ps"][chart.cursor] == a.peak_time_ps == 280006130000
        assert "MaxPoolGrad" in card(screen) and "27.61 MiB" in card(screen)
        await pilot.press("home")
        assert chart.cursor == 0 and "18.8 ms" in card(screen)
        await pilot.press("right", "right")
        assert chart.cursor == 2
        await pilot.press("pagedown")
        assert chart.cursor == 2 + 22
        await pilot.press("p")
        assert a.timeline["time_ps"][chart.cursor] == a.peak_time_ps
        await pilot.press("u")
        assert [name for name, _, _ in chart.series] == ["stack", "heap", "free"]
        # Breakdown table: sort by requested size (descending), filter by op name.
        await pilot.press("tab")
        table = screen.query_one("#mp-breakdown", FrameTable)
        assert table.has_focus and table.row_count == 7
        await pilot.press("right", "right", "s")
        assert table.sort_by == ("requested_bytes", True)
        assert table.row(0)["tf_op"] == "unused preallocated device memory"
        await pilot.press("slash", *"adam", "enter")
        assert table.row_count == 2
        await pilot.press("enter")  # a breakdown row opens nothing (the trace goes by the cursor: v)
        await settle(pilot)
        assert app.screen is screen


async def test_memory_id_picker():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.memory_id == "0"
        await pilot.press("m")
        assert isinstance(app.screen, PickerScreen)
        assert [k for k, _ in app.screen.choices] == ["0", "1", "2", "3"]
        await pilot.press("3", "enter")
        await pilot.pause()
        assert screen.memory_id == "3"
        assert screen.query_one("#mp-breakdown", FrameTable).row(0)["tf_op"] == "stack"


async def test_profile_without_memory_events_says_so():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "no memory events" in (app.screen.error or "")


def test_memory_profile_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app("tf_keras"), terminal_size=SIZE, run_before=loaded)


def test_memory_profile_tpu_snapshot(snap_compare):
    async def picked(pilot):
        await settle(pilot)
        await pilot.press("m", "1", "enter", "home")
        await pilot.pause()

    assert snap_compare(make_app("tpu_v6e_inference"), terminal_size=SIZE, run_before=picked)


async def test_v_opens_the_trace_at_the_cursor_snapshot():
    from tputui.screens.trace_viewer import TraceViewerScreen

    app = make_app("tf_keras")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        a = app.screen.allocator
        await pilot.press("v")  # the cursor starts on the peak (280.0 ms)
        for _ in range(100):
            await settle(pilot)
            if isinstance(app.screen, TraceViewerScreen) and app.screen.timeline is not None:
                break
        tl = app.screen.timeline
        assert isinstance(app.screen, TraceViewerScreen) and tl is not None
        frame = app.run_data.frame()
        # The window is centred on the peak allocation, in the frame's own clock.
        line_ts = frame.raw.line_timestamp_ns[frame.lines_of(frame.plane_index("/host:CPU"))].min() * 1000
        centre = (tl.t0 + tl.t1) / 2
        assert abs(centre - (a.peak_time_ps + line_ts)) <= 10**6  # within 1 us
        assert tl.t1 - tl.t0 < 20 * 10**9  # a few ms of context, not the whole profile


async def test_breakdown_blanks_invalid_data_types_and_axis_fits():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#mp-breakdown", FrameTable)
        assert table.row(0)["data_type"] == "INVALID" and table.formats["data_type"]("INVALID") == ""
        assert "INVALID" not in "".join(s.text for s in (table.render_line(y) for y in range(3)))
        assert screen.chart.y_format(20.02 * (1 << 30)) == "20.02 GiB"
        assert len(screen.chart.y_format(1023.4 * (1 << 20))) <= 9


async def test_keys_wait_for_a_result():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert all(screen.check_action(a, ()) is False for a in ("pick_memory", "toggle_free", "show_in_trace"))
        await pilot.press("m", "u", "v", "x")
        await settle(pilot)
        assert app.screen is screen


async def test_summary_values_fit_a_small_terminal():
    app = make_app("tf_keras")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        summary = app.screen.query_one("#mp-summary")
        text = "\n".join(s.text for s in summary.render_lines(summary.region.reset_offset))
        for value in ("30.11 MiB", "27.61 MiB", "23.54 GiB", "23.51 GiB", "280.0 ms", "21.55%"):
            assert value in text
        assert "…" not in text
