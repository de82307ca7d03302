"""`tputui capture --continuous`: a server keeps a ring buffer of its trace; GetSnapshot hands it over.

StartContinuousProfiling on every worker, wait the window, GetSnapshot (the XSpace comes back in
the response), save the snapshots as one run, then StopContinuousProfiling (unless asked to leave
it running for later snapshots). A session someone else started is read and left running.

A continuous session is not tied to our connection: the server keeps it until someone stops it.
So ours is stopped on every way out we can see (the snapshot taken, an error, Ctrl+C, SIGTERM,
SIGHUP: signals.py makes them exceptions), and a start that an interrupt lands on is waited for
first, to know whether the session is ours (client.start_continuous). Only kill -9 leaves it
running; the monitor never uses continuous profiling for that reason.
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
    save_host,
    session_id,
)
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
    saved = False
    try:
        for c in clients:
            try:
                c.start_continuous(profile_request(c.address, duration_ms, tracer))
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
        saved = True
        return CaptureResult(logdir, sid, run_dir, hosts, 1, empty, {})
    finally:
        for c in clients:  # --keep-running keeps ours only once its snapshot is saved
            if c.owns_continuous and not (keep_running and saved):
                try:
                    c.stop_continuous()
                except LiveError:
                    pass  # the snapshot is what matters; a server that went away has stopped anyway
            c.close()
