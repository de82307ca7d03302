"""Snapshots of what a new user meets first at 80x24: the tool picker filled by keys typed right
after `t` while tools are still being checked, `?` pinned in the footer, the trace viewer in the
light theme and on a 16-colour terminal."""
from __future__ import annotations

import threading

from conftest import make_app, settle
from test_tool_picker import type_fast

from tputui import app as app_module
from tputui.screens.trace_viewer import TraceViewerScreen

SMALL = (80, 24)


async def trace_loaded(pilot) -> None:
    for _ in range(60):
        await settle(pilot)
        screen = pilot.app.screen
        if isinstance(screen, TraceViewerScreen) and screen.timeline is not None and screen.index.exact:
            return


def test_tool_picker_type_ahead_while_checking_snapshot(snap_compare, monkeypatch):
    release = threading.Event()

    def held(run):  # the check still running when the snapshot is taken
        release.wait(30)
        return []

    monkeypatch.setattr(app_module, "tools_with_data", held)

    async def typed(pilot):
        await settle(pilot)
        type_fast(pilot.app, "tmem")
        for _ in range(5):
            await pilot.pause()

    try:
        assert snap_compare(make_app("tf_keras", "trace_viewer"), terminal_size=SMALL, run_before=typed)
    finally:
        release.set()


def test_help_key_pinned_at_80x24_snapshot(snap_compare):
    assert snap_compare(make_app("tpu_v6e_inference", "trace_viewer"), terminal_size=SMALL, run_before=trace_loaded)


def test_trace_viewer_light_theme_80x24_snapshot(snap_compare):
    app = make_app("tpu_v6e_inference", "trace_viewer")
    app.theme = "textual-light"
    assert snap_compare(app, terminal_size=SMALL, run_before=trace_loaded)


def test_trace_viewer_16_colours_snapshot(snap_compare, monkeypatch):
    monkeypatch.setattr("textual.constants.COLOR_SYSTEM", "standard")
    assert snap_compare(make_app("tpu_v6e_inference", "trace_viewer"), terminal_size=(100, 30),
                        run_before=trace_loaded)
