"""The memory viewer screen from the keyboard: module and memory-space pickers, heap curve, buffers."""
from __future__ import annotations

from functools import partial

import conftest
from conftest import PROFILES, settle

from tputui import format as fmt
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.screens.memory_profile import AreaChart
from tputui.screens.memory_viewer import MemoryViewerScreen
from tputui.screens.pickers import PickerScreen
from tputui.widgets.table import FrameTable

SIZE = (120, 40)


make_app = partial(conftest.make_app, tool="memory_viewer", use_cache=False)


async def pick_module(pilot, text: str) -> None:
    await pilot.press("m", *text, "enter")
    await settle(pilot)


async def test_module_picker_curve_and_buffers():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        # The largest module first (XProf opens on jit__randint(28), the most heap events).
        assert isinstance(screen, MemoryViewerScreen) and screen.result.module == "jit__normal(8)"
        await pilot.press("m")
        assert isinstance(app.screen, PickerScreen) and len(app.screen.choices) == 17
        await pilot.press(*"train", "enter")
        await settle(pilot)
        r = screen.result
        assert r.module == "jit_train_step(32)" and screen.error is None
        chart = screen.query_one(AreaChart)
        point = str(screen.query_one("#mv-point").render())
        assert chart.cursor == 9 and "ynn_fusion.3" not in point and "▲ peak" in point
        await pilot.press("left")
        assert "program point 8" in str(screen.query_one("#mv-point").render())
        # Buffers: program order first (the output `dot`), `o` switches to size order.
        table = screen.query_one("#mv-buffers", FrameTable)
        assert table.row(0)["name"] == "dot" and table.row_count == 9
        # Lifetimes: a text Gantt over the 21 program points (24 cells); the output lives all along.
        assert table.row(0)["lifetime"] == "═" * 24
        fusion = next(table.row(i) for i in range(table.row_count) if table.row(i)["name"] == "add_maximum_fusion")
        assert (fusion["alloc_point"], fusion["free_point"]) == (1, 9)
        assert fusion["lifetime"] == "·" + "█" * 10 + "·" * 13  # points 1..9 of 21 -> cells 1..10
        assert "lifetime: 21 points" in table.border_title
        await pilot.press("tab")
        await pilot.press("down")
        assert "params_0__0_.1" in str(screen.query_one("#mv-buffer").render())
        await pilot.press("b")
        assert screen.by_size and table.row(8)["name"].startswith("small")
        sizes = table.frame["size_mib"].to_list()
        assert sizes == sorted(sizes, reverse=True)


async def test_memory_space_picker():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.result.module == "jit_f(12190760917235803885)"
        await pilot.press("M")
        assert isinstance(app.screen, PickerScreen)
        assert [k for k, _ in app.screen.choices] == ["0", "1", "2", "5"]
        await pilot.press(*"host", "enter")
        await settle(pilot)
        r = screen.result
        assert r.memory_space == 5 and r.peak_heap_mib == 15360 and not r.buffers
        assert "No heap simulation" in str(screen.query_one("#mv-point").render())


def test_memory_viewer_snapshot(snap_compare):
    async def train_step(pilot):
        await settle(pilot)
        await pick_module(pilot, "train")

    assert snap_compare(make_app("jax_mlp"), terminal_size=SIZE, run_before=train_step)


def test_memory_viewer_tpu_snapshot(snap_compare):
    async def loaded(pilot):
        await settle(pilot)
        await pilot.press("tab", "b")
        await pilot.pause()

    assert snap_compare(make_app("tpu_v6e_inference"), terminal_size=SIZE, run_before=loaded)


async def test_v_shows_the_instruction_at_the_cursor_in_the_trace_viewer():
    from tputui.screens.trace_viewer import TraceViewerScreen

    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "instruction copy-start " in str(app.screen.query_one("#mv-point").render())
        await pilot.press("v")  # the curve has focus: the program point's instruction
        for _ in range(100):
            await settle(pilot)
            if isinstance(app.screen, TraceViewerScreen) and app.screen.timeline is not None:
                break
        tl = app.screen.timeline
        assert {tl.ix.event_name(int(i)) for i in tl.selection} == {"copy-start"} and len(tl.selection) == 400


async def test_module_without_buffers_says_so():
    app = TputuiApp(open_logdir(str(PROFILES.parent / "pod" / "pod_v5e_single")), tool="memory_viewer",
                    use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.error is None and not screen.result.buffers
        assert str(screen.query_one("#mv-point").render()).startswith("No buffers of this module in memory space HBM")
        assert "(the only module)" in str(screen.query_one("#mv-head").render())


async def test_summary_and_peak_fit_a_small_terminal():
    app = make_app("jax_mlp")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        summary = app.screen.query_one("#mv-summary")
        text = "\n".join(s.text for s in summary.render_lines(summary.region.reset_offset))
        r = app.screen.result
        assert r.module == "jit__normal(8)"  # the largest module
        assert fmt.bytes_binary(r.peak_heap_mib * (1 << 20)) in text and "…" not in text
        assert fmt.bytes_binary(r.total_allocation_bytes) in text
        point = app.screen.query_one("#mv-point")
        assert "▲ peak" in point.render_lines(point.region.reset_offset)[0].text


async def test_screen_csv_is_the_export_csv(tmp_path, monkeypatch):
    """`x` on the buffer list and `tputui export --format csv` write one table: same columns,
    same units (MiB, as XProf), same rows for the same order."""

    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(tmp_path))
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pick_module(pilot, "train_step")
        await pilot.press("tab", "x")
        await settle(pilot)
    written = next(tmp_path.glob("memory_viewer-*.csv")).read_text()
    run = RunData(open_logdir(str(PROFILES / "jax_mlp")).run(None), use_cache=False)
    exported = export_text(run, "memory_viewer", fmt="csv", module="jit_train_step(32)")
    assert written.splitlines() == exported.strip().splitlines()
