"""SIGTERM and SIGHUP end tputui the way Ctrl+C does: through every `finally`.

Python's default for both is to die at once, skipping the cleanup that keeps what the user owns
intact: a profile window in flight on the job's server (ended with Terminate), a continuous-
profiling session we started (stopped), a half-written output (removed). SIGTERM comes from `kill`
and process managers, SIGHUP from a closed terminal or a dropped ssh session. Commands get them as
a `Terminated` exception on the main thread; while a Textual app runs they ask the app to exit
instead (its terminal restored first), and the command's cleanup runs after. No Textual import:
the app is driven through its `exit` method only.
"""
from __future__ import annotations

import contextlib
import functools
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator

ENDING = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """The process was told to end (SIGTERM, SIGHUP). A BaseException, like KeyboardInterrupt:
    `except Exception` on the way up must not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what a shell reports for a process ended by this signal


# After a signal asked the app to exit, how long it may take (its windows ended on the servers
# included) before the process ends anyway: a Textual app can hang on a terminal that is gone.
EXIT_WATCHDOG_S = 20.0


def _raise(signum: int, _frame) -> None:
    if signum == signal.SIGHUP:
        detach_terminal()
    raise Terminated(signum)


def detach_terminal() -> None:
    """The terminal hung up: what is still written to it fails (EIO), and Textual's writer thread
    dies on the first failure and then blocks the app's exit. stdout / stderr that are character
    devices (the dead terminal; isatty itself fails on it) now go to /dev/null. Textual also
    handles SIGCONT, which the kernel sends right after a hang-up, by entering its application
    mode again: that handler is dropped first."""
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGCONT, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                if stat.S_ISCHR(os.fstat(fd).st_mode):
                    os.dup2(null, fd)
        os.close(null)


def raise_on_ending_signals() -> None:
    """SIGTERM and SIGHUP raise Terminated on the main thread from now on (a no-op elsewhere:
    only the main thread may set handlers). A signal the user chose to ignore stays ignored."""
    if threading.current_thread() is threading.main_thread():
        for sig in ENDING:
            if signal.getsignal(sig) is not signal.SIG_IGN:  # `nohup tputui ...` keeps running on a hang-up
                signal.signal(sig, _raise)


@contextlib.contextmanager
def exiting_app(app, cleanup: Callable[[], None] | None = None) -> Iterator[None]:
    """While a Textual `app` runs in this block: SIGTERM, SIGHUP and SIGINT make it exit with
    return code 128 + signal, as if the user had quit (Ctrl+C at the keyboard is a key for the
    app, a SIGINT comes from `kill -INT`). Outside its event loop they raise Terminated.

    Should the process still run EXIT_WATCHDOG_S after such a signal (an app stuck on a dead
    terminal), a watchdog thread runs `cleanup` (ending what must not be left behind) and ends
    the process: nothing is left running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame) -> None:
        if signum == signal.SIGHUP:
            detach_terminal()
        _watchdog(128 + signum, cleanup)
        # The app's event loop imported asyncio; a command never does (~40 ms it need not pay).
        aio = sys.modules.get("asyncio")
        try:
            if aio is None:
                raise RuntimeError("no event loop")
            loop = aio.get_running_loop()
        except RuntimeError:  # the app is not running (yet, or any more): unwind as a command does
            raise Terminated(signum) from None
        loop.call_soon_threadsafe(functools.partial(app.exit, None, 128 + signum))

    previous = {sig: signal.signal(sig, handler) for sig in (*ENDING, signal.SIGINT)
                if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


_watchdog_started = threading.Event()


def _watchdog(code: int, cleanup: Callable[[], None] | None) -> None:
    if _watchdog_started.is_set():
        return
    _watchdog_started.set()

    def run() -> None:
        time.sleep(EXIT_WATCHDOG_S)
        if cleanup is not None:
            with contextlib.suppress(Exception):
                cleanup()
        os._exit(code)

    threading.Thread(target=run, daemon=True, name="tputui-exit-watchdog").start()


def say(message: str) -> None:
    """One line on stderr, if there is still a stderr: after SIGHUP the terminal is gone and a
    write fails (EIO); the message is then dropped, never a traceback."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        quiet_streams()


def quiet_streams() -> None:
    """Point stdout / stderr at /dev/null when their terminal is gone, so what is still buffered
    (and the interpreter's final flush) goes nowhere instead of failing with EIO at exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, stream.fileno())
                os.close(null)
                stream.flush()
