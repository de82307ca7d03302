"""Several hosts stacked in the trace viewer: each host's processes renamed and renumbered, times
aligned by each host's absolute profile start, names merged, flows and counters carried along;
the H picker (space toggles, Enter shows) drives it.

Oracle: each host's own trace viewer events (trace_events of its frame) and its `Task
Environment` profile_start_time read from the frame.
"""
from __future__ import annotations

import numpy as np
from conftest import FIXTURES, PROFILES
from test_trace_viewer import loaded

from tputui.analysis.trace_events import trace_events
from tputui.analysis.trace_hosts import PID_STRIDE, host_events, profile_start_ns, stack, stacked_index
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

POD = FIXTURES / "pod" / "pod_v4_32"


def events_by_key(ev, names=None, pid_of=lambda p: p, shift=0):
    names = names or ev.names
    return sorted(zip(np.vectorize(pid_of)(ev.pid.astype(np.int64)).tolist() if len(ev) else [], ev.tid.tolist(),
                      (ev.start_ps + shift).tolist(), ev.duration_ps.tolist(), [names[i] for i in ev.name.tolist()]))


def test_stacked_hosts_keep_every_event_under_their_own_processes():
    run = RunData(open_logdir(str(POD)).runs[0])
    hosts = run.hosts[:3]
    ix = stacked_index(run, hosts)
    assert ix.complete and ix.num_events == sum(len(trace_events(run.frame(h))) for h in hosts)
    for k, h in enumerate(hosts):
        own = trace_events(run.frame(h))
        base = (k + 1) * PID_STRIDE
        secs = [s for s in ix.sections if base <= s.pid < base + PID_STRIDE]
        assert secs and all(s.name.startswith(f"{h} · ") for s in secs)
        assert {s.pid - base for s in secs} == set(own.processes["pid"].to_list())
        mine = np.flatnonzero(np.isin(np.asarray(ix.row_track)[np.asarray(ix.event_row)],
                                      [t for s in secs for t in s.tracks]))
        got = sorted(zip(np.asarray(ix.start)[mine].tolist(), np.asarray(ix.end)[mine].tolist(),
                         [ix.names[int(i)] for i in np.asarray(ix.name)[mine]]))
        expect = sorted(zip(own.start_ps.tolist(), (own.start_ps + own.duration_ps).tolist(),
                            [own.names[i] for i in own.name.tolist()]))
        assert got == expect, h  # same start times: this pod's hosts share one profile start
    assert len(ix.names) == len(set(ix.names))  # one id per name across hosts
    # Details: each event's stats from its own host's frame.
    for k, h in enumerate(hosts):
        base = (k + 1) * PID_STRIDE
        tracks = [t for s in ix.sections if base <= s.pid < base + PID_STRIDE for t in s.tracks]
        i = int(np.flatnonzero(np.isin(np.asarray(ix.row_track)[np.asarray(ix.event_row)], tracks)
                               & (np.asarray(ix.source) >= 0) & (np.asarray(ix.kind) == 0))[0])
        frame = run.frame(h)
        src = int(ix.source[i])
        assert ix.stats(i) == {**frame.metadata_stat_map(int(frame.events["metadata"][src])),
                               **frame.stat_map("event", src)}
    assert len(ix.flows) == sum(len(trace_events(run.frame(h)).flows) for h in hosts)


def test_hosts_are_aligned_by_their_absolute_profile_start():
    """Two real captures taken seconds apart, stacked as two hosts: the later one's events move
    by the difference of the profile starts (ns -> ps), the earlier one's stay."""
    runs = [RunData(r) for r in open_logdir(str(PROFILES / "jax_two_runs")).runs]
    parts = [host_events(r, r.hosts[0]) for r in runs]
    starts = [s for _, s in parts]
    assert len(set(starts)) == 2 and all(starts)
    assert starts == [profile_start_ns(r.frame()) for r in runs]
    ev = stack([e for e, _ in parts], starts, ["a", "b"])
    first = min(starts)
    n0 = len(parts[0][0])
    for k, (own, start) in enumerate(parts):
        sl = slice(0, n0) if k == 0 else slice(n0, None)
        assert np.array_equal(ev.start_ps[sl], own.start_ps + (start - first) * 1000)
        assert [ev.names[i] for i in ev.name[sl].tolist()] == [own.names[i] for i in own.name.tolist()]
        assert (ev.pid[sl] // PID_STRIDE == k + 1).all()
    # Flows keep linking the same events.
    for k, (own, _) in enumerate(parts):
        off = 0 if k == 0 else n0
        mine = (ev.flows.src >= off) & (ev.flows.src < off + len(own))
        assert np.array_equal(ev.flows.src[mine] - off, own.flows.src)
        assert np.array_equal(ev.flows.dst[mine] - off, own.flows.dst)


def test_stacked_counters_are_renamed_per_host():
    run = RunData(open_logdir(str(FIXTURES / "flows" / "gpu_launch")).runs[0])
    own, start = host_events(run, run.hosts[0])
    ev = stack([own, own], [start, start], ["x", "y"])
    c = ev.counters
    assert len(c) == 2 * len(own.counters)
    assert sorted(c.names) == sorted([f"x · {n}" for n in own.counters.names] + [f"y · {n}" for n in own.counters.names])
    assert set((c.pid // PID_STRIDE).tolist()) == {1, 2}


async def test_H_picks_hosts_with_space_and_shows_them_stacked_with_enter():
    from textual.widgets import SelectionList

    from tputui.app import TputuiApp
    from tputui.screens.host_stack_picker import HostStackPicker

    app = TputuiApp(open_logdir(str(POD)), tool="trace_viewer", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await loaded(pilot)
        screen = app.screen
        hosts = screen.run_data.hosts
        await pilot.press("H")
        await pilot.pause()
        assert isinstance(app.screen, HostStackPicker)
        assert app.screen.query_one(SelectionList).selected == [hosts[0]]  # the host shown
        await pilot.press("down", "space", "down", "down", "space", "enter")
        await loaded(pilot)
        assert app.screen is screen and screen.stack_hosts == [hosts[0], hosts[1], hosts[3]]
        assert "3 hosts stacked" in str(screen.query_one("#context").render())
        ix = screen.index
        assert ix.num_events == sum(len(trace_events(screen.run_data.frame(h))) for h in screen.stack_hosts)
        assert {s.name.split(" · ")[0] for s in ix.sections} == set(screen.stack_hosts)
        # One host picked: that host alone, as before.
        await pilot.press("H")
        await pilot.pause()
        await pilot.press("space", "down", "space", "down", "space", "down", "space", "enter")
        await loaded(pilot)
        assert screen.stack_hosts is None and screen.host == hosts[2] and screen.error is None
        assert screen.index.num_events == len(trace_events(screen.run_data.frame(hosts[2])))


async def test_H_on_a_one_host_run_says_there_is_nothing_to_stack():
    from tputui.app import TputuiApp
    from tputui.screens.trace_viewer import TraceViewerScreen

    app = TputuiApp(open_logdir(str(PROFILES / "jax_mlp")), tool="trace_viewer", use_cache=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded(pilot)
        await pilot.press("H")
        await pilot.pause()
        assert isinstance(app.screen, TraceViewerScreen) and app.screen.stack_hosts is None
        assert any("one host" in str(n.message) for n in app._notifications)
