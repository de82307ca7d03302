"""Trace-viewer events vs XProf's own trace_viewer output on every fixture profile.

The oracle is `oracle/[<run>/]trace_viewer.digest.npz` (XProf 2.24's trace_viewer JSON reduced
to pid, tid, ts and dur in ns, name and phase per X/i event) and `trace_viewer.summary.json`.
Tolerance: none. Every event must match exactly: same pid and tid, same name, same phase,
and ts / dur equal to the nanosecond after the same float rounding XProf's JSON went through.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis.stdsort import sort_order
from tputui.analysis.trace_derived import offload_name, parse_tf_op
from tputui.analysis.trace_events import trace_events
from tputui.data.xspace import decode


def _has_trace_oracle(profile: str, run: str) -> bool:
    d = PROFILES / profile / "oracle"
    return (d / "trace_viewer.digest.npz").exists() or (d / run / "trace_viewer.digest.npz").exists()


# Every fixture run that has XProf's trace_viewer output.
RUNS = sorted(r for r in {(f.relative_to(PROFILES).parts[0], f.parent.name) for f in PROFILES.rglob("*.xplane.pb")}
              if _has_trace_oracle(*r))


def oracle_path(profile: str, run: str, name: str):
    d = PROFILES / profile / "oracle"
    return d / name if (d / name).exists() else d / run / name


def digest_rows(ev) -> np.ndarray:
    """Our events as the digest's rows (pid, tid, ts_ns, dur_ns, name, is_X), names as strings."""
    # XProf writes ps / 1e6 as a float; the digest rounds that * 1000 (half to even).
    ts = np.round(ev.start_ps / 1e6 * 1000).astype(np.int64)
    dur = np.round(ev.duration_ps / 1e6 * 1000).astype(np.int64)
    return ev.pid.astype(np.int64), ev.tid.astype(np.int64), ts, dur, np.asarray(ev.names, object)[ev.name], \
        (ev.duration_ps != 0)


def as_sorted_table(pid, tid, ts, dur, names, is_x) -> list[tuple]:
    return sorted(zip(pid.tolist(), tid.tolist(), ts.tolist(), dur.tolist(), list(names), is_x.tolist()))


@pytest.fixture(scope="module", params=RUNS, ids=["/".join(r) for r in RUNS])
def case(request):
    profile, run = request.param
    xp = next(f for f in (PROFILES / profile).rglob("*.xplane.pb") if f.parent.name == run)
    ev = trace_events(decode(xp.read_bytes()))
    dg = np.load(oracle_path(profile, run, "trace_viewer.digest.npz"))
    summary = json.loads(oracle_path(profile, run, "trace_viewer.summary.json").read_text())
    return profile, ev, dg, summary


def test_every_event_matches_xprof(case):
    profile, ev, dg, _ = case
    rows, names = dg["events"], dg["names"]
    theirs = as_sorted_table(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], names[rows[:, 4]].astype(object),
                             rows[:, 5].astype(bool))
    ours = as_sorted_table(*digest_rows(ev))
    assert len(ours) == len(theirs)
    assert ours == theirs


def test_complete_event_count_and_span_match_summary(case):
    _, ev, _, summary = case
    assert int(np.count_nonzero(ev.duration_ps)) == summary["complete_events"]
    span = summary["time_span"]
    x = ev.duration_ps != 0
    assert ev.start_ps[x].min() / 1e6 == pytest.approx(span["first_ts_us"], abs=1e-6)
    assert (ev.start_ps[x] + ev.duration_ps[x]).max() / 1e6 == pytest.approx(span["last_end_us"], abs=1e-6)


def test_processes_and_threads_match_summary(case):
    _, ev, _, summary = case
    procs = dict(ev.processes.iter_rows())
    assert {str(p): n for p, n in procs.items()} == {p: v["name"] for p, v in summary["processes"].items()}
    threads = ev.threads.group_by("pid").len()
    assert {str(p): n for p, n in threads.iter_rows()} == {p: v["threads"] for p, v in summary["processes"].items()}
    for pid, v in summary["processes"].items():
        assert int(np.count_nonzero(ev.duration_ps[ev.pid == int(pid)])) == v["complete_events"]


