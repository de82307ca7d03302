"""The monitor pane, driven by a recorded sample stream (tests/fixtures/live/monitor_stream.jsonl,
recorded from a real JAX profiler server by tests/helpers/record_monitor_stream.py) and by a
sample computed from the real TPU v6e profile: Pilot tests of keys and snapshot tests."""
from __future__ import annotations

import json
import time

import pytest
from conftest import FIXTURES, xplane
from helpers.live import FakeProfiler, fake_server, response_with
from helpers.pane import drawn, settle, utc  # noqa: F401 (utc: a fixture, used by every test here)

from tputui.live.feed import LiveFeed
from tputui.live.monitor import MonitorSession, Sample, sample_from_xspace
from tputui.monitor_app import MonitorApp
from tputui.screens.monitor import MonitorScreen

SIZE = (120, 36)
STREAM = FIXTURES / "live" / "monitor_stream.jsonl"

# Timestamps on screen are local time: pinned, so snapshots do not depend on the zone.
pytestmark = pytest.mark.usefixtures("utc")


def recorded() -> list[Sample]:
    return [Sample.from_json(json.loads(line)) for line in STREAM.read_text().splitlines()]


def make_app(samples: list[Sample], **kw) -> MonitorApp:
    first = samples[0]
    return MonitorApp(MonitorScreen(lambda: iter(samples), addresses=[first.address], window_ms=first.window_ms, **kw))


def test_recorded_stream_is_a_real_run():
    samples = recorded()
    ok = [s for s in samples if s.ok]
    assert len(ok) >= 10 and all(s.device_type == "CPU" and s.steps > 0 and s.top_ops for s in ok)
    assert [s.retry_in_s for s in samples if s.error] == [1.0, 2.0, None]  # the back-off as recorded


async def test_pane_shows_the_last_good_window_and_the_error_after_it():
    samples = recorded()
    app = make_app(samples)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MonitorScreen) and screen.done
        assert len(screen.history) == len(samples)
        last_ok = [s for s in samples if s.ok][-1]
        figures = drawn(screen.query_one("#figures"))
        assert f"{last_ok.step_ms_avg:.3f} ms" in figures and f"{last_ok.steps}" in figures
        assert "needs the TPU's performance counters" in figures
        top = drawn(screen.query_one("#top-ops"))
        assert last_ok.top_ops[0]["name"] in top
        status = screen.query_one("#status")
        assert status.has_class("error") and "failed to connect" in drawn(status)


async def test_pause_key_holds_the_stream():
    import threading

    samples = recorded()[:4]
    gate = threading.Event()

    def source():
        yield samples[0]
        gate.wait(10)  # the test presses p before the rest arrives
        yield from samples[1:]

    app = MonitorApp(MonitorScreen(source, addresses=[samples[0].address], window_ms=500))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await pilot.press("p")
        assert screen.paused
        gate.set()
        for _ in range(50):  # the sample in flight lands, then the worker holds
            await pilot.pause(0.02)
            if len(screen.history) == 2:
                break
        await pilot.pause(0.3)
        assert len(screen.history) == 2 and "paused" in drawn(screen.query_one("#status"))
        await pilot.press("p")
        await settle(pilot)
        assert not screen.paused and len(screen.history) == len(samples)


async def test_open_window_key_saves_the_window_and_leaves_for_the_profile(tmp_path):
    data = xplane("jax_live_capture").read_bytes()
    with fake_server(FakeProfiler([response_with(data)])) as addr:
        feed = LiveFeed([MonitorSession(addr, duration_ms=100)])
        screen = MonitorScreen(lambda: feed.items(1), addresses=[addr], window_ms=100, feed=feed,
                               windows_dir=str(tmp_path / "w"))
        app = MonitorApp(screen)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("o")
            await pilot.pause()
        assert app.open_logdir == str(tmp_path / "w")
    from tputui.data.logdir import open_logdir

    (run,) = open_logdir(app.open_logdir).runs
    assert run.hosts[0].host == addr.replace(":", "_")


