"""`tputui capture` against a real JAX profiler server in a subprocess (tests/helpers/live_server.py),
plus an in-process fake server for the behaviours a real one does not show on demand."""
from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import xplane
from helpers.live import FakeProfiler, LiveServer, closed_port, empty_response, fake_server, response_with, tputui

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.live.capture import capture, no_trace_message, session_id
from tputui.live.client import LiveError
from tputui.live.figures import window_figures


@pytest.mark.live
def test_capture_writes_a_profile_whose_steps_we_find(server, tmp_path):
    logdir = tmp_path / "logs"
    p = tputui("capture", server.address, str(logdir), "--duration-ms", "1000")
    assert p.returncode == 0, p.stderr
    assert "Capturing 1000 ms from" in p.stderr and "attempt 1/3" in p.stderr
    (run,) = open_logdir(str(logdir)).runs
    assert run.name == os.listdir(logdir / "plugins" / "profile")[0]
    (host,) = run.hosts
    assert host.host == f"127.0.0.1_{server.port}"
    assert host.path.endswith(f"plugins/profile/{run.name}/127.0.0.1_{server.port}.xplane.pb")
    assert f"Wrote {host.path}" in p.stdout
    frame = RunData(run).frame()
    assert "/host:CPU" in frame.raw.plane_name
    # Our overview finds the steps (the live server runs one every few ms) ...
    ov = tputui("export", str(logdir), "--tool", "overview_page")
    assert ov.returncode == 0, ov.stderr
    overview = json.loads(ov.stdout)
    names = [s["step"] for s in overview["steps"]]
    nums = [int(n.split()[-1]) for n in names]
    assert len(names) > 10 and all(n.startswith("train ") for n in names) and nums == sorted(nums)
    # ... and the monitor's figures of the same window are the same steps.
    w = window_figures(frame)
    assert w.step_names == names
    assert w.step_ms == pytest.approx([s["step_time_ms"] for s in overview["steps"]], abs=1e-9)


@pytest.mark.live
def test_grpc_scheme_and_the_options_we_send(server, tmp_path):
    from tputui.proto import profiler_options_pb2

    r = capture([f"grpc://{server.address}"], str(tmp_path), duration_ms=500, attempts=1)
    assert r.attempts == 1 and [h.address for h in r.hosts] == [server.address] and not r.hosts[0].server_side
    frame = RunData(open_logdir(str(tmp_path)).runs[0]).frame()
    blob = frame.plane_stat_map(frame.plane_index("Task Environment"))["profile_options"]
    opts = profiler_options_pb2.ProfileOptions.FromString(blob)  # what the server recorded
    assert opts.duration_ms == 500 and opts.host_tracer_level == 2 and opts.python_tracer_level == 0


@pytest.mark.live
def test_stopped_server_is_one_line_and_exit_2(tmp_path):
    p = tputui("capture", f"127.0.0.1:{closed_port()}", str(tmp_path / "l"), "--duration-ms", "200")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert lines[-1].startswith("tputui: error: failed to connect to 127.0.0.1:")
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "l").exists()


@pytest.mark.live
def test_empty_traces_are_retried_then_reported(tmp_path):
    idle = LiveServer(seconds=120, idle=True)
    try:
        p = tputui("capture", idle.address, str(tmp_path / "l"), "--duration-ms", "200",
                   "--num-tracing-attempts", "2")
    finally:
        idle.stop()
    assert p.returncode == 2
    assert "attempt 1/2" in p.stderr and "attempt 2/2" in p.stderr and "Empty trace; trying again" in p.stderr
    assert p.stderr.strip().splitlines()[-1] == f"tputui: error: {no_trace_message(2)}"
    assert not (tmp_path / "l").exists()  # nothing written for an empty capture


def test_retries_until_a_trace_arrives(tmp_path):
    data = xplane("jax_live_capture").read_bytes()
    fake = FakeProfiler([empty_response(), empty_response(), response_with(data)])
    seen = []
    with fake_server(fake) as addr:
        r = capture([addr], str(tmp_path), duration_ms=100, attempts=3, progress=seen.append)
    assert r.attempts == 3 and len(fake.requests) == 3
    assert [m for m in seen if m.startswith("Capturing")] == [
        f"Capturing 100 ms from {addr} (attempt {i}/3)" for i in (1, 2, 3)]
    assert open(r.hosts[0].path, "rb").read() == response_with(data).xspace.SerializeToString()
    req = fake.requests[0]
    assert req.emit_xspace and req.opts.duration_ms == 100 and req.session_id == r.run
    assert req.repository_root == os.path.join(str(tmp_path), "plugins", "profile")


