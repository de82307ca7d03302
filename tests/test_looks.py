"""Every screen under NO_COLOR, a light theme and 80x24 (SVG snapshots in snapshots/test_looks/).

NO_COLOR=1 puts Textual's monochrome filter on every line (a bare segment crashed the trace
viewer); the light theme checks that nothing is drawn in fixed bright colours; 80x24 is the
smallest terminal we design for. Each run also asserts the screen loaded without an error."""
from __future__ import annotations

import pytest
from conftest import FIXTURES, PROFILES

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.base import ToolScreen
from tputui.screens.trace_viewer import TraceViewerScreen

SCREENS = [  # (tool, fixture logdir) with data for the tool
    ("summary", PROFILES / "tpu_v6e_inference"),
    ("overview_page", PROFILES / "tpu_v6e_inference"),
    ("input_pipeline_analyzer", PROFILES / "tf_loop"),
    ("framework_op_stats", PROFILES / "tf_loop"),
    ("op_profile", PROFILES / "tpu_v6e_inference"),
    ("hlo_stats", PROFILES / "tpu_v6e_inference"),
    ("roofline_model", PROFILES / "tpu_v6e_inference"),
    ("kernel_stats", FIXTURES / "gpu_kernels"),
    ("memory_profile", PROFILES / "tf_keras"),
    ("memory_viewer", PROFILES / "tpu_v6e_inference"),
    ("pod_viewer", FIXTURES / "pod" / "pod_v4_32"),
    ("megascale_stats", FIXTURES / "pod" / "dcn_2slices"),
    ("trace_viewer", PROFILES / "jax_mlp"),
]
LOOKS = {  # name -> (environment, theme, terminal size)
    "no_color": ({"NO_COLOR": "1"}, None, (120, 36)),
    "light": ({}, "textual-light", (120, 36)),
    "small": ({}, None, (80, 24)),
}


async def loaded(pilot) -> None:
    app = pilot.app
    for _ in range(200):
        await pilot.pause()
        await app.workers.wait_for_complete()
        screen = app.screen
        if isinstance(screen, TraceViewerScreen):
            if screen.timeline is not None and screen.index.pyramid_ready and screen.index.exact:
                break
        elif not isinstance(screen, ToolScreen) or screen.result is not None or screen.error is not None:
            break
    await pilot.pause()
    assert app.screen.error is None, app.screen.error


def make(tool, root, look, monkeypatch) -> TputuiApp:
    env, theme, _ = LOOKS[look]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    app = TputuiApp(open_logdir(str(root)), tool=tool, use_cache=False)
    if theme:
        app.theme = theme
    assert app.no_color == ("NO_COLOR" in env)
    return app


@pytest.mark.parametrize("look", list(LOOKS))
@pytest.mark.parametrize("tool,root", SCREENS, ids=[t for t, _ in SCREENS])
def test_screen(snap_compare, monkeypatch, tool, root, look):
    assert snap_compare(make(tool, root, look, monkeypatch), terminal_size=LOOKS[look][2], run_before=loaded)


@pytest.mark.parametrize("look", list(LOOKS))
def test_help_and_pickers(snap_compare, monkeypatch, look):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    app = make("framework_op_stats", PROFILES / "tf_loop", look, monkeypatch)
    assert snap_compare(app, terminal_size=LOOKS[look][2], run_before=run_before)


@pytest.mark.parametrize("look", list(LOOKS))
def test_column_chooser(snap_compare, monkeypatch, look):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("c")
        await pilot.pause()

    app = make("hlo_stats", PROFILES / "tpu_v6e_inference", look, monkeypatch)
    assert snap_compare(app, terminal_size=LOOKS[look][2], run_before=run_before)


@pytest.mark.parametrize("look", list(LOOKS))
def test_run_picker(snap_compare, monkeypatch, look):
    async def run_before(pilot):
        await loaded(pilot)
        await pilot.press("r")
        await pilot.pause()

    app = make("summary", PROFILES / "jax_two_runs", look, monkeypatch)
    assert snap_compare(app, terminal_size=LOOKS[look][2], run_before=run_before)