POD = FIXTURES / "pod"
POD_HOSTS = sorted(str(f.relative_to(POD)) for f in POD.rglob("*.xplane.pb")
                   if (f.parents[3] / "oracle" / "trace_viewer" / (f.name[:-len(".xplane.pb")] + ".digest.npz")).exists())


@pytest.mark.parametrize("rel", POD_HOSTS)
def test_tpu_training_steps_match_xprof(rel):
    """Synthetic pod hosts (tests/fixtures/pod): device Steps named after the host step that
    launched their modules, ops grouped by step, as XProf's trace_viewer shows them."""
    xp = POD / rel
    host = xp.name[:-len(".xplane.pb")]
    ev = trace_events(decode(xp.read_bytes()))
    dg = np.load(xp.parents[3] / "oracle" / "trace_viewer" / f"{host}.digest.npz")
    rows, names = dg["events"], dg["names"]
    theirs = as_sorted_table(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], names[rows[:, 4]].astype(object),
                             rows[:, 5].astype(bool))
    assert as_sorted_table(*digest_rows(ev)) == theirs
    steps = [ev.names[n] for n, t in zip(ev.name.tolist(), ev.tid.tolist()) if t == 1]
    assert steps and all(n.startswith("train ") for n in steps)


def test_steps_are_named_like_xprof():
    ev = trace_events(decode(next((PROFILES / "jax_mlp").rglob("*.xplane.pb")).read_bytes()))
    names = [ev.names[i] for i in ev.name.tolist()]
    steps = sorted((int(n.split()[1]), s) for n, s in zip(names, ev.start_ps.tolist()) if n.startswith("train "))
    assert [k for k, _ in steps] == list(range(20))
    assert [s for _, s in steps] == sorted(s for _, s in steps)  # step k starts before step k+1
    assert "train" not in names


def test_tpu_derived_lines():
    ev = trace_events(decode(next((PROFILES / "tpu_v6e_inference").rglob("*.xplane.pb")).read_bytes()))
    tpu0 = ev.threads.filter(ev.threads["pid"] == 3)["name"].to_list()
    assert tpu0 == ["XLA Modules", "XLA Ops", "Async XLA Ops", "XLA TraceMe", "Framework Name Scope",
                    "Framework Ops", "Source code"] + [f"Host Offload Ops row {i}" for i in range(4)]
    # Async XLA Ops keeps its thread but none of its events; Overlay (empty) is gone.
    assert not np.any((ev.pid == 3) & (ev.tid == 4))


def test_parse_tf_op():
    assert parse_tf_op("jit(f)/jit(main)/add:") == (["jit(f)", "jit(main)"], "add", True)
    assert parse_tf_op("model/dense/MatMul:MatMul") == (["model", "dense"], "MatMul", True)
    assert parse_tf_op("jit(f)/transpose[permutation=(1, 0)]:") == (["jit(f)"], "transpose", True)
    assert parse_tf_op("a/b/reduce_sum_3:") == (["a", "b"], "reduce_sum", True)
    assert parse_tf_op("Iterator::Root::Prefetch:") == ([], "Iterator::Prefetch:", False)
    assert parse_tf_op("no colon here ") == ([], "no colon here", False)


def test_offload_name():
    assert offload_name("copy-start") == "offload-copy.0"
    assert offload_name("copy-done.3") == "offload-copy.3"
    assert offload_name("dynamic-slice-start.12") == "offload-dynamic-slice.12"


def test_std_sort_order_matches_libstdcxx():
    cases = json.loads((FIXTURES / "stdsort_cases.json").read_text())["cases"]
    for c in cases:
        keys = np.array(c["keys"])
        assert sort_order(keys).tolist() == c["order"]


