"""Continuous profiling against a real JAX profiler server (tests/helpers/live_server.py): `tputui
capture --continuous` saves the ring buffer's snapshot as a run our tools read, and the monitor's
window source uses snapshots there and short captures on a server without continuous profiling
(an in-process fake that answers only Profile)."""
from __future__ import annotations

import json

import pytest
from conftest import xplane
from helpers.live import FakeProfiler, fake_server, response_with, tputui

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.xspace import decode
from tputui.live.client import AlreadyRunningError, LiveError, ProfilerClient, TracerOptions, profile_request
from tputui.live.monitor import MonitorSession
from tputui.live.snapshots import SnapshotSource, capture_continuous


@pytest.mark.live
def test_capture_continuous_saves_the_snapshot_as_a_run(server, tmp_path):
    logdir = tmp_path / "logs"
    p = tputui("capture", server.address, str(logdir), "--continuous", "--duration-ms", "1500")
    assert p.returncode == 0, p.stderr
    assert "Continuous profiling on 1 worker(s)" in p.stderr
    (run,) = open_logdir(str(logdir)).runs
    (host,) = run.hosts
    assert host.path.endswith(f"127.0.0.1_{server.port}.xplane.pb") and f"Wrote {host.path}" in p.stdout
    frame = RunData(run).frame()
    assert "/host:CPU" in frame.raw.plane_name and frame.num_events > 100
    ov = tputui("export", str(logdir), "--tool", "overview_page")
    assert ov.returncode == 0, ov.stderr
    steps = json.loads(ov.stdout)["steps"]
    assert len(steps) > 5 and all(s["step"].startswith("train ") for s in steps)
    # Stopped afterwards: a new continuous session starts cleanly and a snapshot follows it.
    with ProfilerClient(server.address) as c:
        src = SnapshotSource(server.address, 300, TracerOptions())
        reply = src.window(c)
        assert src.mode == "snapshot" and reply.xspace and decode(reply.xspace).num_events > 0
        src.close()


@pytest.mark.live
def test_monitor_windows_come_from_snapshots(server):
    session = MonitorSession(server.address, duration_ms=400, use_monitor_rpc=False)
    samples = list(session.samples(num_queries=3))
    session.stop()
    assert session._windows.mode == "snapshot"
    assert [s.ok for s in samples] == [True, True, True], [s.error for s in samples]
    assert any(s.steps for s in samples)
    assert session.last_xspace and decode(session.last_xspace).num_events > 0


def test_monitor_falls_back_to_captures_without_continuous_profiling():
    data = xplane("jax_mlp").read_bytes()
    fake = FakeProfiler(responses=[response_with(data)])
    with fake_server(fake) as address:
        session = MonitorSession(address, duration_ms=100, use_monitor_rpc=False)
        (sample,) = list(session.samples(num_queries=1))
        assert session._windows.mode == "capture" and sample.ok and len(fake.requests) == 1
        with pytest.raises(LiveError, match="does not support continuous profiling"):
            capture_continuous([address], "/nonexistent-never-written", duration_ms=100)


@pytest.mark.live
def test_someone_elses_continuous_session_is_read_and_left_running(server, tmp_path):
    with ProfilerClient(server.address) as owner:
        owner.start_continuous(profile_request(server.address, 1000, TracerOptions()))
        try:
            result = capture_continuous([server.address], str(tmp_path), duration_ms=500)
            (host,) = result.hosts
            assert host.size > 0 and decode(open(host.path, "rb").read()).num_events > 0
            # Still running (not stopped by us): starting again is refused.
            with pytest.raises(AlreadyRunningError):
                owner.start_continuous(profile_request(server.address, 1000, TracerOptions()))
        finally:
            owner.stop_continuous()
