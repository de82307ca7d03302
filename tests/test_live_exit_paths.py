"""Every way of ending tputui mid-window leaves the job's profiler server free: a capture right
after must succeed at once (one attempt), against the real JAX profiler server.

The monitor pane runs on a terminal of its own (helpers.live.PtyCommand) and is ended while a
window is in flight: q, Ctrl+C (the key), SIGINT, SIGTERM, the terminal closed (SIGHUP), kill -9,
and an exception in the pane. Then `tputui capture` cut short (SIGINT, SIGTERM, SIGHUP), plain and
--continuous, and the in-app capture dialog (Esc, the app quitting). Before these fixes the
monitor's windows were continuous-profiling sessions that an ending monitor left running, and
every later capture failed with "another profiling session is active" until the job restarted.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import subprocess
import sys

import pytest
from helpers.live import HELPERS, PtyCommand, tputui

WINDOW_MS = "1500"  # the monitor's windows: long enough to act inside the second one
CUT_MS = "5000"  # captures cut short


def capture_at_once(server, tmp_path: pathlib.Path) -> None:
    """One attempt, no retry: fails if the server still holds any profiling session."""
    p = tputui("capture", server.address, str(tmp_path / "after"), "--duration-ms", "200",
               "--num-tracing-attempts", "1")
    assert p.returncode == 0, p.stderr
    assert list((tmp_path / "after").rglob("*.xplane.pb"))


def terminal_restored(output: str) -> bool:
    """The alternate screen and mouse reporting Textual turned on are off again at the end."""
    return (output.rfind("\x1b[?1049l") > output.rfind("\x1b[?1049h") >= 0
            and output.rfind("\x1b[?1000l") > output.rfind("\x1b[?1000h") >= 0)


def mid_window(m: PtyCommand) -> None:
    """Wait for the first window to be drawn; the second (back to back) is then in flight."""
    assert m.wait_for("1 window"), m.text()[-2000:]
    import time

    time.sleep(0.5)  # inside the second window, not at its edge


MONITOR_EXITS = {
    "q": (lambda m: m.write(b"q"), 0),
    "ctrl_c_key": (lambda m: m.write(b"\x03"), 0),
    "sigint": (lambda m: os.kill(m.pid, signal.SIGINT), 128 + signal.SIGINT),
    "sigterm": (lambda m: os.kill(m.pid, signal.SIGTERM), 128 + signal.SIGTERM),
    "terminal_closed": (lambda m: m.hang_up(), 128 + signal.SIGHUP),
    # nothing of ours runs after this one: the server ends a Profile whose connection is gone
    "kill_9": (lambda m: os.kill(m.pid, signal.SIGKILL), -signal.SIGKILL),
}


@pytest.mark.live
@pytest.mark.parametrize("how", list(MONITOR_EXITS))
def test_monitor_ended_mid_window_leaves_the_server_free(server, tmp_path, how):
    end, code = MONITOR_EXITS[how]
    m = PtyCommand("monitor", server.address, "--duration-ms", WINDOW_MS)
    try:
        mid_window(m)
        end(m)
        assert m.wait() == code, m.text()[-2000:]
    finally:
        m.kill()
    if how not in ("terminal_closed", "kill_9"):  # (a closed terminal shows nothing; kill -9 restores nothing)
        assert terminal_restored(m.text()), m.text()[-500:]
        assert "Traceback" not in m.text()
    capture_at_once(server, tmp_path)


@pytest.mark.live
@pytest.mark.parametrize("how", ["sigterm", "terminal_closed"])
def test_monitor_ended_as_it_starts(server, tmp_path, how):
    """The pane just drawn (Textual's screen switched), its first window being asked for. A
    closed terminal once hung the process for good here: Textual's writer thread died on the dead
    terminal, and the SIGCONT that follows a hang-up made Textual re-enter its screen mode."""
    end, code = MONITOR_EXITS[how]
    m = PtyCommand("monitor", server.address, "--duration-ms", WINDOW_MS)
    try:
        assert m.wait_for("\x1b[?1049h"), m.text()[-2000:]
        end(m)
        assert m.wait() == code, m.text()[-2000:]
    finally:
        m.kill()
    assert "Traceback" not in m.text()
    capture_at_once(server, tmp_path)


@pytest.mark.live
def test_monitor_failing_mid_window_leaves_the_server_free(server, tmp_path):
    m = PtyCommand(server.address, "--duration-ms", WINDOW_MS, script=str(HELPERS / "monitor_crash.py"))
    try:
        assert m.wait() not in (None, 0)
    finally:
        m.kill()
    assert "injected failure in the monitor pane" in m.text()  # Textual's report of the error
    assert terminal_restored(m.text())
    capture_at_once(server, tmp_path)


@pytest.mark.live
def test_plain_monitor_ended_by_sigterm_leaves_the_server_free(server, tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "tputui.cli", "monitor", server.address, "--plain",
                          "--duration-ms", WINDOW_MS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline()  # the first window's first line: the second is in flight
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGTERM
    finally:
        p.kill()
    capture_at_once(server, tmp_path)


def cut_short(server, tmp_path, sig: int, *extra: str, started: str) -> subprocess.CompletedProcess:
    """`tputui capture` signalled once it has said `started` (its window is then on the server)."""
    logdir = tmp_path / "cut"
    p = subprocess.Popen([sys.executable, "-m", "tputui.cli", "capture", server.address, str(logdir),
                          "--duration-ms", CUT_MS, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stderr.readline()
        assert started in first, first
        import time

        time.sleep(0.5)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert not list(logdir.rglob("*.xplane.pb"))  # nothing written for a capture cut short
    return subprocess.CompletedProcess(p.args, p.returncode, out, first + err)


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


@pytest.mark.live
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_capture_cut_short_ends_its_window(server, tmp_path, sig):
    p = cut_short(server, tmp_path, sig, started="Capturing 5000 ms")
    assert p.returncode == 128 + sig, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.strip().splitlines()[-1].startswith("tputui: ")
    capture_at_once(server, tmp_path)


@pytest.mark.live
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_continuous_capture_cut_short_stops_its_session(server, tmp_path, sig):
    p = cut_short(server, tmp_path, sig, "--continuous", started="Continuous profiling on 1 worker(s)")
    assert p.returncode == 128 + sig, p.stderr
    capture_at_once(server, tmp_path)


# --- the in-app capture dialog ------------------------------------------------------------------
async def start_dialog_capture(app, pilot, server, logdir: pathlib.Path):
    from test_live_capture_dialog import fill

    from tputui.screens.capture_dialog import CaptureDialog, open_capture_dialog

    open_capture_dialog(app)
    await pilot.pause()
    dialog = app.screen
    assert isinstance(dialog, CaptureDialog)
    await fill(pilot, "logdir", str(logdir))
    await fill(pilot, "duration", CUT_MS)
    await fill(pilot, "target", server.address)
    await pilot.press("enter")
    for _ in range(600):
        await pilot.pause(0.05)
        if "Capturing" in str(dialog.query_one("#capture-progress").content):
            break
    await pilot.pause(0.5)  # the window is on the server
    assert dialog.busy
    return dialog


@pytest.mark.live
async def test_dialog_escape_ends_the_capture_on_the_server(server, tmp_path):
    from test_live_capture_dialog import SIZE, app_on_copy

    from tputui.screens.capture_dialog import CaptureDialog

    app = app_on_copy(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        dialog = await start_dialog_capture(app, pilot, server, tmp_path / "cut")
        await pilot.press("escape")
        for _ in range(600):
            await pilot.pause(0.05)
            if not isinstance(app.screen, CaptureDialog):
                break
        assert not isinstance(app.screen, CaptureDialog) and not dialog.busy
        assert not list((tmp_path / "cut").rglob("*.xplane.pb"))
        capture_at_once(server, tmp_path)  # while the app still runs: the window already ended


@pytest.mark.live
async def test_app_quitting_mid_capture_ends_it_on_the_server(server, tmp_path):
    from test_live_capture_dialog import SIZE, app_on_copy

    app = app_on_copy(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await start_dialog_capture(app, pilot, server, tmp_path / "cut")
        (worker,) = [w for w in app.workers if w.group == "capture"]
        await pilot.press("ctrl+c")
    for _ in range(600):  # `tputui` itself waits for it the same way (asyncio.run joins its threads)
        if worker.is_finished:
            break
        await asyncio.sleep(0.05)
    assert worker.is_finished
    assert not list((tmp_path / "cut").rglob("*.xplane.pb"))  # the user quit: nothing captured
    capture_at_once(server, tmp_path)
