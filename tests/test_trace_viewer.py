"""The trace viewer screen driven from the keyboard on real fixtures, plus snapshots at a few zooms.

Each test checks what is selected and what is visible after the keys (zoom, pan, select, f, m,
search and n / N, sections, go to time, timing marks, focus from other screens).
"""
from __future__ import annotations

import conftest
import numpy as np
import pytest
from conftest import PROFILES

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.format import time_ps as fmt_ps
from tputui.screens.trace_viewer import TraceFocus, TraceViewerScreen, show_in_trace_viewer
from tputui.widgets.timeline import Timeline, parse_time

SIZE = (120, 36)


def make_app(profile: str = "jax_mlp", **kw):
    return conftest.make_app(profile, "trace_viewer", **kw)


async def loaded(pilot) -> Timeline:
    """Wait for the index and its level-of-detail pyramid, then for a redraw."""
    app = pilot.app
    for _ in range(200):
        await pilot.pause()
        await app.workers.wait_for_complete()
        if app.screen.query("#timeline") and app.screen.index.pyramid_ready and app.screen.index.exact:
            break
    await pilot.pause()
    return app.screen.query_one("#timeline", Timeline)


def visible_text(tl: Timeline) -> str:
    return "\n".join(s.text for s in tl.frame())


def details_text(screen) -> str:
    from rich.console import Console

    console = Console(width=200)
    with console.capture() as cap:
        console.print(screen.details_renderable())
    return cap.get()


def selected_names(tl: Timeline) -> list[str]:
    return [tl.ix.event_name(int(i)) for i in tl.selection]


async def test_opens_with_the_whole_profile_in_view():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        assert isinstance(app.screen, TraceViewerScreen) and app.screen.error is None
        ix = tl.ix
        assert tl.t0 <= ix.t_min and tl.t1 >= ix.t_max
        text = visible_text(tl)
        assert "Host Threads" in text and "python" in text
        assert "trai" in text  # the 20 steps are labelled on the python track
        assert "ms" in text.splitlines()[0]  # time axis with units


async def test_zoom_and_pan_keys():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        span = tl.span
        await pilot.press("w")
        assert tl.span == pytest.approx(span / 2)
        await pilot.press("s", "s")
        assert tl.span == pytest.approx(span * 2)
        t0 = tl.t0
        await pilot.press("d")
        assert tl.t0 == pytest.approx(t0 + tl.span / 4)
        await pilot.press("a", "a")
        assert tl.t0 == pytest.approx(t0 - tl.span / 4)


async def test_arrows_select_events_and_f_zooms_to_them():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("down", "down")  # section header, python depth 0, python depth 1
        await pilot.press("down")
        assert len(tl.selection) == 1
        first = int(tl.selection[0])
        row = int(tl.ix.event_row[first])
        assert tl.ix.tracks[int(tl.ix.row_track[row])].name == "python"
        await pilot.press("right")
        second = int(tl.selection[0])
        assert tl.ix.event_row[second] == row and tl.ix.start[second] >= tl.ix.start[first]
        assert second == tl.ix.neighbour(first, 1)
        await pilot.press("left")
        assert int(tl.selection[0]) == first
        await pilot.press("f")
        s, e = int(tl.ix.start[first]), int(tl.ix.end[first])
        assert tl.t0 <= s and tl.t1 >= e and tl.span <= (e - s) * 1.2 + tl.plot_width * 10
        # The details pane names the selection.
        assert tl.ix.event_name(first) in details_text(app.screen)


async def test_mark_shows_the_interval_on_the_axis():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        tl.select([int(np.flatnonzero(tl.ix.name == tl.ix.names.index("train 4"))[0])])
        await pilot.press("f", "m")
        assert tl.mark is not None
        a, b = tl.selection_span()
        assert (tl.mark.start, tl.mark.end) == (a, b)
        assert fmt_ps(b - a) in tl.frame()[1].text  # the axis shows the marked length


