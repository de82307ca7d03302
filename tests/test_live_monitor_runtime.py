"""The monitor on a TPU VM: libtpu's runtime metrics per chip beside each worker's windows.

Peers are real servers on 127.0.0.1: a gRPC server serving the RuntimeMetricService proto with
libtpu's answer shapes (tests/helpers/libtpu_server.py), the real JAX profiler server for the
snapshot path, and an in-process ProfilerService answering a fixture window. Snapshot tests draw
readings read from that server and the TPU v6e fixture's window (times pinned)."""
from __future__ import annotations

import dataclasses
import time

import pytest
from conftest import xplane
from helpers.libtpu_server import FakeLibtpu, libtpu_server
from helpers.live import FakeProfiler, LiveServer, closed_port, fake_server, response_with, tputui
from helpers.pane import drawn, settle, utc  # noqa: F401 (utc: a fixture, used by every test here)

from tputui.live.feed import LiveFeed
from tputui.live.monitor import MonitorSession, Sample, sample_from_xspace
from tputui.live.monitor_state import MonitorState
from tputui.live.runtime_metrics import RuntimeMetricsClient, RuntimePoller, RuntimeReading
from tputui.monitor_app import MonitorApp
from tputui.screens.monitor import MonitorScreen

SIZE = (120, 40)
T0 = 1_795_354_000.0
WORKERS = ["10.130.0.2:9012", "10.130.0.3:9012"]

# Timestamps on screen are local time: pinned, so snapshots do not depend on the zone.
pytestmark = pytest.mark.usefixtures("utc")


def readings(n: int = 12, layout: str = "v5e-4", **fake) -> list[RuntimeReading]:
    """`n` reads of the loopback libtpu server (values move each read), times pinned a second apart."""
    with libtpu_server(FakeLibtpu(layout, **fake)) as addr, RuntimeMetricsClient(addr) as c:
        out = [c.read() for _ in range(n)]
    return [dataclasses.replace(r, time=T0 + i, address="localhost:8431") for i, r in enumerate(out)]


def windows() -> list[Sample]:
    """Both workers' windows: the TPU v6e fixture's device figures (an inference profile: no steps)
    with the step figures of the real JAX capture fixture; the second worker's steps 30% slower."""
    s = sample_from_xspace(xplane("tpu_v6e_inference").read_bytes(), WORKERS[0], 1000, now=T0 + 5,
                           source="snapshot")
    steps = sample_from_xspace(xplane("jax_live_capture").read_bytes(), WORKERS[0], 1000)
    fields = ("steps", "step_ms_avg", "step_ms_min", "step_ms_max", "infeed_pct_avg", "infeed_pct_min", "infeed_pct_max")
    s = dataclasses.replace(s, **{f: getattr(steps, f) for f in fields})
    slow = dataclasses.replace(s, address=WORKERS[1], step_ms_avg=s.step_ms_avg * 1.3, time=T0 + 6)
    return [s, slow]


def tpu_vm_items() -> list:
    r = readings()
    w = windows()
    return r[:6] + [w[0]] + r[6:9] + [w[1]] + r[9:]


def make_app(items: list, addresses=WORKERS, runtime=True) -> MonitorApp:
    return MonitorApp(MonitorScreen(lambda: iter(items), addresses=list(addresses), window_ms=1000, runtime=runtime))


# --- state ---------------------------------------------------------------------------------
def test_state_keeps_chip_series_and_names_the_slowest_worker():
    items = tpu_vm_items()
    state = MonitorState(WORKERS, runtime=True)
    for x in items:
        state.add(x)
    rs = [x for x in items if isinstance(x, RuntimeReading)]
    assert state.chip_series(2, "duty_cycle_pct") == [r.chips[2].duty_cycle_pct for r in rs]
    assert state.last_good_reading is rs[-1]
    assert state.slowest().address == WORKERS[1]
    assert state.counts() == (2, 0, 0)


