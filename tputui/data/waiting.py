"""Waiting on the network with a cap and a voice: gs:// discovery with no network used to sit
silent for ~50 s (15 s of metadata-server probes for credentials, then gcsfs's six retries with
back-off) before its one-line error.

`open_logdir_waiting` runs the discovery in a daemon thread, reports what it is waiting for
(the credential probes and each retry, read from the libraries' debug logs) and gives up after
`timeout` seconds with one clear line. Local paths are opened directly.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

from tputui.data.logdir import Logdir, LogdirError

Report = Callable[[str], None]
DEFAULT_TIMEOUT = 30.0  # seconds; a healthy listing answers in well under a second per page
_RETRY = re.compile(r"retrying after exception: (.*)")
_METADATA = re.compile(r"Starting new HTTP connection \((\d+)\): metadata\.google\.internal")


class _Watcher(logging.Handler):
    """Turns the libraries' debug lines about retries into short progress messages."""

    def __init__(self, report: Report) -> None:
        super().__init__(logging.DEBUG)
        self.report, self.retries = report, 0

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if m := _RETRY.search(msg):
            self.retries += 1
            self.report(f"retry {self.retries}: {m.group(1)[:120]}")
        elif m := _METADATA.search(msg):
            self.report(f"looking for Google Cloud credentials on the metadata server (try {m.group(1)})")


@contextmanager
def _watching(report: Report):
    watcher = _Watcher(report)
    loggers = [logging.getLogger(n) for n in ("gcsfs", "urllib3.connectionpool")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(watcher)
        if lg.getEffectiveLevel() > logging.DEBUG:
            lg.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.removeHandler(watcher)
            lg.setLevel(level)


def call_waiting(fn: Callable[[], Logdir], what: str, timeout: float | None, report: Report) -> Logdir:
    """fn() in a daemon thread (a hung socket must not keep the process alive after we give up);
    a LogdirError after `timeout` seconds (None or 0: wait as long as it takes)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    started = time.monotonic()
    last: list[str] = []  # the latest event (a retry, a credential probe) stays on the waiting line

    def event(msg: str) -> None:
        last[:] = [msg]
        report(msg)

    thread = threading.Thread(target=run, name="tputui-discovery", daemon=True)
    with _watching(event):
        thread.start()
        while thread.is_alive():
            thread.join(1.0)
            waited = time.monotonic() - started
            if thread.is_alive():
                report(f"waiting for {what} ({waited:.0f} s)" + (f" · {last[0]}" if last else ""))
            if timeout and waited >= timeout and thread.is_alive():
                raise LogdirError(f"{what}: no answer in {waited:.0f} s (network down or blocked?); "
                                  "--timeout SECONDS waits longer")
    if "error" in box:
        raise box["error"]
    return box["value"]


def open_logdir_waiting(path: str, timeout: float | None = DEFAULT_TIMEOUT, report: Report | None = None) -> Logdir:
    """open_logdir, with progress and a cap for gs:// (local paths answer at once)."""
    from tputui.data.logdir import open_logdir

    if not path.startswith("gs://"):
        return open_logdir(path)
    return call_waiting(lambda: open_logdir(path), path, timeout, report or (lambda _msg: None))
