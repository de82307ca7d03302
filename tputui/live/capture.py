"""`tputui capture`: grab a profile from running profiler servers into a logdir.

We ask each server for its XSpace (`emit_xspace`) and write
LOGDIR/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host_port>.xplane.pb ourselves, so the logdir may
be on another machine than the servers. Servers that ignore emit_xspace write that same file on
their own disk (we send the same path), which is the fallback. Empty traces are retried.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from tputui.data import xspace
from tputui.data.files import atomic_open
from tputui.live.client import (
    CancelledError,
    LiveError,
    ProfilerClient,
    ServerBusyError,
    TracerOptions,
    host_file_name,
    parse_addresses,
    profile_request,
    trace_is_empty,
)

PROFILE_SUBDIR = "plugins/profile"
BUSY_RETRY_WAIT_S = 1.0


# What the Cloud TPU profiling guides advise when a capture holds nothing: the program was not
# running yet (or between steps) during the window.
EMPTY_CAPTURE_ADVICE = "start the capture later (after the program is running) or profile for longer"


FULL_CHECK_BYTES = 256 << 20


def no_trace_message(attempts: int, how: str = "--duration-ms; --num-tracing-attempts tries again") -> str:
    """One line for a capture that came back without events, however many times it was tried;
    `how` names the settings to change (the CLI's flags, or the capture dialog's fields)."""
    return f"no trace events after {attempts} attempt(s): {EMPTY_CAPTURE_ADVICE} ({how})"


class EmptyCaptureError(LiveError):
    """Every worker's trace came back without events on every attempt."""

    def __init__(self, attempts: int) -> None:
        super().__init__(no_trace_message(attempts))
        self.attempts = attempts


@dataclass
class HostCapture:
    address: str
    path: str  # where the .xplane.pb is (or, for a server-side write, where the server put it)
    size: int = 0  # bytes written by us (0 for a server-side write)
    server_side: bool = False  # the server ignored emit_xspace and wrote the file itself


@dataclass
class CaptureResult:
    logdir: str
    run: str  # the run name (session id, YYYY_MM_DD_HH_MM_SS)
    run_dir: str
    hosts: list[HostCapture]
    attempts: int  # attempts used
    empty: list[str] = field(default_factory=list)  # workers whose trace stayed empty
    failed: dict[str, str] = field(default_factory=dict)  # worker -> error line


Progress = Callable[[str], None]


def join_path(base: str, *parts: str) -> str:
    if is_remote(base):
        return "/".join([base.rstrip("/"), *parts])
    return os.path.join(base, *parts)


def is_remote(path: str) -> bool:
    return "://" in path


def session_id(logdir: str, now: float | None = None) -> str:
    """The run name: capture start in local time, to the second (as XProf's clients name it).

    A local run folder of that name that already exists (two captures in one second) moves the
    name on by a second, so a capture never mixes into another run.
    """
    t = time.time() if now is None else now
    while True:
        sid = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(t))
        if is_remote(logdir) or not os.path.exists(join_path(logdir, PROFILE_SUBDIR, sid)):
            return sid
        t += 1


def write_profile(path: str, data: bytes) -> None:
    """Write one host's XSpace: atomically on local disks (readers never see half a file)."""
    if is_remote(path):
        write_remote(path, data)
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_open(path) as f:
            f.write(data)
    except OSError as e:
        raise LiveError(f"cannot write {path}: {e.strerror or e}") from None