# --- the pane ------------------------------------------------------------------------------
async def test_pane_shows_a_row_per_chip_and_per_worker():
    items = tpu_vm_items()
    last = [x for x in items if isinstance(x, RuntimeReading)][-1]
    app = make_app(items)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        chips = drawn(screen.query_one("#chips")).splitlines()
        assert chips[0].split()[:4] == ["chip", "HBM", "used", "/"]
        for c in last.chips:
            row = next(line for line in chips if line.split() and line.split()[0] == str(c.chip))
            assert f"{c.hbm_used / 2**30:.1f} / {c.hbm_total / 2**30:.1f} GiB" in row
            assert f"{c.duty_cycle_pct:.1f}%" in row
            assert f"{c.hlo_exec_us.p50 / 1000:.2f} ms / {c.hlo_exec_us.p999 / 1000:.2f} ms" in row
        assert any(line.startswith("DCN transfer latency  p50 ") for line in chips)
        workers = drawn(screen.query_one("#workers"))
        slow_row = next(line for line in workers.splitlines() if WORKERS[1] in line)
        assert "◀ slowest" in slow_row and "◀ slowest" not in workers.replace(slow_row, "")
        assert screen.query_one("#figures").border_title == f"Figures of the last window of {WORKERS[0]}"
        await pilot.press("W")
        assert screen.address == WORKERS[1]
        assert screen.query_one("#figures").border_title == f"Figures of the last window of {WORKERS[1]}"
        assert f"{windows()[1].step_ms_avg:.3f} ms" in drawn(screen.query_one("#figures"))


@pytest.mark.parametrize("size, columns", [((120, 40), ["TC util", "queue", "HLO p50 / p99.9"]),
                                           ((80, 24), ["TC util", "queue"])])
