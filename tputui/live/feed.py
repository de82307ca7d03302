"""One stream out of several live sources: libtpu's runtime metrics (about once a second) and one
MonitorSession per worker (windows at their own rate), each in its own thread, merged in arrival
order for the pane and for `--plain`. Stopping the feed stops every source (an in-flight capture
or metric read is cancelled, not waited out)."""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator

from tputui.live.client import LiveError
from tputui.live.monitor import MonitorSession, Sample
from tputui.live.runtime_metrics import RuntimePoller, RuntimeReading

Item = Sample | RuntimeReading
_DONE = object()


class LiveFeed:
    """`sessions` (one per worker) and an optional runtime-metrics `poller`.

    `items(n)`: n reads of the runtime metrics when it is followed (worker windows come in
    between as they arrive), else n windows of every worker. `fail_fast`: runtime metrics (or a
    lone worker) that cannot be read on the first cycle raise (nothing was ever there to watch).
    """

    def __init__(self, sessions: Iterable[MonitorSession], poller: RuntimePoller | None = None):
        self.sessions = list(sessions)
        self.poller = poller
        if not self.sessions and poller is None:
            raise LiveError("nothing to monitor: no profiler address and no runtime metrics")
        self._stop = threading.Event()

    @property
    def addresses(self) -> list[str]:
        return [s.address for s in self.sessions]

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        for s in self.sessions:
            s.stop()
        if self.poller is not None:
            self.poller.stop()

    def restart(self) -> None:
        self._stop.clear()
        for s in self.sessions:
            s.restart()
        if self.poller is not None:
            self.poller.restart()

    def items(self, num_queries: int | None = None, fail_fast: bool = False) -> Iterator[Item]:
        self.restart()  # a feed runs again after a stop (the pane comes back from a full profile)
        q: queue.Queue = queue.Queue()
        lone = fail_fast and self.poller is None and len(self.sessions) == 1
        sources: list[tuple[Iterator[Item], bool]] = [(s.samples(num_queries, fail_fast=lone), self.poller is None)
                                                      for s in self.sessions]
        if self.poller is not None:
            sources.append((self.poller.readings(num_queries, fail_fast=fail_fast), True))

        def pump(it: Iterator[Item]) -> None:
            try:
                for x in it:
                    q.put(x)
            except LiveError as e:  # fail_fast's first-cycle error: re-raised by the reader
                q.put(e)
            finally:
                q.put((_DONE, it))

        primary = {id(it) for it, main in sources if main}
        threads = [threading.Thread(target=pump, args=(it,), daemon=True, name="tputui-live") for it, _ in sources]
        for t in threads:
            t.start()
        left = len(primary)
        try:
            while left and not self.stopped:
                try:
                    x = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                if isinstance(x, tuple) and x and x[0] is _DONE:
                    left -= id(x[1]) in primary
                    continue
                if isinstance(x, LiveError):
                    raise x
                yield x
        finally:
            self.stop()  # the primary sources are done (or the reader left): end the others too
            for t in threads:
                t.join(timeout=5)
