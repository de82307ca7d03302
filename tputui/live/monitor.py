"""`tputui monitor`'s profiler side: a stream of samples (device, utilization, idle, step time,
infeed, top ops) per worker, for the live pane and for `--plain` lines.

JAX and TF servers answer `Monitor` with UNIMPLEMENTED, so each sample is one window of trace, a
short `Profile` capture (emit_xspace) decoded and reduced to figures; `Monitor` is used where a
server implements it (the old TPU-node service). Windows are Profile calls, not continuous-profiling
snapshots: the server ends a Profile session when its window runs out or its client's connection
drops, whereas a continuous session runs until someone stops it, so a monitor that died without
stopping it (kill -9, a crash) would leave the job unable to be profiled. A stop ends the window
in flight on the server (Terminate; client.ProfilerClient.profile). On a TPU VM the live figures
come from libtpu's runtime metrics (runtime_metrics.py) and windows are taken every `interval_s`
only. A server that stops answering is retried with back-off, and every failed cycle is a sample
that says so.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from tputui.live.client import (
    CancelledError,
    LiveError,
    ProfilerClient,
    ServerBusyError,
    TracerOptions,
    UnimplementedError,
    profile_request,
    trace_is_empty,
)

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
# Monitor windows only need steps and device ops: no Python tracer, default host detail.
MONITOR_TRACER = TracerOptions(host_tracer_level=2, device_tracer_level=1, python_tracer_level=0,
                               include_dataset_ops=False, enable_hlo_proto=False)


@dataclass
class Sample:
    """One monitor cycle. Figures are None where the window (or server) has none."""

    time: float  # epoch seconds at the end of the cycle
    address: str
    window_ms: int
    # "profile" (a capture) | "monitor" (the server's Monitor RPC) | "snapshot" (a continuous-profiling
    # snapshot: recorded samples of earlier versions)
    source: str = "profile"
    device_type: str | None = None
    cores: int | None = None
    utilization_pct: float | None = None  # device busy share (duty cycle)
    mxu_pct: float | None = None  # matrix-unit utilization: the server's counters, else the window's FLOPs
    idle_pct: float | None = None
    steps: int = 0
    step_ms_avg: float | None = None
    step_ms_min: float | None = None
    step_ms_max: float | None = None
    infeed_pct_avg: float | None = None
    infeed_pct_min: float | None = None
    infeed_pct_max: float | None = None
    top_ops: list[dict] = field(default_factory=list)  # {name, time_ms, percent, count}
    error: str | None = None  # this cycle failed: the one line to show
    retry_in_s: float | None = None  # when the next try happens after an error
    empty: bool = False  # the server answered with an empty trace (nothing ran)
    mxu_source: str | None = None  # where mxu_pct comes from (the server's counters, or the window's FLOPs)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def from_trace(self) -> bool:
        """Figures computed from a window of trace (not a server's Monitor answer)."""
        return self.source != "monitor"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Sample:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


class History:
    """The last samples of a monitor, for sparklines and min / max (kept across pane restarts)."""

    def __init__(self, keep: int = 300):
        from collections import deque

        self.samples: deque[Sample] = deque(maxlen=keep)

    def add(self, s: Sample) -> None:
        self.samples.append(s)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def last(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    @property
    def last_ok(self) -> Sample | None:
        return next((s for s in reversed(self.samples) if s.ok and not s.empty), None)

    def series(self, name: str) -> list[float]:
        """One figure over the good samples, oldest first (gaps where a window had none)."""
        return [getattr(s, name) for s in self.samples if s.ok and not s.empty and getattr(s, name) is not None]


def _stats(values: list[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    return sum(values) / len(values), min(values), max(values)


def sample_from_xspace(data: bytes, address: str, window_ms: int, now: float | None = None,
                       source: str = "profile") -> Sample:
    """Figures of one captured window (serialized XSpace)."""
    from tputui.data.xspace import decode
    from tputui.live.figures import window_figures

    w = window_figures(decode(data))
    s = Sample(time=time.time() if now is None else now, address=address, window_ms=window_ms, source=source,
               device_type=w.device_type, cores=w.cores, utilization_pct=w.busy_pct, idle_pct=w.idle_pct,
               steps=len(w.step_ms))
    s.step_ms_avg, s.step_ms_min, s.step_ms_max = _stats(w.step_ms)
    s.infeed_pct_avg, s.infeed_pct_min, s.infeed_pct_max = _stats(w.infeed_pct)
    s.top_ops = [{"name": t.name, "time_ms": t.time_ms, "percent": t.percent, "count": t.count} for t in w.top_ops]
    if w.mxu_pct is not None:  # no counters in a trace window: computed from its FLOPs, and labelled so
        from tputui.live.figures import MXU_SOURCE

        s.mxu_pct, s.mxu_source = w.mxu_pct, MXU_SOURCE
    return s


def sample_from_monitor(resp, address: str, window_ms: int, now: float | None = None) -> Sample:
    """A server's own Monitor answer (response_type says which figures it filled)."""
    r = resp.monitor_result
    s = Sample(time=time.time() if now is None else now, address=address, window_ms=window_ms, source="monitor")
    if r.response_type >= 1:
        s.mxu_pct, s.mxu_source = r.matrix_unit_utilization_percent, "the server's Monitor (performance counters)"
    if r.response_type >= 2:
        s.idle_pct = r.device_idle_time_percent
        s.utilization_pct = 100.0 - r.device_idle_time_percent
    if r.response_type >= 3:
        s.step_ms_avg, s.step_ms_min, s.step_ms_max = r.step_time_ms_avg, r.step_time_ms_min, r.step_time_ms_max
        s.infeed_pct_avg, s.infeed_pct_min, s.infeed_pct_max = r.infeed_percent_avg, r.infeed_percent_min, r.infeed_percent_max
    s.device_type = _text_field(resp.data, ("TPU type:", "Device type:"))
    return s


def _text_field(text: str, keys: tuple[str, ...]) -> str | None:
    for line in text.splitlines():
        for k in keys:
            if line.strip().startswith(k):
                return line.split(":", 1)[1].strip() or None
    return None


class MonitorSession:
    """Runs monitor cycles against one server. Thread-safe to stop from another thread."""

    def __init__(self, address: str, duration_ms: int = 1000, level: int = 2,
                 tracer: TracerOptions = MONITOR_TRACER, use_monitor_rpc: bool = True,
                 interval_s: float = 0.0):
        if duration_ms <= 0:
            raise LiveError("--duration-ms must be positive")
        if level not in (1, 2):
            raise LiveError("--monitoring-level must be 1 or 2")
        if interval_s < 0:
            raise LiveError("--profile-every must not be negative")
        self.address, self.duration_ms, self.level, self.tracer = address, duration_ms, level, tracer
        self.interval_s = interval_s  # seconds from one window's start to the next (0: back to back)
        self._use_monitor = use_monitor_rpc  # dropped after the first UNIMPLEMENTED
        self._windows = 0  # windows asked for: each has its own session id (Terminate names it)
        self._stop = threading.Event()
        self._client: ProfilerClient | None = None  # the connection of the cycle in flight
        self.last_xspace: bytes | None = None  # the last window, to open as a full profile
        self.last_xspace_time: float | None = None

    def stop(self) -> None:
        """Stop sampling: the window in flight is ended on the server (by the thread that waits for
        it, within client.END_WAIT_S), never abandoned there."""
        self._stop.set()
        client = self._client
        if client is not None:
            client.cancel()

    def restart(self) -> None:
        """Allow samples() again after stop() (the pane reopens after a full-profile visit)."""
        self._stop.clear()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def ending_in(self) -> float | None:
        """Seconds a stopped window may still take to end on the server, None when none is ending."""
        client = self._client
        until = client.ending_until if client is not None else None
        return None if until is None else max(0.0, until - time.monotonic())

    def query(self) -> Sample:
        """One cycle; raises LiveError when the server cannot be reached or refuses."""
        with ProfilerClient(self.address) as c:
            self._client = c  # stop() cancels through it
            try:
                if self.stopped:
                    raise CancelledError("monitor stopped")
                if self._use_monitor:
                    try:
                        return sample_from_monitor(c.monitor(self.duration_ms, self.level), self.address,
                                                   self.duration_ms)
                    except UnimplementedError:
                        self._use_monitor = False
                self._windows += 1
                # unique for good: a Terminate landing after its window ended leaves its id marked
                # stopped on the server, and a later window with that id would stop at once
                sid = f"tputui-monitor-{os.getpid()}-{time.time_ns()}-{self._windows}"
                resp, source = c.profile(profile_request(self.address, self.duration_ms, self.tracer,
                                                         session_id=sid)), "profile"
            finally:
                self._client = None
        if trace_is_empty(resp):
            return Sample(time=time.time(), address=self.address, window_ms=self.duration_ms, source=source,
                          empty=True)
        data = resp.xspace
        if not data:
            raise LiveError(f"{self.address} answered without an XSpace (a server that ignores emit_xspace "
                            f"cannot be monitored; use tputui capture)")
        self.last_xspace, self.last_xspace_time = data, time.time()
        return sample_from_xspace(data, self.address, self.duration_ms, source=source)

    def samples(self, num_queries: int | None = None, fail_fast: bool = False) -> Iterator[Sample]:
        """Samples as they come; failed cycles are error samples, then a back-off wait.

        `fail_fast`: a first cycle that cannot connect raises (nothing was ever there to watch).
        A busy server (someone else capturing) is always waited for.
        """
        n, failures, ever_ok = 0, 0, False
        while not self.stopped and (num_queries is None or n < num_queries):
            n += 1
            t0 = time.monotonic()
            try:
                s = self.query()
                failures, ever_ok = 0, True
                yield s
                if self.interval_s and (num_queries is None or n < num_queries):
                    self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - t0)))
                continue
            except CancelledError:
                return
            except LiveError as e:
                if fail_fast and not ever_ok and not isinstance(e, ServerBusyError):
                    raise
                wait = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                failures += 1
                last = num_queries is not None and n >= num_queries
                yield Sample(time=time.time(), address=self.address, window_ms=self.duration_ms,
                             error=str(e), retry_in_s=None if last else wait)
                if not last:
                    self._stop.wait(wait)


def save_window(logdir: str, address: str, data: bytes, when: float) -> str:
    """Write one window as LOGDIR/plugins/profile/<ts>/<host_port>.xplane.pb; returns the path."""
    from tputui.live.capture import PROFILE_SUBDIR, join_path, session_id, write_profile
    from tputui.live.client import host_file_name

    sid = session_id(logdir, when)
    path = join_path(logdir, PROFILE_SUBDIR, sid, host_file_name(address) + ".xplane.pb")
    write_profile(path, data)
    return path


def default_windows_dir(address: str) -> str:
    """Where the pane's `o` keeps windows when --save-windows is not given (the cache, never a logdir)."""
    from tputui.data.cache import cache_root
    from tputui.live.client import host_file_name

    return os.path.join(cache_root(), "monitor-windows", host_file_name(address))