async def test_optional_chip_columns_where_served_and_where_they_fit(size, columns):
    items = readings(2, extra={"tpu.runtime.tensorcore.utilization.percent": [11.0, 22.0, 33.0, 44.0]})
    app = make_app(items, addresses=[], runtime=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chips = drawn(app.screen.query_one("#chips")).splitlines()
        head = chips[0]
        assert [c for c in ["TC util", "queue", "HLO p50 / p99.9"] if c in head] == columns
        assert "11.0%" in chips[1] and "44.0%" in chips[4]  # chips 0 and 3: their TensorCore utilization
        assert not any("…" in line for line in chips)


async def test_runtime_errors_show_in_the_status_line_and_the_pane_keeps_the_last_good_reading():
    r = readings(3)
    now = time.time()  # the retry counts down from the failure: a failure that just happened
    bad = RuntimeReading(now, "localhost:8431", error="no libtpu runtime metrics at localhost:8431: no process "
                         "is using the TPU on this VM (libtpu serves them only while a TPU job runs)", retry_in_s=2.0)
    app = make_app(r + [bad])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = app.screen.query_one("#status")
        assert status.has_class("error")
        stamp = time.strftime("%H:%M:%S", time.localtime(now))
        assert " ".join(drawn(status).split()) in (f"✖ {stamp} {bad.error}; retrying in {n} s" for n in (2, 1))
        good = time.strftime("%H:%M:%S", time.gmtime(T0 + 2))
        assert app.screen.query_one("#chips").border_title.endswith(f"(as of {good})")
    app = make_app([bad])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert drawn(app.screen.query_one("#chips")).strip() == (
            "No runtime metrics yet: libtpu has not answered (see the status line).")


# The deadline is short only where the slow service is the point; elsewhere it is generous, so a
# loaded machine cannot turn a malformed or missing service into a timeout.
@pytest.mark.parametrize("fake, timeout, want", [
    (FakeLibtpu(delay_s=1.0), 0.2,
     r"^✖ \d\d:\d\d:\d\d libtpu runtime metrics at 127\.0\.0\.1:\d+: no answer within 0\.2 s"),
    (FakeLibtpu(malformed=True), 5.0,
     r"^✖ .* answered 'tpu\.runtime\.hbm\.memory\.usage\.bytes' with something that is not a MetricResponse"),
    (None, 5.0, r"^✖ .* no libtpu runtime metrics at 127\.0\.0\.1:\d+: no process is using the TPU"),
])
async def test_dead_slow_and_malformed_services_are_one_line_and_the_pane_keeps_running(fake, timeout, want):
    """A real feed: the loopback libtpu server (or nothing) and a worker answering a fixture window."""
    import re

    data = xplane("jax_live_capture").read_bytes()
    with fake_server(FakeProfiler([response_with(data)])) as worker:
        if fake is None:
            ctx, metrics = None, f"127.0.0.1:{closed_port()}"
        else:
            ctx = libtpu_server(fake)
            metrics = ctx.__enter__()
        try:
            feed = LiveFeed([MonitorSession(worker, 100, interval_s=0.1)], RuntimePoller(metrics, 0.1, timeout=timeout))
            app = MonitorApp(MonitorScreen(lambda: feed.items(), addresses=[worker], window_ms=100, feed=feed,
                                           runtime=True))
            async with app.run_test(size=SIZE) as pilot:
                screen = app.screen
                for _ in range(200):
                    await pilot.pause(0.05)
                    h = screen.state.workers[worker]
                    if screen.state.last_reading is not None and h.last_ok is not None and len(h) >= 2:
                        break
                assert screen.state.last_reading.error and screen.state.workers[worker].last_ok.steps == 325
                status = screen.query_one("#status")
                line = " ".join(drawn(status).split())  # the one line, as wrapped on screen
                assert status.has_class("error") and re.match(want, line), line
                assert "\n" not in screen.state.last_reading.error
                await pilot.press("q")
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    assert feed.stopped


@pytest.mark.live
async def test_loopback_pair_two_real_workers_and_libtpu_live(server):
    """Done-when: per-chip HBM and duty cycle live, step time from profile windows, two workers at once."""
    second = LiveServer(seconds=120)
    try:
        with libtpu_server(FakeLibtpu("v5e-4")) as metrics:
            sessions = [MonitorSession(a, 300, interval_s=0.5) for a in (server.address, second.address)]
            feed = LiveFeed(sessions, RuntimePoller(metrics, 0.2))
            app = MonitorApp(MonitorScreen(lambda: feed.items(), addresses=feed.addresses, window_ms=300, feed=feed,
                                           runtime=True))
            async with app.run_test(size=SIZE) as pilot:
                state = app.screen.state
                for _ in range(600):
                    await pilot.pause(0.05)
                    if len(state.readings) >= 5 and all(len(h) >= 2 for h in state.workers.values()):
                        break
                duty = [[c.duty_cycle_pct for c in r.chips] for r in state.readings]
                assert len(duty) >= 5 and len({tuple(d) for d in duty}) > 1  # live: the values moved
                chips = drawn(app.screen.query_one("#chips"))
                for c in state.last_good_reading.chips:
                    assert f"{c.duty_cycle_pct:.1f}%" in chips
                for a, h in state.workers.items():
                    ok = h.last_ok
                    assert ok.source == "profile" and ok.steps > 10 and ok.step_ms_avg > 0, (a, ok)
                workers = drawn(app.screen.query_one("#workers"))
                assert server.address in workers and second.address in workers and "◀ slowest" in workers
                await pilot.press("q")
        # the monitor ended its windows on the servers: a capture is possible again at once
        p = tputui("capture", server.address, "/dev/null/never", "--duration-ms", "100")
        assert "another profiling session" not in p.stderr
    finally:
        second.stop()


# --- the command line ----------------------------------------------------------------------
@pytest.mark.live
def test_plain_lines_for_chips_and_two_workers(server):
    """The real JAX server and an in-process one answering the fixture window (325 steps)."""
    fixture = FakeProfiler([response_with(xplane("jax_live_capture").read_bytes())])
    with libtpu_server(FakeLibtpu("v3-8")) as metrics, fake_server(fixture) as other:
        p = tputui("monitor", f"{server.address},{other}", "--runtime-metrics", metrics, "--plain",
                   "--num-queries", "8", "--metrics-interval", "0.3", "--profile-every", "0.5", "--duration-ms", "300")
    assert p.returncode == 0, p.stderr
    blocks = [b.splitlines() for b in p.stdout.strip().split("\n\n")]
    runtime = [b for b in blocks if b[1].startswith("libtpu runtime metrics")]
    assert len(runtime) == 8
    assert runtime[0][1] == f"libtpu runtime metrics ({metrics}): 4 chips, 2 TensorCores per chip"
    assert [line.split(":")[0] for line in runtime[0][2:6]] == ["Chip 0", "Chip 1", "Chip 2", "Chip 3"]
    assert "HBM " in runtime[0][2] and "duty cycle " in runtime[0][2] and "HLO execution p50 " in runtime[0][2]
    by_worker = {a: [b for b in blocks if b[1] == f"Worker: {a}"] for a in (server.address, other)}
    assert all(by_worker.values()), p.stdout
    for bs in by_worker.values():
        assert any(line.startswith("Step time: ") for line in bs[0]), bs[0]
    assert "over 325 steps" in "\n".join(by_worker[other][0])
    assert any(line.startswith("Slowest worker: ") for b in blocks for line in b)
    assert f"monitoring 2 workers: {server.address}, {other}" in p.stderr


def test_no_libtpu_with_plain_is_one_line_and_exit_2():
    dead = f"127.0.0.1:{closed_port()}"
    with fake_server(FakeProfiler([response_with(xplane("jax_mlp").read_bytes())])) as worker:
        p = tputui("monitor", worker, "--runtime-metrics", dead, "--plain", "--num-queries", "1")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == (
        f"tputui: error: no libtpu runtime metrics at {dead}: no process is using the TPU on this VM "
        "(libtpu serves them only while a TPU job runs)")
    assert "Traceback" not in p.stderr


def test_no_address_on_a_tpu_vm_follows_local(monkeypatch, capsys):
    """On a TPU VM `tputui monitor` alone means --tpu local: the local profiler ports and libtpu."""
    from tputui import cli
    from tputui.live import tpu_resolve

    seen = {}

    def fake_feed(sessions, poller=None):
        seen["addresses"], seen["metrics"] = [s.address for s in sessions], poller.address
        seen["every"] = sessions[0].interval_s
        raise SystemExit(0)

    monkeypatch.setattr(tpu_resolve, "on_tpu_vm", lambda: True)
    monkeypatch.setattr(tpu_resolve, "PROFILER_PORTS", (closed_port(), closed_port()))
    monkeypatch.setattr(tpu_resolve, "PROBE_TIMEOUT_S", 0.1)
    monkeypatch.setattr("tputui.live.feed.LiveFeed", fake_feed)
    with pytest.raises(SystemExit):
        cli.main(["monitor", "--plain"])
    err = capsys.readouterr().err
    assert "on a TPU VM: following this VM's chips and profiler server (--tpu local)" in err
    assert "no profiler server answered on localhost ports " in err
    assert seen["metrics"] == "localhost:8431" and seen["every"] == 10.0
    assert seen["addresses"] == [f"localhost:{tpu_resolve.PROFILER_PORTS[0]}"]


# --- snapshots -----------------------------------------------------------------------------
def test_snapshot_tpu_vm(snap_compare):
    assert snap_compare(make_app(tpu_vm_items()), terminal_size=SIZE, run_before=settle)


def test_snapshot_tpu_vm_80x24(snap_compare):
    assert snap_compare(make_app(tpu_vm_items()), terminal_size=(80, 24), run_before=settle)


def test_snapshot_tpu_vm_no_color(snap_compare, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(make_app(tpu_vm_items()), terminal_size=SIZE, run_before=settle)


def test_snapshot_tpu_vm_light_theme(snap_compare):
    app = make_app(tpu_vm_items())
    app.theme = "textual-light"  # before it runs: no repaint from one theme to the other in the picture
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_the_retry_countdown_counts_down():
    from tputui.screens.monitor import retry_text

    assert retry_text(100.0, 5.0, 100.2) == "; retrying in 5 s"
    assert retry_text(100.0, 5.0, 102.5) == "; retrying in 3 s"  # it was '5 s' until the next try
    assert retry_text(100.0, 5.0, 105.1) == "; retrying now"
    assert retry_text(100.0, None, 101.0) == ""
