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


class Step(str):
    """A progress line that also says how far along it is: `done` of `total` (pieces, hosts,
    records, bytes). Still a str, so every callback takes it; `Pace` turns it into a percentage
    and, once it moves, the time left."""

    done: int
    total: int

    def __new__(cls, text: str, done: int, total: int) -> Step:
        step = super().__new__(cls, text)
        step.done, step.total = done, total
        return step

    @property
    def fraction(self) -> float:
        return min(1.0, max(0.0, self.done / self.total)) if self.total > 0 else 0.0


class Pace:
    """The percentage and time left of a run of `Step`s of the same total, measured from the
    first step of the run (a new total, or a step going back, starts a new run). Lines that are
    not steps (a sub-step's message) keep the last step's figures."""

    MIN_SECONDS = 1.0  # no estimate before the run has moved for this long

    def __init__(self) -> None:
        self._start: tuple[float, float] | None = None  # (time, fraction) where the run began
        self._total = 0
        self._last: tuple[float, float] | None = None  # (time, fraction) of the newest step

    def note(self, text: str, now: float) -> None:
        if not isinstance(text, Step) or text.total < 2:  # 0 of 1 host says nothing
            return
        f = text.fraction
        if self._start is None or text.total != self._total or (self._last and f < self._last[1]):
            self._start, self._total = (now, f), text.total
        self._last = (now, f)

    def describe(self, now: float) -> str:
        """'42%' or '42%, ~12 s left' (empty before any step)."""
        if self._last is None or self._start is None:
            return ""
        t0, f0 = self._start
        t, f = self._last
        pct = f"{int(f * 100)}%"
        if f >= 1.0 or t - t0 < self.MIN_SECONDS or f <= f0:
            return pct
        left = (1.0 - f) * (t - t0) / (f - f0) - (now - t)
        return f"{pct}, ~{_seconds(max(left, 1.0))} left" if left > 0 else pct


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"
