"""`tputui monitor` against a real JAX profiler server: --plain cycles whose step times match the
windows they were computed from, a stopped server, a server that dies mid-monitor, and the
Monitor RPC for servers that implement it (in-process fake)."""
from __future__ import annotations

import re

import pytest
from conftest import xplane
from helpers.live import FakeProfiler, LiveServer, closed_port, fake_server, response_with, tputui

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.live import monitor
from tputui.live.client import LiveError
from tputui.live.monitor import MonitorSession, Sample
from tputui.live.plain import plain_lines, run_plain
from tputui.proto import profiler_service_pb2 as pb
from tputui.tools import get_tool

STEP_LINE = re.compile(r"^Step time: ([\d.]+)ms \(avg\), ([\d.]+)ms \(min\), ([\d.]+)ms \(max\) over (\d+) steps$")



@pytest.mark.live
def test_plain_step_times_match_the_captured_windows(server, tmp_path):
    keep = tmp_path / "windows"
    p = tputui("monitor", server.address, "--plain", "--num-queries", "2", "--duration-ms", "800",
               "--save-windows", str(keep))
    assert p.returncode == 0, p.stderr
    cycles = [c for c in p.stdout.strip().split("\n\n")]
    assert len(cycles) == 2
    printed = []
    for c in cycles:
        lines = c.splitlines()
        assert lines[0].startswith("Timestamp: ")
        assert lines[1] == "Device type: CPU (host only: no TPU or GPU in the trace)"
        (m,) = [STEP_LINE.match(ln) for ln in lines if ln.startswith("Step time")]
        printed.append(m.groups())
    # Each cycle's window was saved as a run; our overview of that profile shows the printed step
    # times (to the 3 decimals printed: 5e-4 ms).
    runs = sorted(open_logdir(str(keep)).runs, key=lambda r: r.name)
    assert len(runs) == 2
    for run, (avg, lo, hi, n) in zip(runs, printed):
        st = get_tool("overview_page").analyze_fn()(RunData(run)).to_json()["step_time_ms"]
        assert int(n) == st["count"] > 10
        assert float(avg) == pytest.approx(st["avg"], abs=5e-4)
        assert float(lo) == pytest.approx(st["min"], abs=5e-4)
        assert float(hi) == pytest.approx(st["max"], abs=5e-4)


@pytest.mark.live
def test_level_1_prints_device_and_utilization_only(server):
    p = tputui("monitor", f"grpc://{server.address}", "--plain", "--num-queries", "1",
               "--monitoring-level", "1", "--duration-ms", "300")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["Timestamp", "Device type",
                                                 "Utilization of TPU Matrix Units (higher is better)"]


def test_stopped_server_is_one_line_and_exit_2():
    p = tputui("monitor", f"127.0.0.1:{closed_port()}", "--plain", "--num-queries", "2", "--duration-ms", "100")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].startswith("tputui: error: failed to connect to 127.0.0.1:")
    assert "Traceback" not in p.stderr


@pytest.mark.live
def test_server_that_dies_mid_monitor_is_retried_with_back_off(monkeypatch):
    monkeypatch.setattr(monitor, "BACKOFF_S", (0.05, 0.1, 0.2))
    victim = LiveServer(seconds=120)
    try:
        session = MonitorSession(victim.address, duration_ms=300)
        stream = session.samples(num_queries=5)
        first = next(stream)
        assert first.ok and first.steps > 0 and session.last_xspace
        victim.stop()
        errors = [next(stream) for _ in range(4)]
    finally:
        victim.stop()
    assert all(e.error and e.error.startswith(f"failed to connect to {victim.address}") for e in errors)
    assert [e.retry_in_s for e in errors] == [0.05, 0.1, 0.2, None]  # the last query does not wait
    text = plain_lines(errors[0], 2)
    assert text[1] == f"Error: {errors[0].error}; retrying in 0.05 s"


def test_plain_exit_status_when_the_last_cycle_failed(monkeypatch):
    """After a good first cycle, failures are reported and retried; a run that ends failed exits 2."""
    data = xplane("jax_live_capture").read_bytes()
    monkeypatch.setattr(monitor, "BACKOFF_S", (0.01,))
    import io

    with fake_server(FakeProfiler([response_with(data)])) as addr:
        session = MonitorSession(addr, duration_ms=100)
        out = io.StringIO()
        assert run_plain(session, 1, out=out, err=io.StringIO()) == 0
        assert "over 325 steps" in out.getvalue()
    with pytest.raises(LiveError, match="^failed to connect"):
        run_plain(session, 2, out=out, err=io.StringIO())


