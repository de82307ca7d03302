"""Readable in every theme, measured on the rendered screen (the colours a terminal is sent):
text >= 4.5:1 against its background, borders >= 3:1, trace labels >= 4.5:1 on their block,
distinct trace categories on a 16-colour terminal, check-box state readable without colour."""
from __future__ import annotations

import pytest
from conftest import FIXTURES, make_app, settle
from helpers.contrast import contrast, rendered_runs
from rich.color import Color, ColorSystem

from tputui.screens.trace_viewer import TraceViewerScreen
from tputui.widgets.timeline import Timeline

SIZE = (100, 30)
GRAPHICS = set("▁▂▃▄▅▆▇█▉▊▋▌▍▎▏▐░▒▓╽╿┃│ ·•")  # charts and marks: not text


async def loaded(pilot) -> None:
    for _ in range(60):
        await settle(pilot)
        screen = pilot.app.screen
        if not isinstance(screen, TraceViewerScreen) or (screen.timeline is not None and screen.index.exact):
            return


def region_of(app, widget_type):
    widgets = list(app.screen.query(widget_type))
    return widgets[0].region if widgets else None


@pytest.mark.parametrize("theme", ["textual-light", "textual-dark"])
@pytest.mark.parametrize("tool", ["overview_page", "trace_viewer", "framework_op_stats"])
async def test_title_bar_footer_borders_and_trace_labels_are_readable(theme, tool):
    app = make_app("tpu_v6e_inference", tool)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await loaded(pilot)
        timeline = region_of(app, Timeline)
        checked = {"title": 0, "footer": 0, "border": 0, "label": 0}
        for run in rendered_runs(app):
            text = run.text.strip()
            if not text:
                continue
            ratio = contrast(run.fg, run.bg)
            where = f"{theme} {tool} row {run.y} {text[:30]!r}: {ratio:.2f}:1"
            if run.y == 0:  # the context bar
                assert ratio >= 4.5, where
                checked["title"] += 1
            elif run.y == SIZE[1] - 1:  # the footer: key letters, descriptions, its separator
                assert ratio >= (3.0 if text == "▏" else 4.5), where
                checked["footer"] += 1
            elif run.is_border:
                assert ratio >= 3.0, where
                checked["border"] += 1
            elif timeline and timeline.contains(run.x, run.y) and run.bg != run_bg(app) and not set(text) <= GRAPHICS:
                assert ratio >= 4.5, where  # an event's name on its block
                checked["label"] += 1
        assert checked["title"] and checked["footer"] and checked["border"]
        assert checked["label"] or tool != "trace_viewer"


def run_bg(app) -> tuple[int, int, int]:
    c = app.screen.styles.background
    return (c.r, c.g, c.b)


async def test_trace_categories_stay_distinct_on_16_colours(monkeypatch):
    """A 16-colour terminal rounds every colour to one of its 16: the blocks' colours, as that
    terminal would draw them, still tell many categories apart (truecolour hues gave two greys)."""
    monkeypatch.setattr("textual.constants.COLOR_SYSTEM", "standard")
    app = make_app("tpu_v6e_inference", "trace_viewer")
    async with app.run_test(size=(160, 50)) as pilot:
        await loaded(pilot)
        timeline = region_of(app, Timeline)
        background = run_bg(app)
        shown = {Color.from_rgb(*run.bg).downgrade(ColorSystem.STANDARD).number
                 for run in rendered_runs(app)
                 if timeline.contains(run.x, run.y) and run.bg != background and run.y > timeline.y + 1}
        assert len(shown) >= 6, shown


async def test_host_picker_state_reads_without_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    from tputui.app import TputuiApp
    from tputui.data.logdir import open_logdir
    from tputui.screens.host_stack_picker import HostStackPicker

    app = TputuiApp(open_logdir(str(FIXTURES / "pod" / "pod_v4_32")), tool="trace_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("H")
        await pilot.pause()
        assert isinstance(app.screen, HostStackPicker)
        lines = ["".join(r.text for r in rendered_runs(app) if r.y == y) for y in range(SIZE[1])]
        hosts = app.screen.hosts
        marked = [next(line for line in lines if h in line) for h in hosts]
        assert "[x]" in marked[0] and all("[ ]" in line for line in marked[1:])
        await pilot.press("down", "space")
        await pilot.pause()
        lines = ["".join(r.text for r in rendered_runs(app) if r.y == y) for y in range(SIZE[1])]
        assert "[x]" in next(line for line in lines if hosts[1] in line)


async def test_capture_dialog_state_reads_without_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app("tf_loop", "summary")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("C")
        await pilot.pause()
        text = "\n".join("".join(r.text for r in rendered_runs(app) if r.y == y) for y in range(SIZE[1]))
        assert "(•) Profiler address(es)" in text and "( ) TPU name" in text
        assert "[x] include tf.data ops" in text


def widget_runs(app, widget):
    """The widget's text runs on its own background (the cursor row, Textual's block cursor, is
    left out: its colours are the theme's, not ours)."""
    from collections import Counter

    region = widget.region
    runs = [run for run in rendered_runs(app)
            if region.contains(run.x, run.y) and run.text.strip() and not set(run.text.strip()) <= GRAPHICS | set("─│╭╮╰╯")]
    base = Counter(run.bg for run in runs).most_common(1)[0][0]
    return [run for run in runs if run.bg == base and not set(run.text.strip()) <= set("├└│─┬┌ ")]


@pytest.mark.parametrize("theme", ["textual-light", "textual-dark"])
async def test_graph_viewer_hlo_colours_are_readable(theme):
    """The HLO text's names, shapes, opcodes and attribute keys, each >= 4.5:1 on its background."""
    from tputui.widgets.key_tree import KeyTree

    app = make_app("tpu_v6e_inference", "graph_viewer")
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        tree = app.screen.query_one(KeyTree)
        runs = widget_runs(app, tree)
        assert len({run.fg for run in runs}) >= 4  # the syntax colours are there to be measured
        low = [(run.text[:20], round(contrast(run.fg, run.bg), 2)) for run in runs if contrast(run.fg, run.bg) < 4.5]
        assert not low, f"{theme}: {low[:8]}"


@pytest.mark.parametrize("theme", ["textual-light", "textual-dark"])
async def test_op_profile_utilization_colours_are_readable(theme):
    """FLOPS utilization's red-to-green text, >= 4.5:1 on its background in either theme."""
    from textual.widgets import Tree

    app = make_app("tpu_v6e_inference", "op_profile")
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        tree = app.screen.query_one(Tree)
        runs = [run for run in widget_runs(app, tree) if "flops" in run.text]
        assert runs
        low = [(run.text[:20], round(contrast(run.fg, run.bg), 2)) for run in runs if contrast(run.fg, run.bg) < 4.5]
        assert not low, f"{theme}: {low[:8]}"