def test_server_that_ignores_emit_xspace_writes_the_file_itself(tmp_path):
    data = xplane("jax_mlp").read_bytes()
    with fake_server(FakeProfiler(write_server_side=True, xspace_bytes=data)) as addr:
        r = capture([addr], str(tmp_path), duration_ms=100, attempts=1)
    (h,) = r.hosts
    assert h.server_side and open(h.path, "rb").read() == data
    (run,) = open_logdir(str(tmp_path)).runs
    assert run.hosts[0].host == addr.replace(":", "_")


def test_several_workers_share_one_run_and_partial_failure_is_reported(tmp_path):
    data = xplane("jax_live_capture").read_bytes()
    dead = f"127.0.0.1:{closed_port()}"
    with fake_server(FakeProfiler([response_with(data)])) as a, fake_server(FakeProfiler([response_with(data)])) as b:
        r = capture([a, b], str(tmp_path / "ok"), duration_ms=100, attempts=1)
        assert sorted(h.address for h in r.hosts) == sorted([a, b])
        assert len(open_logdir(str(tmp_path / "ok")).runs[0].hosts) == 2
        r = capture([a, dead], str(tmp_path / "partial"), duration_ms=100, attempts=1)
    assert [h.address for h in r.hosts] == [a] and r.failed[dead].startswith("failed to connect")


def test_all_workers_dead_is_not_retried():
    fake_progress = []
    with pytest.raises(LiveError, match="^failed to connect"):
        capture([f"127.0.0.1:{closed_port()}"], "/nonexistent/never-written", duration_ms=100, attempts=5,
                progress=fake_progress.append)
    assert len(fake_progress) == 1


def test_run_names_never_collide(tmp_path):
    t = 1_800_000_000.0
    first = session_id(str(tmp_path), t)
    (tmp_path / "plugins" / "profile" / first).mkdir(parents=True)
    assert session_id(str(tmp_path), t) != first


def test_usage_errors_are_one_line(tmp_path):
    p = tputui("capture", str(tmp_path))
    assert p.returncode == 2 and "expected: tputui capture ADDRESS" in p.stderr
    p = tputui("capture", "nohost", str(tmp_path))
    assert p.returncode == 2 and p.stderr.strip() == (
        "tputui: error: bad address 'nohost': expected host:port or grpc://host:port")


def test_gs_logdir_goes_through_the_gcs_module(monkeypatch):
    """gs:// captures are written by tputui.data.gcs.write_bytes (stand-in module here)."""
    import types

    written = {}
    fake_gcs = types.SimpleNamespace(write_bytes=lambda url, data: written.setdefault(url, data))
    monkeypatch.setitem(sys.modules, "tputui.data.gcs", fake_gcs)
    monkeypatch.setattr("tputui.data.gcs", fake_gcs, raising=False)
    data = xplane("jax_mlp").read_bytes()
    fake = FakeProfiler([response_with(data)])
    with fake_server(fake) as addr:
        r = capture([addr], "gs://bucket/logs", duration_ms=100, attempts=1)
    url = f"gs://bucket/logs/plugins/profile/{r.run}/{addr.replace(':', '_')}.xplane.pb"
    assert list(written) == [url] and r.hosts[0].path == url
    assert fake.requests[0].repository_root == "gs://bucket/logs/plugins/profile"


def test_gs_logdir_without_gcs_support_is_one_clear_line(monkeypatch):
    import tputui.data

    monkeypatch.setitem(sys.modules, "tputui.data.gcs", None)  # import fails
    monkeypatch.delattr(tputui.data, "gcs", raising=False)
    with fake_server(FakeProfiler([response_with(xplane("jax_mlp").read_bytes())])) as addr:
        with pytest.raises(LiveError, match=r"^cannot write gs://b/l/plugins/profile/.*: capturing into remote logdirs"):
            capture([addr], "gs://b/l", duration_ms=100, attempts=1)


def test_empty_capture_says_start_later_or_profile_longer(tmp_path):
    """Every attempt empty: one line with the guides' advice (the program was not running yet, or
    the window was too short), nothing written; the CLI names its flags."""
    from tputui.live.capture import EmptyCaptureError

    fake = FakeProfiler([empty_response(), empty_response()])
    with fake_server(fake) as addr:
        with pytest.raises(EmptyCaptureError) as e:
            capture([addr], str(tmp_path / "l"), duration_ms=100, attempts=2)
    assert e.value.attempts == 2 and len(fake.requests) == 2
    assert str(e.value) == ("no trace events after 2 attempt(s): start the capture later (after the program is "
                            "running) or profile for longer (--duration-ms; --num-tracing-attempts tries again)")
    assert not (tmp_path / "l").exists()