def write_remote(url: str, data: bytes) -> None:
    """gs:// (and other fsspec URLs) go through the GCS module when this build has it."""
    try:
        from tputui.data import gcs
        write = gcs.write_bytes
    except (ImportError, AttributeError):
        raise LiveError(f"cannot write {url}: capturing into remote logdirs is not supported in this "
                        f"build; capture to a local logdir and copy it") from None
    from tputui.data.logdir import LogdirError

    try:
        write(url, data)
    except LiveError:
        raise
    except LogdirError as e:  # already one line that names the object
        raise LiveError(str(e)) from None
    except Exception as e:  # anything else from the storage layer (auth, permissions, network)
        raise LiveError(f"cannot write {url}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def _capture_one(client: ProfilerClient, duration_ms: int, tracer: TracerOptions, sid: str, repo_root: str):
    """(response, None) or (None, LiveError) for one worker, one attempt."""
    try:
        return client.profile(profile_request(client.address, duration_ms, tracer, session_id=sid,
                                              repository_root=repo_root)), None
    except CancelledError:
        raise
    except LiveError as e:
        return None, e


def _attempt(pool: ThreadPoolExecutor, addresses: list[str], duration_ms: int, tracer: TracerOptions, sid: str,
             repo_root: str, stop: threading.Event | None, say: Progress) -> list:
    """Every worker's window at once. Cut short (`stop` set, Ctrl+C, a signal), each window is
    ended on its server before this raises: the job is free for the next capture at once."""
    clients = [ProfilerClient(a) for a in addresses]
    futures = [pool.submit(_capture_one, c, duration_ms, tracer, sid, repo_root) for c in clients]
    try:
        while not all(f.done() for f in futures):
            if stop is not None and stop.is_set():
                raise CancelledError("capture stopped")
            wait(futures, timeout=None if stop is None else 0.1)
        return [f.result() for f in futures]
    except BaseException:
        for c in clients:
            c.cancel()  # each worker's thread ends its window (client.ProfilerClient.end_window)
        if wait(futures, timeout=0.3).not_done:
            say(f"Ending the capture window on {addresses[0] if len(addresses) == 1 else 'the workers'}…")
            wait(futures)
        raise
    finally:
        for c in clients:
            c.close()


def prepare(addresses: list[str], logdir: str, duration_ms: int, tracer: TracerOptions | None,
            progress: Progress | None) -> tuple[list[str], str, TracerOptions, Progress]:
    """What a capture starts from, checked: the workers' addresses, the logdir (absolute when
    local), the tracer options and a progress callback (a silent one when none is given)."""
    if duration_ms <= 0:
        raise LiveError("--duration-ms must be positive")
    if not is_remote(logdir):
        logdir = os.path.abspath(logdir)
    return (parse_addresses(",".join(addresses)), logdir, tracer or TracerOptions(),
            progress or (lambda _m: None))


def capture(addresses: list[str], logdir: str, *, duration_ms: int = 2000, attempts: int = 3,
            tracer: TracerOptions | None = None, progress: Progress | None = None,
            now: float | None = None, stop: threading.Event | None = None) -> CaptureResult:
    """Capture every worker at once, retrying while all traces are empty; write the files.

    `stop` (set from another thread) cuts it short: the windows are ended on the servers and
    CancelledError is raised; Ctrl+C and signals on the calling thread do the same."""
    addresses, logdir, tracer, say = prepare(addresses, logdir, duration_ms, tracer, progress)
    if attempts < 1:
        raise LiveError("--num-tracing-attempts must be at least 1")
    sid = session_id(logdir, now)
    # Servers that ignore emit_xspace write <repository_root>/<session_id>/<host_name>.xplane.pb.
    repo_root = join_path(logdir, PROFILE_SUBDIR)
    run_dir = join_path(repo_root, sid)
    empty: list[str] = []
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
        for attempt in range(1, attempts + 1):
            if stop is not None and stop.is_set():
                raise CancelledError("capture stopped")
            who = addresses[0] if len(addresses) == 1 else f"{len(addresses)} workers"
            say(f"Capturing {duration_ms} ms from {who} (attempt {attempt}/{attempts})")
            answers = _attempt(pool, addresses, duration_ms, tracer, sid, repo_root, stop, say)
            failed = {a: str(err) for a, (_, err) in zip(addresses, answers) if err is not None}
            got = [(a, r) for a, (r, _) in zip(addresses, answers) if r is not None and not trace_is_empty(r)]
            for a, r in list(got):  # written only if it reads as an XSpace: no garbage in the logdir
                if (why := not_an_xspace(r.xspace)) is not None:
                    got.remove((a, r))
                    failed[a] = f"{a}: the server's profile is not a readable XSpace ({why}); nothing written"
            empty = [a for a, (r, _) in zip(addresses, answers) if r is not None and trace_is_empty(r)]
            if got:
                hosts = [save_host(a, r, run_dir) for a, r in got]
                return CaptureResult(logdir, sid, run_dir, hosts, attempt, empty, failed)
            busy = [a for a, (_, err) in zip(addresses, answers) if isinstance(err, ServerBusyError)]
            if failed and len(failed) == len(addresses) and not busy:
                # Nobody answered: retrying a dead address only delays the error.
                raise LiveError(next(iter(failed.values())) if len(failed) == 1 else
                                f"no worker could be captured: {'; '.join(failed.values())}")
            if attempt < attempts:
                say("Empty trace; trying again" if empty else "Server busy; trying again")
                if busy:
                    if stop is None:
                        time.sleep(BUSY_RETRY_WAIT_S)
                    else:
                        stop.wait(BUSY_RETRY_WAIT_S)
    if failed and not empty:
        raise LiveError(next(iter(failed.values())))
    raise EmptyCaptureError(attempts)


def not_an_xspace(data: bytes | None) -> str | None:
    """Why a server's XSpace bytes cannot be read, or None when they can (or the server wrote
    the file itself): decoded whole as the app will, or past FULL_CHECK_BYTES (where decoding
    costs seconds and gigabytes) checked at the top level, every plane located in the buffer."""
    if not data:
        return None
    try:
        if len(data) <= FULL_CHECK_BYTES:
            xspace.decode_raw(data)
        else:
            xspace.check(data)
    except xspace.DecodeError as e:
        return str(e)
    return None


def save_host(address: str, response, run_dir: str) -> HostCapture:
    """Write one server's response into the run folder (or note that the server wrote it)."""
    path = join_path(run_dir, host_file_name(address) + ".xplane.pb")
    if response.xspace:
        write_profile(path, response.xspace)
        return HostCapture(address, path, len(response.xspace))
    # The server ignored emit_xspace and wrote the file on its own disk (same path we sent).
    return HostCapture(address, path, server_side=True)