def test_std_sort_order_without_ties_is_the_sorted_order():
    keys = np.array([5, 1, 4, 2, 3])
    assert sort_order(keys).tolist() == [1, 3, 4, 2, 0]
    a, b = np.array([1, 1, 0, 0]), np.array([2, 1, 9, 8])
    assert sort_order(a, b).tolist() == [3, 2, 1, 0]


DEVICE_CASES = [PROFILES / "tpu_v6e_inference"] + sorted(POD.rglob("*.xplane.pb"))


@pytest.mark.parametrize("path", DEVICE_CASES, ids=lambda p: p.name)
def test_derived_lines_column_path_equals_op_by_op(path, monkeypatch):
    from tputui.analysis import trace_derived as te

    xp = path if path.suffix == ".pb" else next(path.rglob("*.xplane.pb"))
    frame = decode(xp.read_bytes())
    fast = as_sorted_table(*digest_rows(trace_events(frame)))
    monkeypatch.setattr(te, "DERIVE_COLUMNS", False)
    slow = as_sorted_table(*digest_rows(trace_events(frame)))
    assert fast == slow


def synthetic_tpu_xspace(seed: int) -> bytes:
    """One TPU core: modules (the groups) holding ops whose tf_op scopes, sources and spans vary."""
    from tputui.proto import xplane_pb2

    rng = np.random.default_rng(seed)
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=0, name="/device:TPU:0")
    stat_ids = {"tf_op": 1, "source": 2}
    for name, i in stat_ids.items():
        plane.stat_metadata[i].id = i
        plane.stat_metadata[i].name = name
    scopes = ["jit(f)", "jit(main)", "while", "body", "cond", "jvp(g)", "transpose"]
    ops = ["add", "mul", "dot_general", "reduce_sum", "MatMul:MatMul", "Relu:Relu"]
    n_md = 40
    for m in range(1, n_md + 1):
        md = plane.event_metadata[m]
        md.id, md.name = m, f"%op.{m} = f32[] op()"
        md.display_name = f"op.{m}"
        if rng.random() < 0.85:
            depth = int(rng.integers(0, 5))
            path = "/".join(rng.choice(scopes[:4] if m % 3 else scopes, depth).tolist() + [str(rng.choice(ops))])
            if ":" not in path:
                path += ":"
            md.stats.add(metadata_id=1, str_value=path)
        if rng.random() < 0.6:
            md.stats.add(metadata_id=2, str_value=f"model.py:{int(rng.integers(1, 6))}")
    plane.event_metadata[n_md + 1].id = n_md + 1
    plane.event_metadata[n_md + 1].name = "module"
    modules = plane.lines.add(id=2, name="XLA Modules", timestamp_ns=0)
    oline = plane.lines.add(id=3, name="XLA Ops", timestamp_ns=0)
    t = 1000
    for _ in range(int(rng.integers(3, 8))):
        start = t
        for _ in range(int(rng.integers(10, 60))):
            d = int(rng.choice([0, 1000, 2000, 5000, 100000]))
            md = int(rng.integers(1, 11)) if rng.random() < 0.7 else int(rng.integers(1, n_md + 1))
            oline.events.add(metadata_id=md, offset_ps=t, duration_ps=d)
            t += d + int(rng.choice([0, 0, 500, 3000]))
        modules.events.add(metadata_id=n_md + 1, offset_ps=start, duration_ps=t - start)
        t += int(rng.integers(1000, 20000))
    return space.SerializeToString()


@pytest.mark.parametrize("seed", range(25))
def test_derived_lines_column_path_on_random_ops(seed, monkeypatch):
    from tputui.analysis import trace_derived as te

    frame = decode(synthetic_tpu_xspace(seed))
    fast = trace_events(frame)
    assert int(np.count_nonzero(fast.kind == 2)) > 0
    monkeypatch.setattr(te, "DERIVE_COLUMNS", False)
    slow = trace_events(frame)
    # Exact: same derived events, names and ps spans.
    key = lambda ev: sorted(zip(ev.tid.tolist(), ev.start_ps.tolist(), ev.duration_ps.tolist(),
                                [ev.names[i] for i in ev.name.tolist()]))
    assert key(fast) == key(slow)


