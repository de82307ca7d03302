"""What the monitor pane shows, kept as samples arrive: each worker's window history, libtpu's
runtime readings per chip, and which worker is slowest. Textual-free: the pane only draws it."""
from __future__ import annotations

from collections import deque

from tputui.live.monitor import History, Sample
from tputui.live.runtime_metrics import RuntimeReading


class MonitorState:
    def __init__(self, addresses: list[str], runtime: bool = False, keep: int = 300):
        self.workers: dict[str, History] = {a: History(keep) for a in addresses}
        self.runtime = runtime  # libtpu's runtime metrics are followed
        self.readings: deque[RuntimeReading] = deque(maxlen=keep)

    def add(self, item: Sample | RuntimeReading) -> None:
        if isinstance(item, RuntimeReading):
            self.readings.append(item)
        else:
            self.workers.setdefault(item.address, History()).add(item)

    # --- runtime metrics ---------------------------------------------------------------------
    @property
    def last_reading(self) -> RuntimeReading | None:
        return self.readings[-1] if self.readings else None

    @property
    def last_good_reading(self) -> RuntimeReading | None:
        return next((r for r in reversed(self.readings) if r.ok), None)

    def chip_series(self, chip: int, name: str) -> list[float]:
        """One chip figure over the good readings, oldest first."""
        out = []
        for r in self.readings:
            if r.ok and chip < len(r.chips):
                v = getattr(r.chips[chip], name)
                if v is not None:
                    out.append(v)
        return out

    # --- workers -----------------------------------------------------------------------------
    @property
    def addresses(self) -> list[str]:
        return list(self.workers)

    def slowest(self) -> Sample | None:
        """The worker whose last window had the longest average step (None under two workers with steps)."""
        last = [h.last_ok for h in self.workers.values()]
        timed = [s for s in last if s is not None and s.step_ms_avg is not None]
        if len(timed) < 2:
            return None
        return max(timed, key=lambda s: (s.step_ms_avg, s.address))

    def counts(self) -> tuple[int, int, int]:
        """(windows with figures or empty, empty, failed) over every worker."""
        samples = [s for h in self.workers.values() for s in h.samples]
        failed = sum(1 for s in samples if s.error)
        empty = sum(1 for s in samples if s.empty and not s.error)
        return len(samples) - failed, empty, failed
