"""One stream out of several live sources: libtpu's runtime metrics (about once a second) and one
MonitorSession per worker (windows at their own rate), each in its own thread, merged in arrival
order for the pane and for `--plain`. Stopping the feed stops every source at once (a metric read
is cancelled; a profile window in flight is ended on its server by its own thread), and
`wait_ended` waits, bounded, until every window has ended there: what a command does before it
exits, so the job's profiler server is free for the next capture."""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from tputui.live.client import LiveError
from tputui.live.monitor import MonitorSession, Sample
from tputui.live.runtime_metrics import RuntimePoller, RuntimeReading

Item = Sample | RuntimeReading
_DONE = object()
# A source thread not ending a window (decoding one, say) gets this long before wait_ended gives up.
STUCK_S = 10.0


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
        self._threads: list[threading.Thread] = []

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
        self._threads = threads
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
            # The primary sources are done (or the reader left): end the others too. Not waited
            # for here (the pane's worker thread must not hold the app's exit): see wait_ended.
            self.stop()

    def wait_ended(self, say: Callable[[str], None] | None = None) -> bool:
        """After stop(): wait until every source thread is done, so no profile window of ours is
        left on a server. A window cut short ends within milliseconds where the server has
        Terminate, and runs out where it has not; `say` is told which window is waited for when
        that takes more than a moment. False when a thread was still busy at the bound."""
        said: set[str] = set()
        t0 = time.monotonic()
        while True:
            alive = [t for t in self._threads if t.is_alive()]
            if not alive:
                return True
            ending = {s.address: s.ending_in() for s in self.sessions}
            if all(w is None for w in ending.values()) and time.monotonic() - t0 > STUCK_S:
                return False
            if say is not None and time.monotonic() - t0 > 0.3:
                for address, w in ending.items():
                    if w is not None and w > 0.5 and address not in said:
                        said.add(address)
                        say(f"finishing the profile window on {address}, {w:.0f} s…")
            alive[0].join(0.05)
