"""The in-app capture dialog: Pilot tests against an in-process profiler server (the real-server
capture path is covered by test_live_capture.py), and a snapshot of the form."""
from __future__ import annotations

import shutil

from conftest import PROFILES, settle, xplane
from helpers.live import FakeProfiler, closed_port, fake_server, response_with

from tputui.app import TputuiApp
from tputui.data.logdir import open_logdir
from tputui.screens.capture_dialog import CaptureDialog, default_capture_logdir, open_capture_dialog

SIZE = (120, 40)


def app_on_copy(tmp_path) -> TputuiApp:
    shutil.copytree(PROFILES / "jax_mlp" / "plugins", tmp_path / "logs" / "plugins")
    return TputuiApp(open_logdir(str(tmp_path / "logs")), tool="summary")


async def fill(pilot, field: str, text: str) -> None:
    inp = pilot.app.screen.query_one(f"#{field}")
    inp.value = ""
    inp.focus()
    await pilot.press(*text)


async def test_capture_opens_the_new_run(tmp_path):
    app = app_on_copy(tmp_path)
    fake = FakeProfiler([response_with(xplane("jax_live_capture").read_bytes())])
    with fake_server(fake) as addr:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            before = app.run_data.name
            open_capture_dialog(app)
            await pilot.pause()
            dialog = app.screen
            assert isinstance(dialog, CaptureDialog)
            assert dialog.query_one("#logdir").value == str(tmp_path / "logs")  # the app's logdir
            await fill(pilot, "duration", "150")
            await fill(pilot, "target", addr)
            await pilot.press("enter")
            await settle(pilot)
            assert not isinstance(app.screen, CaptureDialog)
            assert app.run_data.name != before
            assert app.run_data.hosts == [addr.replace(":", "_")]
            assert [r.name for r in app.logdir.runs][0] == app.run_data.name  # newest first
    req = fake.requests[0]
    assert req.opts.duration_ms == 150 and req.opts.host_tracer_level == 2 and req.emit_xspace


async def test_errors_stay_in_the_dialog(tmp_path):
    app = app_on_copy(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        open_capture_dialog(app)
        await pilot.pause()
        await pilot.press("enter")  # nothing typed
        dialog = app.screen
        assert "give a profiler address" in str(dialog.query_one("#capture-error").content)
        await fill(pilot, "target", f"127.0.0.1:{closed_port()}")
        await fill(pilot, "duration", "100")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is dialog and not dialog.busy
        assert str(dialog.query_one("#capture-error").content).startswith("failed to connect to 127.0.0.1:")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CaptureDialog)
        # A capture finishing after the dialog closed: its news is dropped, nothing breaks.
        assert not dialog.post_message(dialog.Finished(error="late"))
        await pilot.pause()
        assert not isinstance(app.screen, CaptureDialog)
    assert len(open_logdir(str(tmp_path / "logs")).runs) == 1  # nothing written


def test_default_logdir_is_a_logdir_not_a_file_or_run(tmp_path):
    shutil.copytree(PROFILES / "jax_mlp" / "plugins", tmp_path / "plugins")
    run = next((tmp_path / "plugins" / "profile").iterdir())
    assert default_capture_logdir(str(tmp_path)) == str(tmp_path)
    assert default_capture_logdir(str(run)) == ""
    assert default_capture_logdir(str(next(run.glob("*.xplane.pb")))) == ""
    assert default_capture_logdir("gs://b/logs") == "gs://b/logs"


def test_dialog_snapshot(snap_compare, tmp_path):
    async def opened(pilot):
        await settle(pilot)
        open_capture_dialog(pilot.app)
        await pilot.pause()
        pilot.app.screen.query_one("#logdir").value = "/home/me/logs"  # not the tmp path: stable
        await pilot.pause()

    assert snap_compare(app_on_copy(tmp_path), terminal_size=SIZE, run_before=opened)


async def test_tpu_name_target_goes_through_resolution(tmp_path, monkeypatch):
    """With "TPU name" chosen, the target is resolved (here `host:port`, which passes through)."""
    app = app_on_copy(tmp_path)
    fake = FakeProfiler([response_with(xplane("jax_mlp").read_bytes())])
    with fake_server(fake) as addr:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            open_capture_dialog(app)
            await pilot.pause()
            dialog = app.screen
            dialog.query_one("#kind-tpu").value = True
            await pilot.pause()
            assert str(dialog.query_one("#target-label").content) == "TPU name (or local)"
            await fill(pilot, "duration", "100")
            await fill(pilot, "target", addr)
            await pilot.press("enter")
            await settle(pilot)
            assert app.run_data.hosts == [addr.replace(":", "_")]
    assert len(fake.requests) == 1


async def test_dialog_fits_a_small_terminal(tmp_path):
    """80x24: every field and both buttons on screen; no blank progress / error rows until needed."""
    app = app_on_copy(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("C")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, CaptureDialog)
        screen_region = dialog.region
        for wid in ("#target", "#logdir", "#python-level", "#dataset-ops", "#capture", "#cancel"):
            assert screen_region.contains_region(dialog.query_one(wid).region), wid
        assert not dialog.query_one("#capture-error").display
        await pilot.press("enter")  # no address yet: the error line appears, the buttons stay visible
        await pilot.pause()
        assert dialog.query_one("#capture-error").display
        assert screen_region.contains_region(dialog.query_one("#capture").region)


async def test_empty_capture_gives_the_guides_advice_in_the_dialog(tmp_path):
    from helpers.live import empty_response

    app = app_on_copy(tmp_path)
    with fake_server(FakeProfiler([empty_response()] * 3)) as addr:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            open_capture_dialog(app)
            await pilot.pause()
            dialog = app.screen
            await fill(pilot, "duration", "100")
            await fill(pilot, "target", addr)
            await pilot.press("enter")
            await settle(pilot)
            assert app.screen is dialog and not dialog.busy
            assert str(dialog.query_one("#capture-error").content) == (
                "no trace events after 3 attempt(s): start the capture later (after the program is running) "
                "or profile for longer (raise Duration or Tracing attempts)")
    assert len(open_logdir(str(tmp_path / "logs")).runs) == 1  # nothing written
