"""The first frame comes before the heavy imports: the app opens on a light screen (the first
tool's context bar, "loading…" and its keys) and imports that tool's screen module, and with it
Polars and numpy, only after that frame is drawn (bench/startup.py measures the time)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

SCRIPT = r"""
import asyncio, sys
from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.demo import demo_logdir
from tputui.screens import opening

heavy_at_first_frame = []
real = opening.OpeningScreen._import

def spy(self):
    heavy_at_first_frame.extend(m for m in ("polars", "numpy") if m in sys.modules)
    return real(self)

opening.OpeningScreen._import = spy

async def main():
    app = TputuiApp(open_logdir(demo_logdir()), demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        first = type(app.screen).__name__
        for _ in range(200):
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            if type(app.screen).__name__ != "OpeningScreen":
                break
        print(first, type(app.screen).__name__, ",".join(heavy_at_first_frame) or "-")

asyncio.run(main())
"""


def test_the_first_frame_is_drawn_before_polars_is_imported():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    first, then, heavy = out.stdout.split()
    assert first == "OpeningScreen" and heavy == "-", out.stdout
    assert then == "OverviewScreen", out.stdout  # then the tool's own screen takes its place
