"""The trace viewer's XProf-parity keys driven from the keyboard on real fixtures: flow partners
(y / Y, the details' Flows rows, the highlight and connector), range marks (z z, the per-name
summary, Z / Esc), counter tracks (the value at the cursor), and their snapshots in the looks of
tests/test_looks.py (default, NO_COLOR, light theme, 80x24).

Oracles: the flow table and range_stats (checked against XProf and a plain walk in
test_trace_flows.py / test_trace_selection.py); here, that the keys reach them and the screen
shows what they say.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES, PROFILES
from test_trace_viewer import details_text, loaded, visible_text

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.format import time_ps
from tputui.screens.trace_viewer import TraceFocus
from tputui.widgets.timeline import Timeline

SIZE = (140, 40)
POD = FIXTURES / "pod" / "pod_v5e_single"
GPU = FIXTURES / "flows" / "gpu_launch"


def app_on(root, **kw) -> TputuiApp:
    return TputuiApp(open_logdir(str(root)), tool="trace_viewer", use_cache=False, **kw)


def status_text(screen) -> str:
    return str(screen.query_one("#status").render())


async def select_named(pilot, name: str) -> Timeline:
    tl = await loaded(pilot)
    await pilot.press("slash", *name, "enter")
    await pilot.pause()
    assert tl.ix.event_name(tl.current) == name
    return tl


async def test_y_walks_the_flow_partners_in_time_order_and_back():
    app = app_on(POD)
    async with app.run_test(size=SIZE) as pilot:
        tl = await select_named(pilot, "TfrtTpuLoadedExecutable::Execute")
        origin = tl.current
        partners = tl.ix.flows.partners(origin)[0]
        assert len(partners) >= 2 and set(tl.flow_partners.tolist()) == set(partners.tolist())
        assert "Flows" in details_text(app.screen) and "→ to" in details_text(app.screen)
        assert f"{len(partners)} flow partner(s) (y)" in status_text(app.screen)
        in_time = partners[np.argsort(np.asarray(tl.ix.start)[partners], kind="stable")].tolist()
        seen = []
        for _ in range(len(partners)):
            await pilot.press("y")
            seen.append(tl.current)
        assert seen == in_time  # each consumer once, in time order
        assert "← from" in details_text(app.screen)  # a consumer lists its producer
        await pilot.press("y")
        assert tl.current == in_time[0]  # around again
        await pilot.press("Y")
        assert tl.current == in_time[-1]


async def test_flow_partners_are_highlighted_and_joined_by_a_connector():
    """A host launch on the python thread and its consumers on another thread: the partner's block
    is drawn in the flow style and a connector runs between the two lines."""
    app = app_on(GPU)
    async with app.run_test(size=SIZE) as pilot:
        tl = await select_named(pilot, "cuLaunchKernel")
        assert len(tl.flow_partners) == 1
        partner = int(tl.flow_partners[0])
        tl.zoom_to_selection()
        tl.set_window(tl.ix.start[tl.current] - 10**6, tl.ix.end[partner] + 10**6)
        await pilot.pause()
        here = tl.line_of_row(int(tl.ix.event_row[tl.current])) - tl.top + 2
        there = tl.line_of_row(int(tl.ix.event_row[partner])) - tl.top + 2
        frame = tl.frame()
        flow_style = tl.get_component_rich_style("timeline--flow")
        assert any(seg.style == flow_style for seg in frame[there])
        col = tl.label_width + 1 + tl.column_of(int(tl.ix.start[partner]))
        step = 1 if there > here else -1
        between = [frame[y].text[col] for y in range(here + step, there, step)]
        assert between and set(between[:-1]) <= {"│"} and between[-1] in "▼▲"


async def test_y_without_partners_says_so():
    app = app_on(GPU)
    async with app.run_test(size=SIZE) as pilot:
        tl = await select_named(pilot, "train_step")
        assert not len(tl.flow_partners)
        await pilot.press("y")
        assert tl.ix.event_name(tl.current) == "train_step"
        assert any("no flow arrows" in str(n.message) for n in app._notifications)


async def test_two_range_marks_sum_the_range_per_name():
    app = app_on(PROFILES / "jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("slash", *"train", "enter")
        first = tl.current
        await pilot.press("z")
        assert tl.mark is None and "1 mark" in status_text(app.screen)
        for _ in range(3):
            await pilot.press("right")
        last = tl.current
        await pilot.press("z")
        a, b = int(tl.ix.start[first]), int(tl.ix.end[last])
        assert (tl.mark.start, tl.mark.end) == (min(a, int(tl.ix.start[last])), max(b, int(tl.ix.end[first])))
        assert not len(tl.selection)  # the details pane sums the range now
        text = details_text(app.screen)
        assert "Range" in text and "% of range" in text and time_ps(tl.mark.end - tl.mark.start) in text
        # The shading covers the range's columns on an empty line part.
        shade = tl.range_columns()
        assert shade is not None and shade[1] > shade[0]
        await pilot.press("Z")
        assert tl.mark is None and "Range" not in details_text(app.screen)


async def test_folding_a_process_leaves_it_out_of_the_range_summary():
    """As XProf's selection counts the tracks shown: fold a process and its events leave the sums."""
    from tputui.analysis.trace_selection import range_stats

    app = app_on(POD)
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("4")
        tl.time_cursor = tl.ix.t_min
        await pilot.press("space")
        tl.time_cursor = tl.ix.t_max
        await pilot.press("space")
        everything = range_stats(tl.ix, tl.ix.t_min, tl.ix.t_max)
        assert f"{everything.count:,} events," in details_text(app.screen)
        await pilot.press("1")
        tl.focus_line = 0  # the first process's header
        await pilot.press("enter")
        assert 0 in tl.collapsed
        shown = [v for kind, v in tl._lines if kind == "row"]
        part = range_stats(tl.ix, tl.ix.t_min, tl.ix.t_max, np.array(shown))
        assert part.count < everything.count
        assert f"{part.count:,} events (folded processes left out)" in details_text(app.screen)