async def test_search_highlights_and_n_N_step_through_matches():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("slash")
        await pilot.press(*"train")
        await pilot.press("enter")
        # 20 steps ("train N") and 40 dispatches ("PjitFunction(train_step)").
        expected = int(sum(c for n, c in zip(*np.unique(tl.ix.name, return_counts=True))
                           if "train" in tl.ix.names[n].lower()))
        assert len(tl.matches) == expected == 60
        assert "train" in selected_names(tl)[0]
        first = int(tl.selection[0])
        await pilot.press("n")
        nxt = int(tl.selection[0])
        assert tl.ix.start[nxt] >= tl.ix.start[first] and nxt != first and "train" in tl.ix.event_name(nxt)
        await pilot.press("N")
        assert int(tl.selection[0]) == first
        # Matches are drawn highlighted: some visible block carries the match style.
        from tputui.widgets.timeline import MATCH_BG

        def drawn_with(style):
            return any(seg.style == style for strip in tl.frame() for seg in strip)

        match = tl.style(("block", 0, False, True))
        assert drawn_with(match) and match.bgcolor.name == MATCH_BG.lower()
        selected = tl.get_component_rich_style("timeline--selected")  # the theme's text colour as background
        assert drawn_with(selected) and selected.bgcolor.name == app.current_theme.foreground.lower()
        await pilot.press("asterisk")
        assert len(tl.selection) == 60
        assert "60 events" in details_text(app.screen)


async def test_enter_collapses_and_expands_a_section():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        before = len(tl._lines)
        assert tl._lines[0] == ("section", 0)
        await pilot.press("enter")
        assert 0 in tl.collapsed and len(tl._lines) < before
        assert "▶ /device:TPU:0" in visible_text(tl)
        await pilot.press("enter")
        assert not tl.collapsed and len(tl._lines) == before
        # Enter on a selected event fits it; it never folds the process it belongs to.
        await pilot.press("down", "down")
        assert len(tl.selection) == 1 and tl._lines[tl.focus_line][0] != "section"
        span = tl.t1 - tl.t0
        await pilot.press("enter")
        assert not tl.collapsed and len(tl._lines) == before and tl.t1 - tl.t0 < span


async def test_go_to_time_and_timing_marks():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("w", "w", "w")
        await pilot.press("g", *"10ms", "enter")
        assert (tl.t0 + tl.t1) / 2 == pytest.approx(10 * 10**9, abs=tl.span / tl.plot_width)
        await pilot.press("4")
        assert tl.mode == "timing"
        start = tl.time_cursor
        await pilot.press("space")
        for _ in range(10):
            await pilot.press("right")
        await pilot.press("space")
        assert tl.mark is not None
        assert tl.mark.end - tl.mark.start == pytest.approx(10 * tl.span / tl.plot_width, rel=0.01)
        assert tl.mark.start == pytest.approx(start, abs=2)
        assert "4 timing" in tl.frame()[1].text
        await pilot.press("1")
        assert tl.mode == "select"


async def test_mouse_click_selects_the_event_under_it():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        line = tl.line_of_row(tl.ix.tracks[0].first_row + 1)  # python, depth 1: the steps
        x = tl.label_width + 1 + tl.plot_width // 2
        await pilot.click("#timeline", offset=(x, 2 + line - tl.top))
        assert len(tl.selection) == 1
        assert tl.ix.event_row[int(tl.selection[0])] == tl.ix.tracks[0].first_row + 1


