"""Quitting does not wait for work in flight: q / Ctrl+C during a big decode used to take as long
as the decode had left (5.8 s), as asyncio and the interpreter join the worker threads on exit.

The app runs its thread workers on an executor whose shutdown does not wait; once the app has
ended and the terminal is restored, `leave` ends the process without joining the threads still
decoding, after stopping the map's worker processes. Nothing of the user's is being written:
the cache writes each entry in a temp folder renamed last, so an entry cut short is never read.
Work that must end properly (a capture ending its profiling window on the job's server) runs in
a `must_finish` block, and `leave` waits for it first.
"""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor


class NoWaitExecutor(ThreadPoolExecutor):
    """A thread pool whose shutdown never waits for running work (queued work is dropped)."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


_finishing = 0
_finished = threading.Condition()


@contextlib.contextmanager
def must_finish() -> Iterator[None]:
    """Work in this block is waited for by `leave` (it ends on its own, e.g. on the app's stop)."""
    global _finishing
    with _finished:
        _finishing += 1
    try:
        yield
    finally:
        with _finished:
            _finishing -= 1
            _finished.notify_all()


def busy() -> bool:
    """Whether threads (other than this one) or worker processes are still running."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    return bool(others or multiprocessing.active_children())


def leave(code: int) -> int:
    """End the process now if work is still in flight (else return `code` for a normal exit);
    `must_finish` work is waited for first."""
    with _finished:
        _finished.wait_for(lambda: _finishing == 0)
    if not busy():
        return code
    for child in multiprocessing.active_children():
        child.terminate()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def end_without_teardown(code: int) -> None:
    """End a one-shot command (`tputui export`) without the interpreter's teardown, which frees
    every array, frame and module one at a time (~0.1 s after an 80 MB host's export, all of it
    pointless at exit). What a normal exit does first still happens, in its order: the other
    non-daemon threads are joined (the cache's writers finish their entries), the atexit handlers
    run (logging, multiprocessing's children), the standard streams are flushed (a failure gives
    120, as Python's own exit does)."""
    # What a normal exit does first, as it does it: threading's own exit calls (a process pool's
    # manager told to end its workers: joining it before that hung an export ended by SIGTERM),
    # then every other non-daemon thread joined.
    threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's own step, private
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)
