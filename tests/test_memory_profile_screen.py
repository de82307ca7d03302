"""The memory profile screen from the keyboard: summary, timeline cursor, allocator picker, breakdown."""
from __future__ import annotations

from conftest import PROFILES
from tputui.app import PickerScreen, TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.memory_profile import AreaChart, MemoryProfileScreen
from tputui.widgets.table import FrameTable

SIZE = (120, 40)


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def make_app(profile: str) -> TputuiApp:
    return TputuiApp(open_logdir(str(PROFILES / profile)), tool="memory_profile", use_cache=False)


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
        await pilot.press("f")
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