async def test_show_in_trace_viewer_selects_and_zooms():
    app = TputuiApp(open_logdir(str(PROFILES / "jax_mlp")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        show_in_trace_viewer(app, TraceFocus(names=("train 3",)))
        tl = await loaded(pilot)
        assert selected_names(tl) == ["train 3"]
        a, b = tl.selection_span()
        assert tl.t0 <= a and b <= tl.t1 and tl.span < (b - a) * 1.5
        assert "train 3" in visible_text(tl)


async def test_show_in_trace_viewer_finds_events_of_derived_lines_after_the_first_pass():
    """Names on lines derived from op stats (Framework Ops) are not in the quick first pass: the
    focus is applied again to the final index."""
    app = TputuiApp(open_logdir(str(PROFILES / "tpu_v6e_inference")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        show_in_trace_viewer(app, TraceFocus(names=("jit(main)",)))
        tl = await loaded(pilot)
        ix = tl.ix
        expected = [i for i in range(ix.num_events) if ix.event_name(i) == "jit(main)"]
        assert expected and sorted(tl.selection.tolist()) == expected
        tracks = {ix.tracks[int(ix.row_track[int(ix.event_row[i])])].name for i in expected}
        assert tracks == {"Framework Name Scope"}


async def test_show_in_trace_viewer_selects_host_events_deferred_by_the_first_pass():
    """A cold open of a device profile draws the devices first; host events asked for by frame
    row are selected once the final index has them."""
    app = TputuiApp(open_logdir(str(PROFILES / "tpu_v6e_inference")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        frame = app.run_data.frame()
        raw = frame.raw
        host_plane = raw.plane_name.index("/host:CPU")
        line = next(li for li in range(len(raw.line_id))
                    if raw.line_plane[li] == host_plane and raw.line_num_events[li] >= 3)
        first = int(raw.line_first_event[line])
        rows = (first, first + 1, first + 2)
        show_in_trace_viewer(app, TraceFocus(frame_rows=rows))
        tl = await loaded(pilot)
        ix = tl.ix
        assert sorted(np.asarray(ix.source)[tl.selection].tolist()) == list(rows)
        host = next(k for k, sec in enumerate(ix.sections) if sec.name == "Host Threads")
        assert host not in tl.collapsed  # folded while its events were loading, open now


async def test_show_in_trace_viewer_by_frame_rows_and_window():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        frame = app.run_data.frame()
        md = frame.events["metadata"].to_numpy()
        rows = tuple(np.flatnonzero(np.array(frame.raw.em_display_name + [""], object)[md] == "all-reduce").tolist())
        show_in_trace_viewer(app, TraceFocus(frame_rows=rows, start_ps=0, end_ps=20 * 10**12))
        tl = await loaded(pilot)
        assert len(tl.selection) == len(rows) == 12
        assert set(selected_names(tl)) == {"all-reduce"}
        assert tl.t0 == pytest.approx(0) and tl.t1 == pytest.approx(20 * 10**12)


def test_parse_time():
    assert parse_time("12.5ms") == 12_500_000_000
    assert parse_time("300 us") == 300_000_000
    assert parse_time("2s") == 2 * 10**12
    assert parse_time("7") == 7 * 10**9  # bare numbers are milliseconds
    assert parse_time("soon") is None


# --- snapshots -------------------------------------------------------------------------------
def test_snapshot_whole_profile(snap_compare):
    assert snap_compare(make_app("tpu_v6e_inference"), terminal_size=SIZE, run_before=loaded)


def test_snapshot_zoomed_in_with_selection(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("g", *"48.5s", "enter")
        await pilot.press("w", "w", "w", "w", "w", "w")
        await pilot.press("down", "down", "down")
        await pilot.pause()

    assert snap_compare(make_app("tpu_v6e_inference"), terminal_size=SIZE, run_before=run_before)


def test_snapshot_search_and_mark(snap_compare):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("slash", *"train", "enter")
        await pilot.press("f", "m", "s", "s")
        await pilot.pause()

    assert snap_compare(make_app("jax_mlp"), terminal_size=SIZE, run_before=run_before)


def test_axis_labels_have_the_digits_the_tick_step_needs():
    from tputui.widgets.timeline import fmt_tick

    assert [fmt_tick(t, 20_000_000) for t in (215_000_000_000, 215_020_000_000)] == ["215.00 ms", "215.02 ms"]
    assert fmt_tick(1_500_000_000_000, 500_000_000_000) == "1.5 s"
    assert fmt_tick(0, 10**9) == "0"


async def test_f_on_an_instant_shows_it_among_its_neighbours():
    """An instant has no length: `f` zooms to 1 us around it, not to a 1 ns window."""
    from tputui.widgets.timeline import FIT_INSTANT_PS

    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        ix = tl.ix
        instant = int(np.flatnonzero(ix.end == ix.start)[0])
        tl.select([instant])
        await pilot.press("f")
        assert tl.span == pytest.approx(FIT_INSTANT_PS)
        assert tl.t0 < ix.start[instant] < tl.t1
        # Events with a length still fit snugly (5% each side).
        longest = int(np.argmax(ix.end - ix.start))
        tl.select([longest])
        await pilot.press("f")
        assert tl.span == pytest.approx((ix.end[longest] - ix.start[longest]) * 1.1, rel=1e-6)


async def test_status_line_keeps_the_digits_a_deep_zoom_needs():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        tl.set_window(52_958_512_540_000, 52_958_512_541_000)  # 1 ns at 52.96 s
        await pilot.pause()
        status = str(app.screen.query_one("#status").render())
        start, _, rest = status.partition(" – ")
        assert start != rest.split(" (")[0]  # the two ends differ on screen
        assert start.startswith("52.958512540") and "(1 ns)" in status


async def test_select_all_matches_on_many_events():
    """`*` over thousands of matches: one selection, the details pane sums it by name."""
    app = make_app("tf_keras")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("slash", *"iterator", "enter")
        n = len(tl.matches)
        assert n > 1000
        await pilot.press("asterisk")
        assert len(tl.selection) == n and np.all(np.diff(tl.selection) > 0)
        text = details_text(app.screen)
        ix = tl.ix
        names, counts = np.unique(ix.name[tl.selection], return_counts=True)
        assert f"{n:,} events, {len(names)} name(s)" in text
        dur = ix.end[tl.selection] - ix.start[tl.selection]
        totals = [int(dur[ix.name[tl.selection] == k].sum()) for k in names]
        first = int(np.argmax(totals))  # the name with the most time comes first, with its count
        row = next(ln for ln in text.splitlines() if ln.startswith(ix.names[int(names[first])][:20]))
        assert f"{counts[first]:,}" in row and fmt_ps(totals[first]) in row


async def test_small_terminal_keeps_most_rows_for_the_timeline():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=(80, 24)) as pilot:
        tl = await loaded(pilot)
        details = app.screen.query_one("#details-box")
        # Nothing selected: the details pane is its one hint line, the timeline has the rest.
        assert details.size.height <= 2 and tl.size.height >= 17
        await pilot.press("down", "right")  # an event selected: the pane grows to show it
        await pilot.pause()
        await pilot.pause()
        assert len(tl.selection) and details.size.height > 2
        assert tl.size.height > 2 * details.size.height


async def test_help_explains_the_trace_keys():
    from tputui.screens.help import HelpScreen

    app = make_app()
    async with app.run_test(size=(140, 45)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = dict(help_screen.screen_lines)
        assert keys["f"] == "zoom to the selection" and keys["4"].startswith("timing mode")
        assert "start or its end" in keys["E"] and "selected event's edge" in keys["."]  # moving a mark's end
        assert "one column left" in keys["<"] and "one column right" in keys[">"]
        assert "XProf" in help_screen.notes


async def test_end_and_page_down_stop_at_a_full_last_page():
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        n = len(tl._lines)
        await pilot.press("end")
        assert tl.top == n - tl.body_height  # the last track on the last screen line, no blank page
        assert visible_text(tl).splitlines()[-1].strip()
        await pilot.press("pagedown", "pagedown")
        assert tl.top == n - tl.body_height
        await pilot.press("home")
        assert tl.top == 0
        await pilot.press("end")
        await pilot.resize_terminal(SIZE[0], SIZE[1] + 10)  # taller: still no blank rows at the bottom
        await pilot.pause()
        assert tl.top == n - tl.body_height


async def test_all_hosts_opens_the_first_host_and_says_so():
    from conftest import ROOT

    app = TputuiApp(open_logdir(str(ROOT / "tests" / "fixtures" / "pod" / "pod_v4_32")), tool="trace_viewer")
    async with app.run_test(size=(140, 36)) as pilot:
        await loaded(pilot)
        screen = app.screen
        hosts = app.run_data.hosts
        assert app.host is None and screen.host == hosts[0] and len(hosts) == 4
        context = str(screen.query_one("#context").render())
        assert f"host {hosts[0]} (1 of 4; H stacks several, h picks one)" in context
        await pilot.press("h", *hosts[2], "enter")
        await loaded(pilot)
        assert app.screen.host == hosts[2] and "1 of" not in str(app.screen.query_one("#context").render())


async def test_a_host_without_events_is_one_clear_line(tmp_path):
    from tputui.proto import xplane_pb2

    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    xs = xplane_pb2.XSpace()
    plane = xs.planes.add(id=1, name="/host:CPU")
    plane.lines.add(id=1, name="python")
    (run / "vm.xplane.pb").write_bytes(xs.SerializeToString())
    app = TputuiApp(open_logdir(str(tmp_path)), tool="trace_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert screen.error.startswith("no trace events on host vm (1 thread / device line(s), all empty")
        assert not screen.query("#timeline")
        await pilot.press("w", "slash")  # keys on an empty screen do nothing, raise nothing
        assert app.screen is screen


async def test_details_show_self_time():
    """Self time = duration less what the children (next depth, same track) cover; checked
    against a plain loop over every event of the track for the first 200 events with children."""
    app = make_app("tf_keras")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        ix = tl.ix
        checked = 0
        for i in range(ix.num_events):
            r = int(ix.event_row[i])
            s, e = int(ix.start[i]), int(ix.end[i])
            kids = np.flatnonzero((ix.event_row == r + 1) & (ix.row_track[ix.event_row] == ix.row_track[r])
                                  & (ix.start >= s) & (ix.start < e))
            if not len(kids) or e == s:
                continue
            covered = sum(min(int(ix.end[k]), e) - max(int(ix.start[k]), s) for k in kids)
            assert ix.self_time(i) == e - s - covered
            checked += 1
            if checked == 200:
                break
        assert checked == 200
        tl.select([i])
        await pilot.pause()
        own = ix.self_time(i)
        text = details_text(app.screen)
        assert "Self time" in text and f"{fmt_ps(own, 6)} ({100 * own / (e - s):.1f}% of its duration)" in text


async def test_n_before_any_search_says_how_to_search():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        await pilot.press("n")
        assert not len(tl.selection)
        assert any("/ searches event names" in str(n.message) for n in app._notifications)


async def test_level_of_detail_finishing_after_the_user_left_is_ignored():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        viewer = app.screen
        viewer.lod_note = "in the background: building the level of detail…"
        viewer.update_status()
        assert "in the background" in str(viewer.query_one("#status").render())
        app.open_tool("summary")
        await pilot.pause()
        await app.workers.wait_for_complete()
        # A worker reporting after the switch: the viewer is kept for Esc (back history), so it
        # takes the late reports quietly, and the summary stays on top.
        viewer.post_message(viewer.LodProgress("late"))
        viewer.post_message(viewer.LodDone(tl.ix))
        await pilot.pause()
        assert app.screen.tool.name == "summary"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is viewer and viewer.error is None


async def test_a_leaf_event_has_no_separate_self_time_line():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        ix = tl.ix
        leaf = next(i for i in range(ix.num_events)
                    if ix.end[i] > ix.start[i] and ix.self_time(i) == ix.end[i] - ix.start[i])
        tl.select([leaf])
        await pilot.pause()
        assert "Self time" not in details_text(app.screen)


async def test_ctrl_arrows_scroll_a_long_details_pane():
    app = make_app("tf_keras")
    async with app.run_test(size=(100, 24)) as pilot:
        tl = await loaded(pilot)
        await pilot.press("slash", *"iterator", "enter", "asterisk")
        await pilot.pause()
        details = app.screen.query_one("#details-box")
        assert details.max_scroll_y > 0 and details.scroll_y == 0
        await pilot.press("ctrl+down")
        await pilot.pause()
        assert details.scroll_y > 0
        await pilot.press("ctrl+up")
        await pilot.pause()
        assert details.scroll_y == 0 and tl.has_focus


async def test_no_color_draws_the_timeline(monkeypatch):
    """NO_COLOR=1 puts Textual's monochrome filter on every line: each segment needs a style
    (a bare Segment crashed it at once)."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app("jax_mlp")
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        tl = await loaded(pilot)
        assert app.screen.error is None
        assert all(seg.style is not None for strip in tl.frame() for seg in strip)
        await pilot.press("d", "down", "w")  # pan, select, zoom: still drawing
        await pilot.pause()
        assert len(tl.selection) == 1 and "/col" in visible_text(tl)
        assert "│" in app.export_screenshot()  # the filtered screen renders


async def test_axis_and_labels_follow_the_theme():
    """Axis labels, gutter and sections are drawn in the theme's colours: readable on a light theme."""
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        dark = tl.style(("axis_label",)).color.name
        app.theme = "textual-light"
        await pilot.pause()
        light_label = tl.style(("axis_label",))
        assert light_label.color.name != dark
        # Contrast: the label colour is the theme's foreground, far from its background.
        fg, bg = light_label.color.triplet, tl.rich_style.bgcolor.triplet
        assert sum(abs(a - b) for a, b in zip(fg, bg)) > 3 * 128
        assert any(seg.style == light_label for seg in tl.frame()[0])  # the frame was redrawn with it


async def test_second_open_draws_the_saved_index_at_once():
    """The first open draws the quick pass and finishes in the background; a new app on the
    same cache draws the saved, complete index straight away (no background work)."""
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        first_view = visible_text(tl)
        n = tl.ix.num_events
    app = make_app("tpu_v6e_inference")
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause()
            if app.screen.query("#timeline"):
                break
        ix = app.screen.index
        assert ix.complete and not app.screen.lod_note and ix.num_events == n
        assert not app.run_data._frames  # drawn without decoding the profile
        await pilot.pause()
        tl = app.screen.query_one("#timeline", Timeline)
        assert visible_text(tl) == first_view
        status = str(app.screen.query_one("#status").render())
        assert f"{n:,} events" in status and "background" not in status
        # Selecting an event reads its stats from the frame, loaded off the UI thread on demand.
        i = int(np.flatnonzero((np.asarray(ix.source) >= 0) & (np.asarray(ix.kind) == 0))[0])
        tl.select(np.array([i]), current=i)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert ix.frame_ready and app.run_data._frames
        text = details_text(app.screen)
        assert ix.event_name(i) in text and "Duration" in text


async def test_one_end_of_a_marked_interval_moves():
    """E picks the start or the end of the mark, `.` moves it to the selected event's edge or the
    time cursor, < / > nudge it a column; the axis and the status give the new length."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        screen = app.screen
        await pilot.press("full_stop")
        assert tl.mark is None  # nothing marked: a notification, no mark made
        trains = [int(np.flatnonzero(tl.ix.name == tl.ix.names.index(f"train {k}"))[0]) for k in (4, 6)]
        tl.select([trains[0]])
        await pilot.press("m")
        s4, e4 = int(tl.ix.start[trains[0]]), int(tl.ix.end[trains[0]])
        assert (tl.mark.start, tl.mark.end, tl.mark_end) == (s4, e4, "end")
        tl.select([trains[1]])
        await pilot.press("full_stop")  # the end goes to train 6's end
        e6 = int(tl.ix.end[trains[1]])
        assert (tl.mark.start, tl.mark.end) == (s4, e6)
        status = str(screen.query_one("#status").render())
        assert f"mark {fmt_ps(e6 - s4)} (end moves" in status
        await pilot.press("E", "full_stop")  # now the start: train 6's start
        s6 = int(tl.ix.start[trains[1]])
        assert (tl.mark.start, tl.mark.end, tl.mark_end) == (s6, e6, "start")
        col = max(int(round(tl.span / tl.plot_width)), 1)
        await pilot.press("greater_than_sign", "greater_than_sign", "less_than_sign")
        assert (tl.mark.start, tl.mark.end) == (s6 + col, e6)
        assert fmt_ps(e6 - s6 - col) in str(screen.query_one("#status").render())
        # Timing mode: `.` takes the time cursor; the start dragged past the end becomes the end.
        await pilot.press("4")
        tl.time_cursor = e6 + 10 * col
        await pilot.press("full_stop")
        assert (tl.mark.start, tl.mark.end, tl.mark_end) == (e6, e6 + 10 * col, "end")
        assert fmt_ps(10 * col) in tl.frame()[1].text  # the axis's mark bar gives the new length
        await pilot.press("E", "1")
        tl.select([trains[0]])
        await pilot.press("m")  # a new mark: its end is the one that moves again
        assert (tl.mark.start, tl.mark.end, tl.mark_end) == (s4, e4, "end")


async def test_a_moved_range_mark_sums_the_new_range():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = await loaded(pilot)
        first = int(np.flatnonzero(tl.ix.name == tl.ix.names.index("train 4"))[0])
        tl.select([first])
        await pilot.press("z", "z")
        assert tl.range_done and len(tl.selection) == 0
        before = details_text(app.screen)
        await pilot.press("4")
        tl.time_cursor = int(tl.ix.end[int(np.flatnonzero(tl.ix.name == tl.ix.names.index("train 7"))[0])])
        await pilot.press("full_stop")
        after = details_text(app.screen)
        assert "train 7" in after and "train 7" not in before
        assert fmt_ps(tl.mark.end - tl.mark.start) in after