def test_step_name_stats_in_the_file_name_events():
    """A space XProf considers grouped keeps its events, named by their own step_name stats."""
    from tputui.proto import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=0, name="/host:CPU")
    for i, name in ((1, "group_id"), (2, "step_name")):
        plane.stat_metadata[i].id, plane.stat_metadata[i].name = i, name
    plane.event_metadata[1].id, plane.event_metadata[1].name = 1, "train"
    line = plane.lines.add(id=7, name="python", timestamp_ns=1)
    for k in range(3):
        ev = line.events.add(metadata_id=1, offset_ps=k * 10_000, duration_ps=5_000)
        ev.stats.add(metadata_id=1, int64_value=k)
        ev.stats.add(metadata_id=2, str_value=f"my step {k}")
    ev = trace_events(decode(space.SerializeToString()))
    assert [ev.names[i] for i in ev.name.tolist()] == ["my step 0", "my step 1", "my step 2"]
    assert ev.start_ps.tolist() == [1000, 11000, 21000]


@pytest.mark.parametrize("seed", range(6))
def test_std_sort_in_c_equals_the_python_replay(seed):
    """The C replay (_derive.std_sort) against the Python reference: exact order, ties included."""
    from tputui.analysis import stdsort

    if stdsort._derive is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(seed)
    for n in (2, 17, 100, 3000):
        a, b = rng.integers(0, max(n // 8, 2), n), rng.integers(0, 3, n)  # many ties
        assert sort_order(a, b).tolist() == sort_order(a, b, use_c=False).tolist()
    for c in json.loads((FIXTURES / "stdsort_cases.json").read_text())["cases"]:
        assert sort_order(np.array(c["keys"])).tolist() == c["order"]


@pytest.mark.parametrize("path", DEVICE_CASES, ids=lambda p: p.name)
def test_offload_rows_in_c_equal_one_op_at_a_time(path, monkeypatch):
    """Host Offload Ops rows from _derive.pair_offload equal _OffloadRows' (same events, same order)."""
    from tputui.analysis import trace_derived as te

    if te._derive is None:
        pytest.skip("the C extension is not built")
    xp = path if path.suffix == ".pb" else next(path.rglob("*.xplane.pb"))
    frame = decode(xp.read_bytes())
    fast = trace_events(frame)
    monkeypatch.setattr(te, "OFFLOAD_IN_C", False)
    slow = trace_events(frame)
    assert fast.names == slow.names
    for col in ("pid", "tid", "start_ps", "duration_ps", "name", "source", "kind"):
        assert getattr(fast, col).tolist() == getattr(slow, col).tolist(), col
    if path == DEVICE_CASES[0]:  # the real TPU profile has offloaded copies
        assert int(np.count_nonzero(fast.tid >= te.TID_OFFLOAD_FIRST)) > 0


@pytest.mark.parametrize("path", DEVICE_CASES[:2], ids=lambda p: p.name)
def test_first_pass_is_the_full_events_without_the_derived_lines(path):
    """trace_events(derived=False) = the first rows of the full result, same order, no derived event."""
    xp = path if path.suffix == ".pb" else next(path.rglob("*.xplane.pb"))
    frame = decode(xp.read_bytes())
    full, first = trace_events(frame), trace_events(frame, derived=False)
    n = len(first)
    assert 0 < n < len(full) and not (first.kind == 2).any() and (full.kind[n:] == 2).all()
    for col in ("pid", "tid", "start_ps", "duration_ps", "source", "kind"):
        assert getattr(first, col).tolist() == getattr(full, col)[:n].tolist(), col
    assert [first.names[i] for i in first.name] == [full.names[i] for i in full.name[:n]]
    derived_tids = set(full.tid[n:].tolist())
    assert set(first.threads["tid"].to_list()) == set(full.threads["tid"].to_list()) - derived_tids
