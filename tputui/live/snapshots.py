"""Continuous profiling: a server keeps a ring buffer of its trace; GetSnapshot hands it over.

`capture_continuous` is `tputui capture --continuous`: StartContinuousProfiling on every worker,
wait the window, GetSnapshot (the XSpace comes back in the response), save the snapshots as one
run, then StopContinuousProfiling (unless asked to leave it running for later snapshots).

`SnapshotSource` gives the monitor one XSpace window per call: a snapshot where the server
supports continuous profiling (no start/stop per window), a short Profile capture where it does
not (UNIMPLEMENTED), decided once per server.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from tputui.live.capture import (
    PROFILE_SUBDIR,
    CaptureResult,
    is_remote,
    join_path,
    no_trace_message,
    session_id,
)
from tputui.live.capture import _save as save_host
from tputui.live.client import (
    AlreadyRunningError,
    LiveError,
    ProfilerClient,
    ProfileReply,
    TracerOptions,
    UnimplementedError,
    parse_addresses,
    profile_request,
    trace_is_empty,
)

NOT_SUPPORTED = ("{address} does not support continuous profiling (StartContinuousProfiling is "
                 "unimplemented there); use a plain `tputui capture`")


def capture_continuous(addresses: list[str], logdir: str, *, duration_ms: int = 2000,
                       tracer: TracerOptions | None = None, keep_running: bool = False,
                       progress: Callable[[str], None] | None = None, now: float | None = None) -> CaptureResult:
    """Start continuous profiling, wait `duration_ms`, save every worker's snapshot as one run."""
    if duration_ms <= 0:
        raise LiveError("--duration-ms must be positive")
    tracer = tracer or TracerOptions()
    say = progress or (lambda _m: None)
    addresses = parse_addresses(",".join(addresses))
    if not is_remote(logdir):
        logdir = os.path.abspath(logdir)
    clients = [ProfilerClient(a) for a in addresses]
    started: list[ProfilerClient] = []
    try:
        for c in clients:
            try:
                c.start_continuous(profile_request(c.address, duration_ms, tracer))
                started.append(c)
            except UnimplementedError:
                raise LiveError(NOT_SUPPORTED.format(address=c.address)) from None
            except AlreadyRunningError:  # someone's session: take its snapshot, leave it running
                say(f"{c.address}: continuous profiling already running; taking its snapshot")
        say(f"Continuous profiling on {len(clients)} worker(s); snapshot in {duration_ms} ms")
        time.sleep(duration_ms / 1000.0)
        sid = session_id(logdir, now)
        run_dir = join_path(logdir, PROFILE_SUBDIR, sid)
        replies = [(c.address, c.snapshot()) for c in clients]
        got = [(a, r) for a, r in replies if r.xspace and not trace_is_empty(r)]
        empty = [a for a, r in replies if not r.xspace or trace_is_empty(r)]
        if not got:
            raise LiveError(no_trace_message(1))
        hosts = [save_host(a, r, run_dir) for a, r in got]
        return CaptureResult(logdir, sid, run_dir, hosts, 1, empty, {})
    finally:
        for c in started if not keep_running else []:
            try:
                c.stop_continuous()
            except LiveError:
                pass  # the snapshot is what matters; a server that went away has stopped anyway
        for c in clients:
            c.close()


class SnapshotSource:
    """One XSpace window per `window(client)` call, from snapshots or short captures."""

    def __init__(self, address: str, duration_ms: int, tracer: TracerOptions):
        self.address, self.duration_ms, self.tracer = address, duration_ms, tracer
        self.continuous: bool | None = None  # None until the server has answered Start once
        self.mode: str | None = None  # "snapshot" | "capture": what the windows came from
        self._ours = False  # we started the server's session (so we stop it)
        self._last = 0.0
        self._stop = threading.Event()

    def window(self, client: ProfilerClient) -> ProfileReply:
        if self.continuous is None:
            try:
                client.start_continuous(profile_request(self.address, self.duration_ms, self.tracer))
                self.continuous, self._ours, self._last, self.mode = True, True, time.monotonic(), "snapshot"
            except AlreadyRunningError:  # another client's ring buffer: read it, never stop it
                self.continuous, self._ours, self._last, self.mode = True, False, time.monotonic(), "snapshot"
            except UnimplementedError:
                self.continuous, self.mode = False, "capture"
        if not self.continuous:
            return client.profile(profile_request(self.address, self.duration_ms, self.tracer))
        # The ring buffer fills in real time: wait out the rest of the window, then take it.
        self._stop.wait(max(0.0, self.duration_ms / 1000.0 - (time.monotonic() - self._last)))
        reply = client.snapshot()
        self._last = time.monotonic()
        return reply

    def close(self, wait_s: float = 3.0) -> None:
        """Stop the server's continuous profiling if we started it. Waits at most `wait_s` (a
        server that went away must not hold up whoever is stopping); never raises."""
        self._stop.set()  # wakes a window waiting for its ring buffer
        if self.continuous and self._ours:
            t = threading.Thread(target=self._stop_server, name="tputui-stop-continuous", daemon=True)
            t.start()
            t.join(wait_s)
        self.continuous, self._ours, self._stop = None, False, threading.Event()

    def _stop_server(self) -> None:
        try:
            with ProfilerClient(self.address) as c:
                c.stop_continuous()
        except LiveError:
            pass
