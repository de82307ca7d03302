"""Monitor windows through continuous profiling on the real JAX profiler server: one short session
per window (start, wait, GetSnapshot, stop) gives a window of the asked length, where a long-lived
session's snapshot holds everything since it started (up to a ring of about 10 s)."""
from __future__ import annotations

import threading
import time

import pytest

from tputui.data.xspace import decode
from tputui.live.client import ProfilerClient, profile_request, snapshot_window
from tputui.live.monitor import MONITOR_TRACER, MonitorSession


def span_s(xspace: bytes) -> float:
    ev = decode(xspace).events
    return (ev["start_ps"].max() - ev["start_ps"].min()) / 1e12


@pytest.mark.live
def test_a_window_is_as_long_as_asked_and_tracing_stops_after_it(server):
    req = profile_request(server.address, 500, MONITOR_TRACER)
    with ProfilerClient(server.address) as c:
        reply = snapshot_window(c, req, threading.Event().wait)
        assert 0.3 < span_s(reply.xspace) < 0.9  # the 500 ms window (tracer start / stop slack)
        # Stopped after the window: a long-lived session can start right away, and it holds more.
        c.start_continuous(req)
        try:
            time.sleep(2.0)
            assert span_s(c.snapshot().xspace) > 1.5
        finally:
            c.stop_continuous()


@pytest.mark.live
def test_session_windows_come_from_snapshots(server):
    s = MonitorSession(server.address, duration_ms=400).query()
    assert s.source == "snapshot" and s.steps > 10 and s.step_ms_avg > 0
