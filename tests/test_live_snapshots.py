"""`tputui capture --continuous` against a real JAX profiler server (tests/helpers/live_server.py):
the ring buffer's snapshot saved as a run our tools read, the session stopped afterwards, someone
else's session read and left running; and a server without continuous profiling (an in-process
fake that answers only Profile) refused in one line."""
from __future__ import annotations

import json

import pytest
from conftest import xplane
from helpers.live import FakeProfiler, fake_server, response_with, tputui

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.xspace import decode
from tputui.live.client import LiveError, ProfilerClient, ServerBusyError, TracerOptions, profile_request
from tputui.live.snapshots import capture_continuous


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
    # Stopped afterwards: a new continuous session starts cleanly.
    with ProfilerClient(server.address) as c:
        c.start_continuous(profile_request(server.address, 300, TracerOptions()))
        c.stop_continuous()


def test_server_without_continuous_profiling_is_one_line(tmp_path):
    data = xplane("jax_mlp").read_bytes()
    fake = FakeProfiler(responses=[response_with(data)])
    with fake_server(fake) as address:
        with pytest.raises(LiveError, match="does not support continuous profiling"):
            capture_continuous([address], str(tmp_path), duration_ms=100)
        p = tputui("capture", address, str(tmp_path), "--continuous", "--duration-ms", "100")
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "use a plain `tputui capture`" in p.stderr
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.live
def test_someone_elses_continuous_session_is_read_and_left_running(server, tmp_path):
    with ProfilerClient(server.address) as owner:
        owner.start_continuous(profile_request(server.address, 1000, TracerOptions()))
        try:
            result = capture_continuous([server.address], str(tmp_path), duration_ms=500)
            (host,) = result.hosts
            assert host.size > 0 and decode(open(host.path, "rb").read()).num_events > 0
            # Still running (not stopped by us): starting again is refused.
            with pytest.raises(ServerBusyError):
                owner.start_continuous(profile_request(server.address, 1000, TracerOptions()))
        finally:
            owner.stop_continuous()
