"""The SQL prompt (`:`) and the diff screen (`D`) driven from the keyboard (Pilot), and their SVG
snapshots: default theme at 120x40, NO_COLOR, a light theme and 80x24.

What the screens show is checked against the headless results they draw (`run_query`, `diff_runs`)."""
from __future__ import annotations

import io

import pytest
from conftest import PROFILES, settle
from conftest import make_app as conftest_make_app
from rich.console import Console
from textual.widgets import Input

from tputui.compare import diff_runs
from tputui.data.run_data import RunData
from tputui.query import run_query
from tputui.screens.diff import DiffScreen, PathPrompt
from tputui.screens.sql import SqlScreen
from tputui.screens.trace_viewer import TraceViewerScreen
from tputui.widgets.table import FrameTable

SIZE = (120, 40)
TWO = PROFILES / "jax_two_runs"
TPU = PROFILES / "tpu_v6e_inference"
QUERY = ("SELECT name, count(*) AS n, sum(duration_ns) AS ns, min(event_row) AS event_row FROM events "
         "WHERE name LIKE 'ynn_fusion%' GROUP BY name ORDER BY ns DESC")


def make_app(root=TWO, tool="summary"):
    return conftest_make_app(root, tool)


async def _type_query(pilot, query: str) -> None:
    await pilot.press("colon")
    await settle(pilot)
    pilot.app.screen.query_one("#sql-prompt").value = query
    await pilot.press("enter")
    await settle(pilot)


async def test_sql_prompt_runs_a_query_and_shows_rows_in_the_trace_viewer():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type_query(pilot, QUERY)
        screen = app.screen
        assert isinstance(screen, SqlScreen)
        table = screen.query_one("#sql-rows", FrameTable)
        want = run_query(app.run_data, QUERY).frame
        assert table.frame.equals(want) and want.height == 7
        assert str(screen.query_one("#sql-status").render()).startswith("7 rows, 4 columns in ")
        await pilot.press("slash", *"fusion.6", "enter")  # the rows shown are what v hands over
        assert table.row_count == 1
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen)
        assert app.screen.focus_request.frame_rows == (want.filter(want["name"] == "ynn_fusion.6")["event_row"][0],)


async def test_sql_prompt_errors_stay_on_screen_and_escape_goes_back():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.screen
        await _type_query(pilot, "SELECT nam FROM events")
        status = app.screen.query_one("#sql-status")
        assert status.has_class("error") and str(status.render()).startswith("unknown column 'nam' in table events")
        await _type_query(pilot, "SELECT * FROM steps")  # a second query on the same screen: it has no event_row
        assert app.screen.query_one("#sql-rows", FrameTable).row_count == 13
        await pilot.press("v")
        assert isinstance(app.screen, SqlScreen)  # nothing to show: a notification, no jump
        app.screen.query_one("#sql-rows", FrameTable).focus()
        await pilot.pause()
        assert app.screen.active_bindings["colon"].binding.description == "Edit query"
        await pilot.press("colon")  # the screen's own `:` (the app's opens a new SQL screen elsewhere)
        await pilot.pause()
        assert isinstance(app.focused, Input) and app.focused.id == "sql-prompt"
        await pilot.press("escape")
        assert app.screen is before


def _text(renderable) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def _open_diff_with_previous_run(pilot) -> None:
    await settle(pilot)
    await pilot.press("D")
    await settle(pilot)
    await pilot.press("enter")  # the first choice: the other run of this logdir
    await settle(pilot)


async def test_diff_screen_compares_with_the_picked_run():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await _open_diff_with_previous_run(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen) and screen.error is None
        assert (screen.run_a.name, screen.run_b.name) == ("2026_11_22_12_58_45", "2026_11_22_12_58_50")
        want = diff_runs(RunData(app.logdir.run("2026_11_22_12_58_45")), app.run_data)
        assert screen.result.step_a == want.step_a and screen.result.step_b == want.step_b
        table = screen.query_one("#diff-ops", FrameTable)
        assert table.row_count == want.tables()["ops"].height
        steps = _text(screen._steps_table(screen.result))
        assert "1.300" in steps and "6.868" in steps and "+428.5%" in steps
        await pilot.press("escape")
        assert not isinstance(app.screen, DiffScreen)


