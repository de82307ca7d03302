"""Reload finds new runs: a run written into the logdir by another process while the app is open
appears after R / F5, or by itself with --watch (real files, real rescans)."""
from __future__ import annotations

import asyncio
import shutil

from conftest import PROFILES

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir

SRC = PROFILES / "jax_two_runs" / "plugins" / "profile"
OLD, NEW = "2026_11_22_12_58_45", "2026_11_22_12_58_50"


def one_run_logdir(tmp_path):
    runs = tmp_path / "logs" / "plugins" / "profile"
    shutil.copytree(SRC / OLD, runs / OLD)
    return tmp_path / "logs", runs


def toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_r_rescans_and_reports_the_new_run(tmp_path):
    logdir, runs = one_run_logdir(tmp_path)
    app = TputuiApp(open_logdir(str(logdir)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert [r.name for r in app.logdir.runs] == [OLD]
        await pilot.press("R")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any(t.startswith("no new runs") for t in toasts(app))
        shutil.copytree(SRC / NEW, runs / NEW)  # "captured by another process"
        await pilot.press("f5")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert {r.name for r in app.logdir.runs} == {OLD, NEW}
        assert f"1 new run: {NEW} (r picks a run)" in toasts(app)
        await pilot.press("r")  # the run picker lists it, newest first
        await pilot.pause()
        assert [k for k, _ in app.screen.choices] == [NEW, OLD]


async def test_watch_rescans_by_itself(tmp_path):
    logdir, runs = one_run_logdir(tmp_path)
    app = TputuiApp(open_logdir(str(logdir)), watch=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        shutil.copytree(SRC / NEW, runs / NEW)
        for _ in range(50):
            await asyncio.sleep(0.1)
            await pilot.pause()
            if len(app.logdir.runs) == 2:
                break
        assert {r.name for r in app.logdir.runs} == {OLD, NEW}
        assert not any(t.startswith("no new runs") for t in toasts(app))  # quiet when nothing changed


async def test_a_rescan_that_fails_says_so_and_the_app_keeps_its_runs(tmp_path):
    """The rescan worker answers by message: a logdir gone meanwhile is one error toast, the runs
    already listed stay and the screen stays usable."""
    logdir, runs = one_run_logdir(tmp_path)
    app = TputuiApp(open_logdir(str(logdir)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        shutil.rmtree(logdir)
        await pilot.press("R")
        await app.workers.wait_for_complete()
        await pilot.pause()
        errors = [str(n.message) for n in app._notifications if n.severity == "error"]
        assert any(t.startswith("rescan failed: no such file or directory") for t in errors), errors
        assert [r.name for r in app.logdir.runs] == [OLD]
        await pilot.press("r")  # the run picker still lists the run it had
        await pilot.pause()
        assert [k for k, _ in app.screen.choices] == [OLD]
