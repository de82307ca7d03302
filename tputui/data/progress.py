"""Progress of one analysis call: a callback taking a short message ("decoding worker0 (12.3 MB)").

The caller passes it to the analysis (`Tool.analyze_fn()(run, host, progress=...)`), which runs
inside `reporting(progress)`; frames read in that block report their slow steps to it. The
callback lives in a context variable: per call and per thread, so two screens' workers never
see (or clear) each other's callback, and no tool has to pass it down by hand.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Progress = Callable[[str], None]
_REPORT: ContextVar[Progress | None] = ContextVar("tputui_progress", default=None)


@contextmanager
def reporting(progress: Progress | None) -> Iterator[None]:
    """Within the block, slow steps in this thread report to `progress` (None: to nobody)."""
    token = _REPORT.set(progress)
    try:
        yield
    finally:
        _REPORT.reset(token)


def current_progress() -> Progress | None:
    """The callback of the innermost `reporting` block in this thread, if any."""
    return _REPORT.get()
