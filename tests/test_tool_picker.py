"""The tool picker opens at once and keeps what is typed after `t`; which tools have data comes
from the op stats (their tool facts), never from decoding a host again."""
from __future__ import annotations

import threading

import pytest
from conftest import FIXTURES, PROFILES, make_app, settle
from textual import events
from textual.widgets import Input, OptionList

from tputui import app as app_module
from tputui.analysis import host_map, tool_facts
from tputui.analysis.utilization_viewer import CHIPS
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.screens.pickers import PickerScreen
from tputui.screens.trace_viewer import TraceViewerScreen
from tputui.tools import TOOLS, tools_known, tools_with_data


def fresh_run(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0])


# Each fact where it holds, and a profile where it does not.
WITH_DATA = {"memory_profile": "profiles/tf_keras", "megascale_stats": "pod/dcn_2slices",
             "perf_counters": "counters/v6e_counters", "utilization_viewer": "counters/v6e_utilization",
             "tf_data_bottleneck_analysis": "profiles/tf_loop", "graph_viewer": "profiles/tpu_v6e_inference",
             "memory_viewer": "profiles/tpu_v6e_inference", "hlo_stats": "profiles/tpu_v6e_inference"}


WITHOUT = {"graph_viewer": "profiles/tf_loop", "memory_viewer": "profiles/tf_loop"}  # else jax_mlp


@pytest.mark.parametrize("tool", sorted(WITH_DATA))
def test_which_tools_have_data_is_answered_from_cached_op_stats_without_a_decode(tool):
    paths = {True: FIXTURES / WITH_DATA[tool], False: FIXTURES / WITHOUT.get(tool, "profiles/jax_mlp")}
    for path in paths.values():
        host_map.host_op_stats(fresh_run(path))  # a first open: the map, its op stats cached on disk
    for has, path in paths.items():
        run = fresh_run(path)
        assert (tool in tools_with_data(run)) == has
        assert not run._frames, "the check decoded a host"


def test_tools_known_says_none_until_the_op_stats_are_in_this_process():
    run = fresh_run(PROFILES / "tf_keras")
    before = tools_known(run)
    # The file list answers the summary, trace viewer, overview...: the others wait for the op stats.
    assert before["trace_viewer"] is True and before["overview_page"] is True
    assert before["memory_profile"] is None and before["megascale_stats"] is None
    host_map.host_op_stats(run)
    after = tools_known(run)
    assert None not in after.values()
    assert [n for n, v in after.items() if v] == tools_with_data(run)
    assert after["memory_profile"] is True and after["megascale_stats"] is False


def test_the_utilization_facts_know_the_same_chips_as_the_utilization_viewer():
    assert tool_facts.COUNTER_CHIP_TYPES == set(CHIPS)


def type_fast(app, text: str) -> None:
    """Queue every key at once, as a fast typist's terminal delivers them (Pilot.press waits for
    each key to be handled, which no user does)."""
    names = {"/": "slash", "\r": "enter", " ": "space"}
    for ch in text:
        app.post_message(events.Key(names.get(ch, ch), None if ch == "\r" else ch))


def picker(app) -> PickerScreen | None:
    return next((s for s in app.screen_stack if isinstance(s, PickerScreen)), None)


async def test_keys_typed_right_after_t_go_to_the_tool_picker(monkeypatch):
    """`t` then "trace" and Enter at once: the trace viewer opens, and the `r` of "trace" never
    reached the screen below (it would open the run picker). The registry's full check is made
    slow (as on a big profile): the picker must not wait for it when the op stats already answer."""
    real = app_module.tools_with_data

    def slow_tools_with_data(run):
        threading.Event().wait(1.0)
        return real(run)

    monkeypatch.setattr(app_module, "tools_with_data", slow_tools_with_data)
    app = make_app("tf_loop", tool="framework_op_stats")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_fast(app, "ttrace\r")
        await settle(pilot)
        assert isinstance(app.screen, TraceViewerScreen)
        assert picker(app) is None and app.tool_name == "trace_viewer"