async def test_timing_mode_marks_and_escape_clears_the_range_before_leaving():
    app = app_on(PROFILES / "jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("4")
        start = tl.time_cursor
        await pilot.press("space", *["right"] * 10, "z")
        assert tl.mark is not None and tl.mark.start == start and tl.mark.end > start
        assert "Range" in details_text(app.screen)
        await pilot.press("escape")
        assert tl.mark is None and app.screen.timeline is tl  # cleared, still here


async def test_counter_tracks_show_their_value_at_the_cursor():
    app = app_on(GPU)
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        c = tl.ix.counters
        lines = [i for i, (kind, _) in enumerate(tl._lines) if kind == "counter"]
        assert len(lines) == len(c) >= 3
        text = visible_text(tl)
        assert "SM_ACTIVE" in text and "Memory in use: GPU_0_bfc" in text
        assert any(ch in text for ch in "▁▂▃▄▅▆▇█")
        k = c.names.index("SM_ACTIVE")
        line = next(i for i in lines if tl._lines[i][1] == k)
        await pilot.press("4")  # timing mode: a time cursor
        tl.focus_line = line
        t = int(c.t_ps[c.samples(k)][3]) + 1
        tl.time_cursor = t
        tl.view_changed()
        await pilot.pause()
        expect = c.value_at(k, t)
        assert expect is not None and expect == int(expect)
        assert f"SM_ACTIVE = {int(expect):,} at {time_ps(t)}" in status_text(app.screen)


async def test_enter_on_an_event_still_never_folds_its_process():
    app = app_on(POD)
    async with app.run_test(size=SIZE) as pilot:
        tl = await select_named(pilot, "DoEnqueueProgram")
        await pilot.press("enter")
        assert not tl.collapsed and tl.ix.event_name(tl.current) == "DoEnqueueProgram"


async def test_focus_from_another_screen_keeps_flows():
    app = app_on(POD)
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        app.screen.apply_focus(TraceFocus(names=("DoEnqueueProgram",)))
        await pilot.pause()
        assert len(tl.selection) > 1 and not len(tl.flow_partners)  # several events: no single partner set


# --- looks ------------------------------------------------------------------------------------
LOOKS = {
    "default": ({}, None, (140, 40)),
    "no_color": ({"NO_COLOR": "1"}, None, (120, 36)),
    "light": ({}, "textual-light", (120, 36)),
    "small": ({}, None, (80, 24)),
}


def looks_app(root, look, monkeypatch) -> TputuiApp:
    env, theme, _ = LOOKS[look]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    app = app_on(root)
    if theme:
        app.theme = theme
    return app


@pytest.mark.parametrize("look", list(LOOKS))
def test_looks_flow(snap_compare, monkeypatch, look):
    """A kernel launch selected: its kernel highlighted, the connector between them, Flows listed."""
    async def run_before(pilot):
        tl = await select_named(pilot, "cuLaunchKernel")
        tl.set_window(10 * 10**6, 70 * 10**6)
        await pilot.pause()

    assert snap_compare(looks_app(GPU, look, monkeypatch), terminal_size=LOOKS[look][2], run_before=run_before)


@pytest.mark.parametrize("look", list(LOOKS))
def test_looks_range_and_counters(snap_compare, monkeypatch, look):
    """Counter tracks, and a range marked by two timing marks: shaded, summed per name."""
    async def run_before(pilot):
        tl = await loaded(pilot)
        await pilot.press("4")
        tl.time_cursor = 40 * 10**6
        await pilot.press("space")
        tl.time_cursor = 120 * 10**6
        await pilot.press("space")
        await pilot.pause()

    assert snap_compare(looks_app(GPU, look, monkeypatch), terminal_size=LOOKS[look][2], run_before=run_before)


@pytest.mark.parametrize("look", list(LOOKS))
def test_looks_stacked_hosts(snap_compare, monkeypatch, look):
    """Two hosts of a pod stacked (H, space, Enter): each host's processes under its name."""
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("H")
        await pilot.pause()
        await pilot.press("down", "space", "enter")
        await loaded(pilot)

    assert snap_compare(looks_app(FIXTURES / "pod" / "pod_v4_32", look, monkeypatch), terminal_size=LOOKS[look][2],
                        run_before=run_before)
