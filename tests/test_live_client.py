"""The ProfilerService client: addresses, requests, and one-line errors for each failure."""
from __future__ import annotations

import pytest
from conftest import xplane
from helpers.live import FakeProfiler, closed_port, fake_server, response_with

from tputui.live import client
from tputui.live.client import (
    LiveError,
    ProfilerClient,
    ProfileReply,
    TracerOptions,
    UnimplementedError,
    host_file_name,
    normalize_address,
    parse_addresses,
    profile_request,
    trace_is_empty,
)
from tputui.proto import profiler_service_pb2 as pb
from tputui.proto import xplane_pb2


@pytest.mark.parametrize("text,want", [
    ("localhost:9012", "localhost:9012"), ("grpc://10.0.0.2:8466", "10.0.0.2:8466"),
    ("grpc://host.example:1/", "host.example:1"), ("[::1]:9012", "[::1]:9012"),
])
def test_address_forms(text, want):
    assert normalize_address(text) == want


@pytest.mark.parametrize("bad", ["localhost", "http://h:1", "h:0", "h:70000", "h:port", ":9", "a b:1"])
def test_bad_addresses_say_what_is_expected(bad):
    with pytest.raises(LiveError, match="expected host:port or grpc://host:port"):
        normalize_address(bad)


def test_address_list_and_file_names():
    assert parse_addresses(" h1:1, grpc://h2:2,h1:1 ") == ["h1:1", "h2:2"]
    with pytest.raises(LiveError, match="no profiler address"):
        parse_addresses(" , ")
    assert host_file_name("localhost:9015") == "localhost_9015"
    assert host_file_name("[::1]:9015") == "__1_9015"


def test_profile_request_sets_duration_in_options_and_asks_for_the_xspace():
    r = profile_request("h:1", 1500, TracerOptions(host_tracer_level=3, python_tracer_level=1,
                                                    include_dataset_ops=False),
                        session_id="2026_01_02_03_04_05", repository_root="/l/plugins/profile")
    assert r.opts.duration_ms == 1500 and r.duration_ms == 1500  # servers read opts.duration_ms
    assert r.emit_xspace and r.host_name == "h:1" and r.session_id == "2026_01_02_03_04_05"
    assert r.repository_root == "/l/plugins/profile"
    assert (r.opts.host_tracer_level, r.opts.device_tracer_level, r.opts.python_tracer_level) == (3, 1, 1)
    assert not r.opts.include_dataset_ops and r.opts.version == 1


def test_no_server_is_failed_to_connect():
    with ProfilerClient(f"127.0.0.1:{closed_port()}") as c:
        with pytest.raises(LiveError, match=r"^failed to connect to 127\.0\.0\.1:\d+: no profiler server") as e:
            c.profile(profile_request("x", 100, TracerOptions()))
    assert "\n" not in str(e.value)


def test_deadline_exceeded(monkeypatch):
    monkeypatch.setattr(client, "PROFILE_GRACE_S", 0.2)
    fake = FakeProfiler([pb.ProfileResponse()], delay_s=2.0)
    with fake_server(fake) as addr, ProfilerClient(addr) as c:
        with pytest.raises(LiveError, match=r"capture on 127\.0\.0\.1:\d+: deadline exceeded \(no answer within 0\.3 s"):
            c.profile(profile_request(addr, 100, TracerOptions()))


def test_unimplemented_monitor_is_its_own_error():
    with fake_server(FakeProfiler()) as addr, ProfilerClient(addr) as c:
        with pytest.raises(UnimplementedError, match="does not implement it"):
            c.monitor(100, 2)


def reply(resp: pb.ProfileResponse) -> ProfileReply:
    return ProfileReply.from_bytes(resp.SerializeToString())


def test_empty_trace_detection():
    assert trace_is_empty(reply(pb.ProfileResponse(empty_trace=True)))
    xs = xplane_pb2.XSpace()
    xs.planes.add(name="/host:CPU").lines.add(name="python")
    assert trace_is_empty(reply(response_with(xs.SerializeToString())))  # planes but no event
    xs.planes[0].lines[0].events.add(metadata_id=1, offset_ps=0, duration_ps=5)
    assert not trace_is_empty(reply(response_with(xs.SerializeToString())))
    assert not trace_is_empty(reply(pb.ProfileResponse()))  # server-side write: no XSpace, not empty


def test_reply_slices_the_xspace_bytes_unparsed():
    data = xplane("jax_mlp").read_bytes()
    resp = pb.ProfileResponse(empty_trace=False)
    resp.tool_data.add(name="x", data=b"abc")
    resp.xspace.ParseFromString(data)
    r = reply(resp)
    assert r.xspace == resp.xspace.SerializeToString() and not r.empty_trace and r.has_events()
    with pytest.raises(LiveError, match="not a readable ProfileResponse"):
        ProfileReply.from_bytes(resp.SerializeToString()[:-10])


def test_live_core_imports_without_textual():
    """tputui.live is the headless core of capture / monitor: it must not pull Textual in."""
    import subprocess
    import sys

    code = ("import sys; import tputui.live.client, tputui.live.capture, tputui.live.monitor, "
            "tputui.live.tpu_resolve, tputui.live.figures; print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_a_call_issued_after_cancel_is_cancelled_at_once():
    """cancel() may land while a call is being issued (the server already has the request, the call
    is not yet recorded as in flight): the call must still end now, not wait for the server's answer.
    The server holds its answer until the test releases it: CancelledError must come first."""
    import threading

    from tputui.live.client import CancelledError

    hold = threading.Event()
    fake = FakeProfiler([response_with(xplane("jax_mlp").read_bytes())], hold=hold)
    try:
        with fake_server(fake) as addr, ProfilerClient(addr) as c:
            c.cancel()
            with pytest.raises(CancelledError, match="cancelled"):
                c.profile(profile_request(addr, 100, TracerOptions()))
            assert fake.answered == 0  # returned without the server's answer (it is still held)
            assert c.cancelled
    finally:
        hold.set()


def test_every_profile_window_has_a_session_id():
    """A stop ends a window by naming its session (Terminate): a request without one gets its own."""
    fake = FakeProfiler([response_with(xplane("jax_mlp").read_bytes())])
    with fake_server(fake) as addr, ProfilerClient(addr) as c:
        c.profile(profile_request(addr, 100, TracerOptions()))
        c.profile(profile_request(addr, 100, TracerOptions(), session_id="mine"))
    first, second = (r.session_id for r in fake.requests)
    assert first.startswith("tputui-") and second == "mine"
