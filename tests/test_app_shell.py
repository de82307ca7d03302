"""The app shell, driven from the keyboard: summary screen, run / host / tool pickers, help, errors."""
from __future__ import annotations

import shutil

import pytest
from conftest import PROFILES, make_app, settle

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.help import HelpScreen
from tputui.screens.pickers import PickerScreen
from tputui.screens.summary import SummaryScreen
from tputui.widgets.table import FrameTable

SIZE = (120, 36)


async def test_first_screen_is_a_real_summary():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SummaryScreen) and screen.error is None
        assert screen.result.device_count == 4 and screen.result.device_type == "TPU v6 Lite"
        table = screen.query_one("#lines", FrameTable)
        assert table.row_count == 4 * 5 + 122
        # Keyboard: move to the events column, sort descending, the busiest line comes first.
        for _ in range(3):
            await pilot.press("right")
        await pilot.press("s")
        assert table.sort_by == ("events", True)
        assert table.row(0)["events"] == max(table.frame["events"])
        await pilot.press("slash")
        await pilot.press(*"xla traceme")
        assert table.row_count == 4  # one "XLA TraceMe" line per TPU core
        await pilot.press("escape")
        assert table.row_count == 4 * 5 + 122


async def test_run_picker_switches_runs():
    app = make_app("jax_two_runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.run_data.name == "2026_11_22_12_58_50"  # newest first
        await pilot.press("r")
        assert isinstance(app.screen, PickerScreen)
        await pilot.press(*"45", "enter")
        await settle(pilot)
        assert app.run_data.name == "2026_11_22_12_58_45"
        assert isinstance(app.screen, SummaryScreen) and app.screen.result.run == "2026_11_22_12_58_45"


async def test_tool_picker_lists_tools_with_data_and_opens_one():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        offered = [k for k, _ in picker.choices]
        assert "summary" in offered and "trace_viewer" in offered
        await pilot.press("escape")
        assert isinstance(app.screen, SummaryScreen)


async def test_host_picker_and_help():
    app = make_app("jax_live_capture")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("h")
        assert isinstance(app.screen, PickerScreen)
        assert [k for k, _ in app.screen.choices] == ["localhost_9015"]
        await pilot.press("enter")
        await settle(pilot)
        assert app.host == "localhost_9015"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        everywhere = dict(app.screen.everywhere)
        assert everywhere["t"].startswith("pick a tool") and everywhere["r"].startswith("pick a run")
        assert everywhere["h"].startswith("pick a host") and everywhere["q ^c ^q"] == "quit"
        await pilot.press("escape")
        await pilot.press("q")
    assert app.return_code in (0, None)


async def test_corrupt_host_file_is_one_line_on_screen_not_a_crash(tmp_path):
    """The error is said once (on the screen, not again in a notification over it) and the
    footer leaves out keys that need a result (x CSV); the app keeps running."""
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    good = next((PROFILES / "jax_mlp").rglob("*.xplane.pb")).read_bytes()
    (run / "broken.xplane.pb").write_bytes(good[: len(good) // 3])
    shutil.copy(next((PROFILES / "jax_mlp").rglob("*.xplane.pb")), run / "fine.xplane.pb")
    app = TputuiApp(open_logdir(str(tmp_path)), host="broken", tool="summary")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "truncated or corrupt" in (app.screen.error or "")
        assert not any("truncated or corrupt" in str(n.message) for n in app._notifications)
        shown = [w for w in app.screen.query(".error") if "truncated or corrupt" in str(w.render())]
        assert len(shown) == 1
        footer = {b.action for (_, b, enabled, _) in app.screen.active_bindings.values() if enabled and b.show}
        assert "export_csv" not in footer
        await pilot.press("h")
        await pilot.press(*"fine", "enter")
        await settle(pilot)
        assert app.screen.error is None and app.screen.result.hosts[0].host == "fine"


@pytest.mark.parametrize("profile", ["tpu_v6e_inference", "jax_mlp"])
def test_summary_snapshot(snap_compare, profile):
    async def loaded(pilot):
        await settle(pilot)

    assert snap_compare(make_app(profile), terminal_size=SIZE, run_before=loaded)


def test_tool_picker_snapshot(snap_compare):
    async def picker(pilot):
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)

    assert snap_compare(make_app("tf_loop"), terminal_size=SIZE, run_before=picker)


def test_help_snapshot(snap_compare):
    async def helped(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app("jax_mlp"), terminal_size=SIZE, run_before=helped)


async def test_capture_key_opens_the_capture_dialog():
    from tputui.screens.capture_dialog import CaptureDialog

    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("C")
        await pilot.pause()
        assert isinstance(app.screen, CaptureDialog)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)


async def test_help_lists_each_action_once_without_textual_noise():
    app = make_app("jax_mlp")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        here = dict(help_screen.screen_lines)
        # Two keys for one action share a line; Textual's focus / copy keys are left out.
        assert here["← <"].startswith("previous column") and here["→ >"].startswith("next column")
        texts = [d for _, d in help_screen.lines]
        assert len(texts) == len(set(texts))
        assert not {"Focus Next", "Copy selected text", "Page Left"} & set(texts)
        assert "command palette" in dict(help_screen.everywhere)["^p"]
        # Longer than an 80x24 terminal: the list scrolls from the keyboard.
        scroll = help_screen.query_one("VerticalScroll")
        assert scroll.has_focus and scroll.max_scroll_y > 0
        await pilot.press("end")
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("question_mark")  # ? closes it again
        assert isinstance(app.screen, SummaryScreen)


async def test_command_palette_lists_tools_runs_and_hosts_before_typing():
    from textual.command import CommandPalette

    app = make_app("jax_two_runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        listed = [str(o.prompt) for o in palette.query_one("CommandList").options]
        assert any("Open tool: Trace viewer" in p for p in listed)
        assert any("Switch run: 2026_11_22_12_58_45" in p for p in listed)
        await pilot.press(*"trace view", "enter")
        await settle(pilot)
        assert app.screen.tool.name == "trace_viewer"


async def test_a_screen_replaced_while_loading_does_not_draw(monkeypatch):
    """Switching tools quickly: the first screen's result arrives after it was left (it is kept
    for Esc, so it may draw, but it never notifies over the screen on top)."""
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = app.screen
        app.open_tool("framework_op_stats")
        await settle(pilot)
        # Late worker results reach the kept screen (Esc shows it as it was), never the one on top.
        first.post_message(first.Loaded(first.result))
        first.post_message(first.LoadFailed("late error"))
        await settle(pilot)
        assert app.screen.tool.name == "framework_op_stats" and app.screen.error is None
        assert not any("late error" in str(n.message) for n in app._notifications)


async def test_tool_picker_names_the_tools_it_hides():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert "Op profile" in app.screen.note and "GPU kernel stats" in app.screen.note


async def test_summary_says_which_tools_have_data_and_the_picker_reuses_it():
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        text = str(screen.query_one("#next").render())
        assert text.startswith("t opens a tool; with data in this run: Overview page")
        assert "Trace viewer" in text and "Op profile" not in text  # CPU-only profile: no TPU ops
        assert app._available[app.run_data.name] == screen.tools_with_data
        table = screen.query_one("#lines", FrameTable)
        assert table.frame.columns == ["host", "plane", "line", "events", "span"]


async def test_summary_of_many_hosts_is_one_line_per_host():
    from conftest import ROOT

    app = TputuiApp(open_logdir(str(ROOT / "tests" / "fixtures" / "pod" / "pod_v4_32")), tool="summary")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        facts = screen.query_one("#overview")
        text = "\n".join(line.text for line in facts.render_lines(facts.region.reset_offset))
        hosts = [h.host for h in screen.result.hosts]
        assert len(hosts) == 4 and all(sum(h in ln for ln in text.splitlines()) == 1 for h in hosts)
        assert "planes" not in text.lower()  # per-plane detail is in the lines table below
        table = screen.query_one("#lines", FrameTable)
        assert table.region.y < SIZE[1] // 2  # the table starts in the upper half of the screen


async def test_a_tool_without_data_says_so_calmly():
    """No data is not a failure: one line that says why, a hint, no red error toast."""
    app = make_app("jax_mlp", tool="kernel_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.error and "no GPU planes" in screen.error
        line = screen.query_one("#error")
        assert line.has_class("no-data") and str(line.render()).startswith("No data: no GPU planes")
        assert "t picks a tool" in str(screen.query_one(".no-data-hint").render())
        assert not [n for n in app._notifications if n.severity == "error"]


async def test_a_filter_stays_visible_after_the_filter_bar_closes():
    app = make_app("tf_keras")
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#lines", FrameTable)
        total = table.row_count
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        assert table.render_line(1).text.strip() == "no row matches 'zzz'"
        await pilot.press("backspace", "backspace", "backspace", *"data", "enter")
        await pilot.pause()
        shown = table.row_count
        assert 0 < shown < total
        last = table.render_line(table.size.height - 1).text
        assert f"filter 'data': {shown} of {total} rows" in last
        await pilot.press("escape")
        assert table.row_count == total
        assert "filter" not in table.render_line(table.size.height - 1).text


async def test_theme_is_kept_between_runs(tmp_path, monkeypatch):
    """A theme picked in the app comes back on the next start (from the user config dir)."""
    import json

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app = make_app("jax_mlp")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "textual-dark" and not (tmp_path / "tputui").exists()  # nothing saved at start
        app.theme = "solarized-light"
        await pilot.pause()
    assert json.loads((tmp_path / "tputui" / "settings.json").read_text()) == {"theme": "solarized-light"}
    again = make_app("jax_mlp")
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == "solarized-light" and again.screen.error is None
    (tmp_path / "tputui" / "settings.json").write_text('{"theme": "no-such-theme"}')
    assert make_app("jax_mlp").theme == "textual-dark"  # an unknown name is ignored


@pytest.mark.parametrize("tool", ["summary", "trace_viewer"])
async def test_ctrl_c_quits_from_a_screen_and_from_a_picker(tool):
    for keys in (["ctrl+c"], ["r", "ctrl+c"], ["slash", "ctrl+c"]):
        app = make_app("jax_mlp", tool=tool)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press(*keys)
            await pilot.pause()
            assert not app.is_running, keys


@pytest.mark.parametrize("profile", ["tpu_v6e_inference", "tf_loop"])
async def test_default_first_screen_is_the_overview(profile):
    """XProf opens on the overview page; so do we (the summary stays on t)."""
    app = TputuiApp(open_logdir(str(PROFILES / profile)))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(5):
            await settle(pilot)
        assert app.screen.tool.name == "overview_page" == app.tool_name and app.screen.error is None
        assert app.screen.result.run_environment is not None
        app.open_tool("summary")
        await settle(pilot)
        assert app.screen.tool.name == "summary" and len(app.screen_stack) == 3