async def test_tools_still_checked_show_checking_and_the_filter_survives_the_answer(monkeypatch):
    """Before the op stats exist the picker lists every tool, the ones to check marked
    "checking..."; typed keys fill the filter meanwhile and stay when the answer arrives."""
    release = threading.Event()

    def slow_tools_with_data(run):
        release.wait(30)
        return [t.name for t in TOOLS if t.name in ("summary", "trace_viewer", "memory_profile")]

    monkeypatch.setattr(app_module, "tools_with_data", slow_tools_with_data)
    app = make_app("tf_keras", tool="trace_viewer")  # the trace viewer computes no op stats
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t", *"mem")
        screen = picker(app)
        assert screen is not None and app.screen is screen
        assert screen.query_one(Input).value == "mem"
        options = screen.query_one(OptionList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert PickerScreen.CHECKING in [s for s in shown if "Memory profile" in s][0]
        assert any("Memory viewer" in s for s in shown)
        release.set()
        await settle(pilot)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert len(shown) == 1 and "Memory profile" in shown[0] and PickerScreen.CHECKING not in shown[0]
        assert screen.query_one(Input).value == "mem"
        assert "Memory viewer" in str(screen.query_one("#picker-note").render())
        await pilot.press("enter")
        await settle(pilot)
        assert app.tool_name == "memory_profile"


async def test_keys_typed_right_after_slash_go_to_the_trace_search():
    """"/copy" and Enter typed at once in the trace viewer: the search gets all four letters (the
    `y` never reaches the timeline, where it jumps to a flow partner) and runs."""
    app = make_app("tpu_v6e_inference", tool="trace_viewer")
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(40):
            await settle(pilot)
            if isinstance(app.screen, TraceViewerScreen) and app.screen.timeline is not None:
                break
        screen = app.screen
        screen.timeline.focus()
        await pilot.pause()
        type_fast(app, "/copy\r")
        await settle(pilot)
        assert screen.timeline.search_text == "copy"
        assert not screen.query_one("#prompt").has_class("visible")


async def test_keys_typed_right_after_slash_go_to_a_table_filter():
    """"/queue" typed at once on a table: the filter gets every letter; the `q` never quits."""
    app = make_app("tf_loop", tool="framework_op_stats")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#ops")
        table.focus()
        await pilot.pause()
        type_fast(app, "/queue")
        await settle(pilot)
        assert app.is_running and table.filter_text == "queue"


async def test_a_tool_check_that_fails_is_one_error_and_the_picker_still_answers(monkeypatch):
    """The check worker posts its answer (a message, not a call into the UI): a UserError is one
    error toast, and the picker stops saying "checking..." (every tool then listed as without data)."""
    from tputui.errors import UserError

    def failing_tools_with_data(run):
        raise UserError("host file unreadable")

    monkeypatch.setattr(app_module, "tools_with_data", failing_tools_with_data)
    app = make_app("tf_keras", tool="trace_viewer")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        screen = picker(app)
        assert screen is not None and not screen.pending
        assert "host file unreadable" in [str(n.message) for n in app._notifications if n.severity == "error"]
        assert "No data in this run" in str(screen.query_one("#picker-note").render())


async def test_a_tool_check_answering_after_the_picker_closed_draws_nothing(monkeypatch):
    """The answer goes to the picker that asked: closed meanwhile, it is dropped (no error, no
    redraw of a screen nobody sees)."""
    release = threading.Event()

    def slow_tools_with_data(run):
        release.wait(30)
        return [t.name for t in TOOLS if t.name in ("summary", "trace_viewer")]

    monkeypatch.setattr(app_module, "tools_with_data", slow_tools_with_data)
    app = make_app("tf_keras", tool="trace_viewer")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        first = picker(app)
        assert first is not None and first.pending
        await pilot.press("escape")
        await pilot.pause()
        assert picker(app) is None
        release.set()
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert first.pending  # never answered: it had closed
        assert not [n for n in app._notifications if n.severity == "error"]
        assert isinstance(app.screen, TraceViewerScreen)
