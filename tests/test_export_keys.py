"""`x` on every screen: a table goes to the export folder (never the logdir, even when the
logdir is the working directory); a screen without a table says what to use instead."""
from __future__ import annotations

import shutil

import pytest
from conftest import PROFILES, settle

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A logdir copy that is also the working directory, and a home without Downloads."""
    logdir = tmp_path / "logdir"
    shutil.copytree(PROFILES / "tf_loop", logdir, ignore=shutil.ignore_patterns("oracle"))
    monkeypatch.chdir(logdir)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    monkeypatch.delenv("TPUTUI_EXPORT_DIR", raising=False)
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    return logdir, tmp_path / "home"


def files_under(path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


@pytest.mark.parametrize("tool", ["summary", "framework_op_stats", "megascale_stats", "pod_viewer"])
async def test_x_writes_outside_the_logdir(user, tool):
    logdir, home = user
    before = files_under(logdir)
    app = TputuiApp(open_logdir(str(logdir)), tool=tool)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
        has_table = app.screen.export_frame() is not None
    assert files_under(logdir) == before
    written = list((home / ".cache" / "tputui" / "exports").glob(f"{tool}-*.csv"))
    assert has_table or tool == "megascale_stats"
    if has_table:
        assert len(written) == 1 and written[0].read_text().count("\n") > 1
        assert any("~/.cache/tputui/exports/" in t for t in toasts), toasts
    else:  # tf_loop has no DCN collectives: nothing to write, and the toast says so
        assert not written and toasts


@pytest.mark.parametrize("tool", ["op_profile"])
async def test_x_without_a_table_says_so(user, tool):
    logdir, home = user
    app = TputuiApp(open_logdir(str(logdir)), tool=tool)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, rounds=6)
        await pilot.press("x")
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
    assert any("no table" in t and f"--tool {tool}" in t for t in toasts), toasts
    assert not (home / ".cache" / "tputui" / "exports").exists()
