"""80x24: the pod viewer's channel table keeps its width (the latency bars go under it), the title
bar's key hint drops whole keys instead of being cut mid-word, figures stay whole."""
from __future__ import annotations

from conftest import make_app, settle
from helpers.contrast import rendered_runs

from tputui.screens.pod_viewer import PodViewerScreen

SIZE = (80, 24)


def screen_lines(app) -> list[str]:
    rows: dict[int, list] = {}
    for run in rendered_runs(app):
        rows.setdefault(run.y, []).append(run)
    return ["".join(r.text for r in sorted(rows.get(y, []), key=lambda r: r.x)) for y in range(app.size.height)]


async def test_pod_viewer_channel_table_keeps_its_width_at_80x24():
    """At 80 columns the latency bars go under the channel table (beside it they left the table
    38 columns); focused, the table has its rows on screen and the bars below it."""
    app = make_app("pod/pod_v4_32", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, PodViewerScreen) and screen.channels is not None
        screen.channels.focus()
        await settle(pilot)
        assert screen.channels.region.width >= 76 and screen.channels.region.height >= 5
        lines = screen_lines(app)
        assert any("0-7,1000-1007,2000-2007,3000-3007 0-7,1000-1007" in line for line in lines), "\n".join(lines)
        assert any("ch 4" in line and "us" in line for line in lines), "\n".join(lines)


async def test_title_bar_hint_drops_whole_keys_at_80_columns():
    app = make_app("pod/pod_v4_32", "pod_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        title = screen_lines(app)[0].rstrip()
        assert title.endswith("(? help · q quit)"), title
        assert "Pod viewer" in title and "hosts all 4" in title
    app = make_app("pod/pod_v4_32", "pod_viewer")
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        assert screen_lines(app)[0].rstrip().endswith("(t tool · r run · h host · ? help · q quit)")


async def test_pod_heatmap_reads_without_colour(monkeypatch):
    """NO_COLOR: the heatmap's values are shades (░▒▓█), not one colourless block everywhere."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app("pod/pod_v4_32", "pod_viewer")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        text = str(screen.heatmap.render())
        assert len({g for g in "░▒▓█" if g in text}) >= 2, text
        assert "░░▒▒▓▓██" in str(screen.query_one("#legend").render())


async def test_memory_viewer_point_line_keeps_figures_whole_at_80x24():
    """A figure and its unit stay on one line ('20.00' then 'GiB' on the next was the cut)."""
    import re

    app = make_app("tpu_v6e_inference", "memory_viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lines = screen_lines(app)
        for above, below in zip(lines, lines[1:]):
            assert not (re.search(r"\d$", above.rstrip()) and re.match(r"\s*(GiB|MiB|KiB|B)\b", below)), (above, below)
        assert any("unpadded 20.00 GiB" in line for line in lines), "\n".join(lines)