async def test_open_window_without_a_capture_says_so():
    app = make_app(recorded()[:2])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await pilot.pause()
        assert app.open_logdir is None
        assert any("No captured window" in str(n.message) for n in app._notifications)


def test_snapshot_recorded_stream(snap_compare):
    assert snap_compare(make_app(recorded()), terminal_size=SIZE, run_before=settle)


def test_snapshot_tpu_window(snap_compare):
    s = sample_from_xspace(xplane("tpu_v6e_inference").read_bytes(), "10.130.0.2:8466", 1000,
                           now=1_795_354_000.0)
    assert snap_compare(make_app([s]), terminal_size=SIZE, run_before=settle)


async def test_no_window_yet_says_why_in_one_line():
    failed = [s for s in recorded() if s.error]
    app = make_app(failed)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert drawn(screen.query_one("#figures")).strip() == (
            "No window yet: the server has not answered (see the status line).")
        assert drawn(screen.query_one("#top-ops")).strip() == "No ops yet."
        assert f"0 windows ({len(failed)} failed)" in drawn(screen.query_one("#monitor-head"))
    first = recorded()[0]
    empty = [Sample(time=first.time + i, address=first.address, window_ms=first.window_ms, empty=True)
             for i in range(3)]
    app = make_app(empty)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert drawn(app.screen.query_one("#figures")).strip() == (
            "No activity yet: 3 windows came back empty (nothing ran on the server).")
        assert "3 windows (3 empty)" in drawn(app.screen.query_one("#monitor-head"))


async def test_titles_say_when_the_figures_are_older_than_the_last_window():
    samples = recorded()
    assert samples[-1].error  # the recording ends with the server gone
    last_ok = [s for s in samples if s.ok][-1]
    app = make_app(samples)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stamp = time.strftime("%H:%M:%S", time.localtime(last_ok.time))
        assert app.screen.query_one("#figures").border_title == f"Figures of the last window with activity ({stamp})"
        assert app.screen.query_one("#top-ops").border_title == f"Top ops of the last window with activity ({stamp})"
    app = make_app([s for s in samples if s.ok])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#figures").border_title == "Figures of the last window"


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_history_and_bars_take_the_width_there_is(size):
    samples = recorded()
    last_ok = [s for s in samples if s.ok][-1]
    app = make_app(samples)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        inner = screen.query_one("#figures").content_region.width
        assert screen.spark_width() == inner - 24 - 10 - len("999.999 ms … 999.999 ms") - 6
        figures = drawn(screen.query_one("#figures"))
        series = screen.history.series("step_ms_avg")
        # Every column is there at 80 columns: the whole label and the min … max range.
        rng = f"{min(series):.3f} ms … {max(series):.3f} ms"
        assert "Utilization (duty cycle)" in figures and rng in figures
        top = drawn(screen.query_one("#top-ops"))
        assert top.splitlines()[0].split() == ["op", "time", "share", "count"]
        assert last_ok.top_ops[0]["name"] in top and "…" not in top.splitlines()[0]
        await pilot.resize_terminal(size[0] + 40, size[1])
        await pilot.pause()
        await pilot.pause()
        assert screen.spark_width() == screen.query_one("#figures").content_region.width - 63
        assert screen.spark_width() > inner - 63


async def test_short_notes_fit_a_small_terminal():
    s = sample_from_xspace(xplane("tpu_v6e_inference").read_bytes(), "10.130.0.2:8466", 1000,
                           now=1_795_354_000.0)
    app = make_app([s])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        figures = drawn(app.screen.query_one("#figures"))
        rows = figures.splitlines()[1:]  # under the "min … max" header: nothing cut short
        # (the MXU row has a figure now: the window's FLOPs, labelled so)
        assert "MXU utilization (window FLOPs)" in figures
        assert "no markers" in figures and not any("…" in r for r in rows)