async def test_diff_with_another_logdir_and_op_events_in_either_trace_viewer():
    app = make_app(TPU, "hlo_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("enter")  # the only choice: another logdir, run folder or file
        await settle(pilot)
        assert isinstance(app.screen, PathPrompt)
        app.screen.query_one("#path").value = str(TPU)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen) and screen.label_a.endswith("tpu_v6e_inference · 2025_12_10_run")
        table = screen.query_one("#diff-ops", FrameTable)
        assert table.row(0)["name"] == "copy-done.4" and table.row(0)["delta_us"] == 0
        assert (table.frame["delta_us"] == 0).all()
        await pilot.press("V")  # run A's events
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen) and len(app.screen.focus_request.frame_rows) == 400
        assert app.run_data is screen.run_a
        for _ in range(3):  # Esc clears the trace viewer's selection first, then goes back
            if app.screen is screen:
                break
            await pilot.press("escape")
            await settle(pilot)
        assert app.screen is screen
        await pilot.press("v")  # run B's, as v does everywhere
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen) and app.run_data is screen.run_b


async def test_diff_picker_path_that_is_not_a_profile_says_so():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        app.screen.query_one("#path").value = "/no/such/logdir"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, DiffScreen)
        assert any("no such file or directory" in n.message or "/no/such/logdir" in n.message
                   for n in app._notifications)


# --- snapshots -------------------------------------------------------------------------------
@pytest.fixture
def frozen_query_time(monkeypatch):
    """The SQL status line says how long the query took: 0.00 s in snapshots."""
    monkeypatch.setattr("tputui.query.perf_counter", lambda: 0.0)


SNAP_CASES = [("default", SIZE, None), ("light", SIZE, "textual-light"), ("small", (80, 24), None)]


@pytest.mark.parametrize("case, size, theme", SNAP_CASES)
def test_sql_snapshot(snap_compare, frozen_query_time, case, size, theme):
    async def run_before(pilot):
        if theme:
            pilot.app.theme = theme
        await settle(pilot)
        await _type_query(pilot, QUERY)

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("case, size, theme", SNAP_CASES)
def test_diff_snapshot(snap_compare, case, size, theme):
    async def run_before(pilot):
        if theme:
            pilot.app.theme = theme
        await _open_diff_with_previous_run(pilot)

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


def test_diff_snapshot_without_color(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def run_before(pilot):
        await _open_diff_with_previous_run(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_sql_snapshot_without_color(snap_compare, frozen_query_time, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def run_before(pilot):
        await settle(pilot)
        await _type_query(pilot, QUERY)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
def test_diff_picker_and_path_prompt_snapshot(snap_compare, size):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("down", "enter")  # "another logdir, run folder or file…"
        await settle(pilot)
        await pilot.press(*"/data/logs")

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


async def test_diff_of_giant_hosts_finds_op_events_by_name(monkeypatch):
    """A host read in pieces is never decoded whole to find a diffed op's events: the trace
    viewer is asked for the op by name (its index finds the events)."""
    from tputui.analysis import host_pieces

    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    whole: list[str] = []
    real = RunData.frame

    def frame(self, host=None, planes=None, *args, **kwargs):
        if planes is None:
            whole.append(host)
        return real(self, host, planes, *args, **kwargs)

    monkeypatch.setattr(RunData, "frame", frame)
    app = make_app(TPU, "hlo_stats")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        app.screen.query_one("#path").value = str(TPU)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await pilot.press("V")
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen)
        assert app.screen.focus_request.names == ("copy-done.4",) and not app.screen.focus_request.frame_rows
        assert app.run_data is screen.run_a
    assert whole == []
