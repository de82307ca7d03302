"""Counter tracks of the trace viewer: `_counters_` lines (TPU v6e / v7x performance counters, the
synthetic GPU profile's counters) and allocator memory in use, as step functions over time.

Oracle: the frame's own stats, read event by event (`stat_map`), independently of the columnar
build; the sparkline columns and the value at a time against a direct evaluation of the step
function.
"""
from __future__ import annotations

import numpy as np
from conftest import FIXTURES, PROFILES

from tputui.analysis.trace import TraceIndex
from tputui.analysis.trace_events import trace_events
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData


def frame_of(root):
    return RunData(open_logdir(str(root)).runs[0]).frame()


def expected_counter_samples(frame) -> dict[tuple[int, str], list[tuple[int, float]]]:
    """(plane id + 1, event name) -> [(start_ps, counter_value)] of every `_counters_` event."""
    r = frame.raw
    out: dict = {}
    for row in range(frame.num_events):
        line = int(r.event_line[row])
        if r.line_name[line] != "_counters_":
            continue
        plane = int(r.line_plane[line])
        name = r.em_name[int(frame.events["metadata"][row])]
        value = frame.stat_map("event", row)["counter_value"]
        out.setdefault((int(r.plane_id[plane]) + 1, name), []).append((int(frame.start_ps[row]), float(value)))
    return {k: sorted(v) for k, v in out.items()}


def series_samples(c, k):
    sl = c.samples(k)
    return list(zip(c.t_ps[sl].tolist(), c.value[sl].tolist()))


def test_counter_lines_become_series_not_threads():
    for root in (FIXTURES / "counters" / "v6e_counters", FIXTURES / "flows" / "gpu_launch"):
        frame = frame_of(root)
        ev = trace_events(frame)
        c = ev.counters
        expect = expected_counter_samples(frame)
        got = {(int(c.pid[k]), c.names[k]): series_samples(c, k) for k in range(len(c)) if c.unit(k) == ""}
        assert got == expect and expect
        assert "_counters_" not in ev.threads["name"].to_list()  # XProf gives the line no resource
        counter_rows = np.flatnonzero(np.isin(frame.raw.event_line,
                                              [i for i, n in enumerate(frame.raw.line_name) if n == "_counters_"]))
        assert not np.isin(ev.source, counter_rows).any()  # nor events


def test_allocator_memory_in_use():
    frame = frame_of(FIXTURES / "flows" / "gpu_launch")
    c = trace_events(frame).counters
    k = c.names.index("Memory in use: GPU_0_bfc")
    assert c.unit(k) == "bytes"
    rows = [row for row in range(frame.num_events)
            if frame.raw.em_name[int(frame.events["metadata"][row])] in ("MemoryAllocation", "MemoryDeallocation")]
    expect = sorted((int(frame.start_ps[r]), float(frame.stat_map("event", r)["bytes_allocated"])) for r in rows)
    assert series_samples(c, k) == expect
    # A real CPU profile: the allocator's series carries every allocation event's heap figure.
    keras = trace_events(frame_of(PROFILES / "tf_keras"))
    names = [n for n in keras.counters.names if n.startswith("Memory in use")]
    assert names and keras.counters.count[keras.counters.names.index(names[0])] > 100


def step_value(samples, t):
    before = [v for s, v in samples if s <= t]
    return before[-1] if before else None


def test_value_at_and_columns_follow_the_step_function():
    c = trace_events(frame_of(FIXTURES / "flows" / "gpu_launch")).counters
    for k in range(len(c)):
        samples = series_samples(c, k)
        t0, t1 = samples[0][0] - 10**6, samples[-1][0] + 10**6
        for t in np.linspace(t0, t1, 37).astype(np.int64).tolist():
            assert c.value_at(k, t) == step_value(samples, t)
        edges = np.linspace(t0, t1, 23).round().astype(np.int64)
        cols = c.columns(k, edges)
        for i in range(len(edges) - 1):
            a, b = int(edges[i]), int(edges[i + 1])
            held = [v for v in [step_value(samples, a)] if v is not None] + [v for s, v in samples if a <= s < b]
            assert (np.isnan(cols[i]) and not held) or cols[i] == max(held), (k, i)


def test_the_index_gives_counters_a_section():
    ix = TraceIndex(trace_events(frame_of(FIXTURES / "counters" / "v6e_counters")))
    pids = {s.pid for s in ix.sections}
    assert set(ix.counters.pid.tolist()) <= pids and len(ix.counters) == 10


def test_memory_series_follow_the_memory_profile_per_memory_id():
    """The allocator series are the memory profile's heap in use (its snapshots are checked against
    XProf's memory_profile in test_memory_profile.py): one series per memory id, same values in the
    same order, same spacing in time."""
    from tputui.analysis import memory_profile

    for profile in ("tpu_v6e_inference", "tf_keras"):
        run = RunData(open_logdir(str(PROFILES / profile)).runs[0])
        mp = memory_profile.analyze(run)
        c = trace_events(run.frame()).counters
        ours = {c.names[k].split(": ", 1)[1]: k for k in range(len(c)) if c.unit(k) == "bytes"}
        assert set(ours) == set(mp.allocators), profile
        for mid, a in mp.allocators.items():
            snap = a.snapshots.sort("time_ps", maintain_order=True)
            sl = c.samples(ours[mid])
            assert np.array_equal(c.value[sl], snap["heap_bytes"].to_numpy().astype(float)), (profile, mid)
            assert np.array_equal(np.diff(c.t_ps[sl]), np.diff(snap["time_ps"].to_numpy())), (profile, mid)


def test_an_event_repeating_its_heap_stat_gives_one_sample_with_the_last_value():
    """XProf visits an event's stats in order, so a repeated stat ends at its last value: the
    allocator series takes that one (one sample per event), as the memory profile does."""
    from tputui.data.xspace import decode
    from tputui.proto import xplane_pb2

    path = next((FIXTURES / "flows" / "gpu_launch").rglob("*.xplane.pb"))
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    changed = None
    for plane in space.planes:
        sm_id = next((k for k, m in plane.stat_metadata.items() if m.name == "bytes_allocated"), None)
        em_ids = {k for k, m in plane.event_metadata.items() if m.name == "MemoryAllocation"}
        for line in plane.lines:
            for ev in line.events:
                if changed is None and sm_id is not None and ev.metadata_id in em_ids:
                    first = next(s for s in ev.stats if s.metadata_id == sm_id)
                    ev.stats.add(metadata_id=sm_id, int64_value=first.int64_value + 12345)
                    changed = first.int64_value + 12345
    assert changed is not None
    frame = decode(space.SerializeToString())
    c = trace_events(frame).counters
    k = c.names.index("Memory in use: GPU_0_bfc")
    rows = [row for row in range(frame.num_events)
            if frame.raw.em_name[int(frame.events["metadata"][row])] in ("MemoryAllocation", "MemoryDeallocation")]
    assert len(series_samples(c, k)) == len(rows)  # one sample per event, not per stat
    assert changed in c.value[c.samples(k)].tolist()
