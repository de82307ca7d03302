"""`tputui capture --continuous`: a server keeps a ring buffer of its trace; GetSnapshot hands it over.

StartContinuousProfiling on every worker, wait the window, GetSnapshot (the XSpace comes back in
the response), save the snapshots as one run, then StopContinuousProfiling (unless asked to leave
it running for later snapshots). A session someone else started is read and left running. (The
monitor's windows use the same RPCs, in client.snapshot_window.)
"""
from __future__ import annotations

import time
from collections.abc import Callable

from tputui.live.capture import (
    PROFILE_SUBDIR,
    CaptureResult,
    EmptyCaptureError,
    join_path,
    prepare,
    session_id,
)
from tputui.live.capture import _save as save_host
from tputui.live.client import (
    LiveError,
    ProfilerClient,
    ServerBusyError,
    TracerOptions,
    UnimplementedError,
    profile_request,
    trace_is_empty,
)

NOT_SUPPORTED = ("{address} does not support continuous profiling (StartContinuousProfiling is "
                 "unimplemented there); use a plain `tputui capture`")


def capture_continuous(addresses: list[str], logdir: str, *, duration_ms: int = 2000,
                       tracer: TracerOptions | None = None, keep_running: bool = False,
                       progress: Callable[[str], None] | None = None, now: float | None = None) -> CaptureResult:
    """Start continuous profiling, wait `duration_ms`, save every worker's snapshot as one run."""
    addresses, logdir, tracer, say = prepare(addresses, logdir, duration_ms, tracer, progress)
    clients = [ProfilerClient(a) for a in addresses]
    started: list[ProfilerClient] = []
    try:
        for c in clients:
            try:
                c.start_continuous(profile_request(c.address, duration_ms, tracer))
                started.append(c)
            except UnimplementedError:
                raise LiveError(NOT_SUPPORTED.format(address=c.address)) from None
            except ServerBusyError:  # a session already runs (someone's): take its snapshot, leave it running
                say(f"{c.address}: continuous profiling already running; taking its snapshot")
        say(f"Continuous profiling on {len(clients)} worker(s); snapshot in {duration_ms} ms")
        time.sleep(duration_ms / 1000.0)
        sid = session_id(logdir, now)
        run_dir = join_path(logdir, PROFILE_SUBDIR, sid)
        replies = [(c.address, c.snapshot()) for c in clients]
        got = [(a, r) for a, r in replies if r.xspace and not trace_is_empty(r)]
        empty = [a for a, r in replies if not r.xspace or trace_is_empty(r)]
        if not got:
            raise EmptyCaptureError(1)
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
