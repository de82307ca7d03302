"""Several hosts' trace viewer events stacked on one time axis (a multi-host run side by side).

Each host keeps its own processes (sections), renumbered `(k + 1) * PID_STRIDE + pid` for the
k-th host picked and named `"<host> · <process>"`, one under another in the order picked. Times
are aligned by absolute time as XProf does: each host's events are from its own profile start
(`profile_start_time` of its `Task Environment` plane), so host k is shifted by its start minus
the earliest start. Names are merged into one table (the same op on two hosts is one name for
search and the per-name summaries); flow links and counter series come along, renumbered.

The stacked events have no single frame behind them (`frame` is None); StackedIndex reads an
event's stats from its own host's frame.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from tputui.analysis.host_map import known_grouping
from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_cache import cached_events
from tputui.analysis.trace_counters import CounterTable, build
from tputui.analysis.trace_events import HOST_PID, TraceEvents, trace_events
from tputui.analysis.trace_flows import FlowTable
from tputui.data.run_data import RunData

PID_STRIDE = 100_000  # > every pid one host uses (701, 1 + plane id)
TASK_ENV = "Task Environment"


def profile_start_ns(frame) -> int:
    """The host's profile start (ns since the epoch), 0 when the file does not say."""
    p = frame.plane_index(TASK_ENV)
    if p is None:
        return 0
    v = frame.plane_stat_map(p).get("profile_start_time")
    return int(v) if isinstance(v, int | np.integer) else 0


def host_events(run: RunData, host: str) -> tuple[TraceEvents, int]:
    """One host's trace viewer events (from its saved index when there is one) and profile start."""
    frame = run.frame(host)
    ev = cached_events(run, host)
    if ev is None:
        ev = trace_events(frame, grouping=known_grouping(run, host))
    return ev, profile_start_ns(frame)


def stacked_events(run: RunData, hosts: list[str], progress: Callable[[str], None] | None = None) -> TraceEvents:
    """The events of `hosts` (in that order) as one TraceEvents, as the module docstring says."""
    report = progress or (lambda msg: None)
    parts = []
    for k, h in enumerate(hosts):
        report(f"host {k + 1} of {len(hosts)}: {h}")
        parts.append(host_events(run, h))
    return stack([ev for ev, _ in parts], [start for _, start in parts], hosts)


class StackedIndex(TraceIndex):
    """A TraceIndex of stacked hosts: an event's stats come from its own host's frame."""

    run: RunData | None = None
    hosts: list[str] = []

    def frame_of(self, i: int):
        pid = self.tracks[int(self.row_track[int(self.event_row[i])])].pid
        k = pid // PID_STRIDE - 1
        return self.run.frame(self.hosts[k]) if self.run is not None and 0 <= k < len(self.hosts) else None


def stacked_index(run: RunData, hosts: list[str], progress: Callable[[str], None] | None = None) -> StackedIndex:
    """The index of the stacked hosts, complete (exact nesting, level-of-detail pyramid)."""
    ix = StackedIndex(stacked_events(run, hosts, progress), progress)
    ix.run, ix.hosts = run, list(hosts)
    ix.build_pyramid(progress)
    return ix


def stack(parts: list[TraceEvents], starts_ns: list[int], hosts: list[str]) -> TraceEvents:
    first = min(starts_ns) if starts_ns else 0
    names: list[str] = []
    index: dict[str, int] = {}
    cols: dict[str, list[np.ndarray]] = {c: [] for c in ("pid", "tid", "start", "dur", "name", "source", "kind")}
    procs, threads = [], []
    flows: list[tuple[np.ndarray, ...]] = []
    counter_names: list[str] = []
    counter_pid: list[int] = []
    c_series, c_t, c_v = [], [], []
    offset = 0
    for k, (ev, start, host) in enumerate(zip(parts, starts_ns, hosts)):
        base = (k + 1) * PID_STRIDE
        shift = (start - first) * 1000
        ids = np.zeros(len(ev.names), np.int32)
        for i, n in enumerate(ev.names):
            if n not in index:
                index[n] = len(names)
                names.append(n)
            ids[i] = index[n]
        cols["pid"].append((ev.pid.astype(np.int64) + base).astype(np.uint32))
        cols["tid"].append(ev.tid)
        cols["start"].append(ev.start_ps + shift)
        cols["dur"].append(ev.duration_ps)
        cols["name"].append(ids[ev.name] if len(ev.name) else np.zeros(0, np.int32))
        cols["source"].append(ev.source)
        cols["kind"].append(ev.kind)
        procs += [(base + int(p), f"{host} · {'Host Threads' if p == HOST_PID else n}")
                  for p, n in ev.processes.iter_rows()]
        threads.append(ev.threads.with_columns((pl.col("pid").cast(pl.Int64) + base).cast(pl.UInt32)))
        fl = ev.flows
        if fl is not None and len(fl):
            flows.append((fl.src + offset, fl.dst + offset, fl.kind, fl.category, fl.flow_id))
        c = ev.counters
        if c is not None and len(c):
            c_series.append(c.series.astype(np.int64) + len(counter_names))
            c_t.append(c.t_ps + shift)
            c_v.append(c.value)
            counter_names += [f"{host} · {n}" for n in c.names]
            counter_pid += (c.pid.astype(np.int64) + base).tolist()
        offset += len(ev)

    def cat(key: str, dtype) -> np.ndarray:
        return np.concatenate(cols[key]).astype(dtype) if cols[key] else np.zeros(0, dtype)

    table = (FlowTable.empty() if not flows else
             FlowTable(*(np.concatenate([f[i] for f in flows]) for i in range(5))))
    counters = (build(counter_names, counter_pid, np.concatenate(c_series), np.concatenate(c_t), np.concatenate(c_v))
                if counter_names else CounterTable.empty())
    return TraceEvents(
        pid=cat("pid", np.uint32), tid=cat("tid", np.uint32), start_ps=cat("start", np.int64),
        duration_ps=cat("dur", np.int64), name=cat("name", np.int32), source=cat("source", np.int64),
        kind=cat("kind", np.uint8), names=names,
        processes=pl.DataFrame(procs, schema={"pid": pl.UInt32, "name": pl.String}, orient="row"),
        threads=pl.concat(threads) if threads else pl.DataFrame(schema={"pid": pl.UInt32, "tid": pl.UInt32,
                                                                        "name": pl.String}),
        frame=None, counters=counters, flows=table)
