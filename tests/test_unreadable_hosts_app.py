"""In the app, a run with an unreadable host file: the all-hosts screens draw the readable hosts
and a notification says which file was left out and why; the app keeps running. A run with no
readable host shows the one-line reason (and the app keeps running)."""
from __future__ import annotations

from conftest import PROFILES, settle

from tputui.app import PickerScreen, TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.summary import SummaryScreen

SIZE = (120, 36)
GOOD = next((PROFILES / "jax_mlp").rglob("*.xplane.pb"))


def logdir(tmp_path):
    mixed = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    empty = tmp_path / "plugins" / "profile" / "2026_01_02_00_00_00"
    mixed.mkdir(parents=True)
    empty.mkdir(parents=True)
    (mixed / "vm.xplane.pb").write_bytes(GOOD.read_bytes())
    (mixed / "bad.xplane.pb").write_bytes(GOOD.read_bytes()[:20000])
    (empty / "h.xplane.pb").write_bytes(b"")
    return open_logdir(str(tmp_path))


async def test_unreadable_host_is_left_out_with_a_notification(tmp_path):
    app = TputuiApp(logdir(tmp_path), run="2026_01_01_00_00_00", tool="summary")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SummaryScreen) and screen.error is None
        assert [h["host"] for h in screen.result.to_json()["hosts"]] == ["vm"]
        (note,) = [n for n in app._notifications if n.severity == "warning"]
        assert note.message.startswith("1 unreadable host file(s) left out: ")
        assert "bad.xplane.pb: truncated or corrupt XSpace" in note.message
        await pilot.press("h")
        assert isinstance(app.screen, PickerScreen)
        assert [c[0] for c in app.screen.choices] == ["vm"]  # the host picker offers the readable host


async def test_a_run_of_only_an_empty_file_shows_why_and_the_app_keeps_running(tmp_path):
    app = TputuiApp(logdir(tmp_path), tool="summary")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.run_data.name == "2026_01_02_00_00_00"
        assert app.screen.error.endswith("h.xplane.pb: empty file (0 bytes; the capture wrote nothing)")
        await pilot.press("r")
        await pilot.press(*"01_01", "enter")
        await settle(pilot)
        assert app.run_data.name == "2026_01_01_00_00_00" and app.screen.error is None