def test_monitor_rpc_used_where_implemented():
    res = pb.MonitorResponse(data="Timestamp: 10:20:30\nTPU type: TPU v2\n")
    r = res.monitor_result
    r.response_type = r.UTIL_IDLE_STEP
    r.device_idle_time_percent, r.matrix_unit_utilization_percent = 17.9, 0.058
    r.step_time_ms_avg, r.step_time_ms_min, r.step_time_ms_max = 70.6, 70.1, 71.2
    fake = FakeProfiler(monitor=res)
    with fake_server(fake) as addr:
        s = MonitorSession(addr, duration_ms=100).query()
    assert fake.requests == []  # no Profile call
    assert (s.source, s.device_type, s.idle_pct, s.mxu_pct) == ("monitor", "TPU v2", 17.9, 0.058)
    lines = plain_lines(s, 2)
    # The figure, then where it comes from (issue #31: the live MXU figure names its source).
    assert "Utilization of TPU Matrix Units (higher is better): 0.058% (the server's Monitor (performance counters))" \
        in lines
    assert "Step time: 70.600ms (avg), 70.100ms (min), 71.200ms (max)" in lines
    assert "TPU idle time (lower is better): 17.9%" in lines


def test_unimplemented_monitor_falls_back_to_profile_once():
    data = xplane("jax_mlp").read_bytes()
    fake = FakeProfiler([response_with(data)])
    with fake_server(fake) as addr:
        session = MonitorSession(addr, duration_ms=100)
        a, b = session.query(), session.query()
    assert a.source == b.source == "profile" and a.steps == 18 and len(fake.requests) == 2
    assert session._use_monitor is False
    # each window its own session id, never reused (what a stop's Terminate names)
    ids = [r.session_id for r in fake.requests]
    assert all(ids) and ids[0] != ids[1]


def test_sample_round_trips_through_json():
    s = monitor.sample_from_xspace(xplane("jax_live_capture").read_bytes(), "h:1", 1000, now=5.0)
    assert Sample.from_json(s.to_json()) == s
    assert s.top_ops and s.top_ops[0]["name"] == "ynn_fusion.1"


def test_stop_cancels_the_capture_in_flight():
    """Quitting the pane never waits out a slow server: on one without Terminate (this fake) the
    window in flight runs out (its 100 ms plus client.RUN_OUT_SLACK_S), then the call is cancelled;
    the real server's Terminate is in test_live_exit_paths.py."""
    import threading

    fake = FakeProfiler([response_with(xplane("jax_mlp").read_bytes())], delay_s=5.0)
    with fake_server(fake) as addr:
        session = MonitorSession(addr, duration_ms=100)
        got: list = []
        t = threading.Thread(target=lambda: got.extend(session.samples(3)))
        t.start()
        for _ in range(100):  # wait until the request reached the server
            if fake.requests:
                break
            threading.Event().wait(0.02)
        session.stop()
        t.join(timeout=10)
        assert not t.is_alive() and got == []  # cancelled: no error sample, no more cycles


def test_a_window_without_terminate_is_run_out_and_said():
    """A server without Terminate (this fake): the stopped window runs out before the command
    exits, and the wait is said ("finishing the profile window on ..., N s…")."""
    import threading

    from tputui.live.feed import LiveFeed

    fake = FakeProfiler([response_with(xplane("jax_mlp").read_bytes())], delay_s=6.0)
    with fake_server(fake) as addr:
        feed = LiveFeed([MonitorSession(addr, duration_ms=1500)])
        items = feed.items(1)
        threading.Thread(target=lambda: list(items), daemon=True).start()
        for _ in range(200):  # until the window is on the server
            if fake.requests:
                break
            threading.Event().wait(0.02)
        feed.stop()
        said: list[str] = []
        assert feed.wait_ended(say=said.append)
    assert said and said[0].startswith(f"finishing the profile window on {addr}, ")
