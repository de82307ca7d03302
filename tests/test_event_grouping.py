"""The one grouping pass per host (event_grouping.py) against XProf 2.24.2 on both sides.

tests/fixtures/grouping/orbax_serving (scripts/make_grouping_fixture.py) has `OrbaxServing::ProcessBatch`
and `ProcessBatch` roots, two steps launched by `DoEnqueueContinuationProgram`, and host run ids with
bits 27 and 29 set (the device keeps the low 27). XProf makes both names roots, ties only the
`DoEnqueueProgram` launches and masks run ids to 27 bits: steps 2 and 5 have no device step. Its
oracle/ holds XProf's overview, input pipeline, op profile and trace viewer for the fixture.
"""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from conftest import FIXTURES
from test_pod_combined import IDLE_PS_PER_CORE, _compare_tree
from test_trace_events import as_sorted_table, digest_rows

from tputui.analysis import event_grouping, event_groups, host_map, op_profile, op_stats
from tputui.analysis.event_grouping import HostGrouping, host_grouping
from tputui.analysis.event_groups import RUN_ID_MASK
from tputui.analysis.trace_events import trace_events
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.data.xspace import decode
from tputui.export import export_text

BASE = FIXTURES / "grouping" / "orbax_serving"
ORACLE = BASE / "oracle"
XPLANE = next(BASE.rglob("*.xplane.pb"))
CORES = 2
STEPS_WITH_DEVICE = ["0", "1", "3", "4", "6", "7"]  # XProf's: the continuation-launched steps have none


def _frame():
    return decode(XPLANE.read_bytes())


def _run() -> RunData:
    return RunData(open_logdir(str(BASE)).runs[0], use_cache=False, jobs=1)


def _oracle(tool: str):
    return json.loads((ORACLE / f"{tool}.json").read_text())


def test_grouping_summary_is_xprofs():
    g = host_grouping(_frame())
    assert g.enabled and g.count == 8
    assert list(g.name) == [f"{'OrbaxServing::ProcessBatch' if i % 2 == 0 else 'ProcessBatch'} {i}" for i in range(8)]
    assert g.named.all() and (g.step_num == -1).all()
    launches = g.launch_map()
    # One key per core and step launched by DoEnqueueProgram; run ids masked to 27 bits.
    assert sorted({grp for grp in launches.values()}) == [int(s) for s in STEPS_WITH_DEVICE]
    assert len(launches) == CORES * len(STEPS_WITH_DEVICE)
    assert all(run_id == 1000 + grp for (_o, _q, run_id, _c), grp in launches.items())
    assert all(run_id <= RUN_ID_MASK for (_o, _q, run_id, _c) in launches)


def test_grouping_is_small_picklable_and_frame_free():
    g = host_grouping(_frame())
    back = pickle.loads(pickle.dumps(g))
    assert back.name == g.name and back.launch_map() == g.launch_map()
    assert np.array_equal(back.root_rank, g.root_rank) and np.array_equal(back.named, g.named)
    assert len(pickle.dumps(g)) < 4096
    assert not any(isinstance(v, type(_frame())) for v in vars(g).values())


def test_grouping_is_computed_once_per_frame(monkeypatch):
    frame = _frame()
    first = host_grouping(frame)
    monkeypatch.setattr(event_groups, "_group_events", lambda *a: pytest.fail("grouped a second time"))
    assert host_grouping(frame) is first
    stats = op_stats.map_host(frame, "serve-0")
    assert stats.grouping is first  # the op-stats map and the step engines read the same pass


def test_trace_viewer_reads_the_op_stats_grouping(monkeypatch):
    grouping = op_stats.map_host(_frame(), "serve-0").grouping
    grouping = pickle.loads(pickle.dumps(grouping))  # as it comes back from the cache or a worker
    monkeypatch.setattr(event_groups, "_group_events", lambda *a: pytest.fail("the trace grouped again"))
    ev = trace_events(_frame(), grouping=grouping)
    dg = np.load(ORACLE / "trace_viewer.digest.npz")
    assert as_sorted_table(*digest_rows(ev)) == _digest_table(dg)


def test_known_grouping_comes_from_the_cached_op_stats(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    run = RunData(open_logdir(str(BASE)).runs[0], jobs=1)
    assert host_map.known_grouping(run) is None  # nothing computed yet: the trace viewer groups the frame
    host_map.host_op_stats(run)
    fresh = RunData(open_logdir(str(BASE)).runs[0], jobs=1)  # another process: only the disk cache
    g = host_map.known_grouping(fresh)
    assert isinstance(g, HostGrouping) and g.launch_map() == host_grouping(_frame()).launch_map()


def _digest_table(dg) -> list[tuple]:
    ev, names = dg["events"], dg["names"]
    return sorted(zip(ev[:, 0].tolist(), ev[:, 1].tolist(), ev[:, 2].tolist(), ev[:, 3].tolist(),
                      [str(names[i]) for i in ev[:, 4]], [bool(x) for x in ev[:, 5]]))


def test_trace_viewer_equals_xprof():
    """Every event: host roots renamed, device Steps named after their launch's step, the
    continuation-launched steps' device steps dropped."""
    ev = trace_events(_frame())
    dg = np.load(ORACLE / "trace_viewer.digest.npz")
    assert as_sorted_table(*digest_rows(ev)) == _digest_table(dg)
    names = set(np.asarray(ev.names, object)[ev.name].tolist())
    assert "OrbaxServing::ProcessBatch 2" in names and "ProcessBatch 5" in names


def test_input_pipeline_steps_equal_xprof():
    got = json.loads(export_text(_run(), "input_pipeline_analyzer", "json"))
    table = _oracle("input_pipeline_analyzer")[1]
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, (c.get("v") if c else None for c in r["c"]))) for r in table["rows"]]
    assert [s["step"] for s in got["steps"]] == [r["stepnum"] for r in rows] == STEPS_WITH_DEVICE
    for s, r in zip(got["steps"], rows):
        for key, col in (("tc_compute_ms", "tcComputeTimeMs"), ("tc_infeed_ms", "tcInfeedTimeMs"),
                         ("tc_outfeed_ms", "tcOutfeedTimeMs"), ("tc_idle_ms", "tcIdleTimeMs"),
                         ("host_transfer_ms", "hostTransferTimeMs")):
            assert s[key] == pytest.approx(r[col], abs=1e-6), (key, s["step"])


def test_overview_equals_xprof():
    got, ora = json.loads(export_text(_run(), "overview_page", "json")), _oracle("overview_page")
    p = ora[0]["p"]
    for key in ("device_idle_time_percent", "device_duty_cycle_percent", "host_idle_time_percent"):
        assert f"{got[key]:.1f}%" == p[key], key
    assert got["idle_time_high_confidence_ps"] == pytest.approx(float(p["idle_time_high_confidence_ps"]), rel=1e-5)
    steps = ora[1]["p"]
    assert f"{got['step_time_ms']['avg']:.2f}" == steps["steptime_ms_average"]
    assert [r["c"][0]["v"] for r in ora[1]["rows"]] == STEPS_WITH_DEVICE


def test_op_profile_equals_xprof():
    """Every program's children, all figures (the program rows' own FLOPS utilization is the known
    gap of tests/test_pod_combined.py, 0.87x here too, unrelated to grouping)."""
    theirs = _oracle("op_profile")["byProgram"]
    ours = op_profile.analyze(_run()).to_json()["by_program"]
    total, bad = theirs["metrics"]["rawTime"], []
    assert [p["name"] for p in ours["children"]] == [p["name"] for p in theirs["children"]]
    for prog_a, prog_b in zip(ours["children"], theirs["children"]):
        assert len(prog_a["children"]) == len(prog_b["children"])
        for a, b in zip(prog_a["children"], prog_b["children"]):
            bad += _compare_tree(a, b, total, CORES * IDLE_PS_PER_CORE, f"/{prog_b['name']}")
    assert sum(len(p["children"]) for p in theirs["children"]) > 10
    assert not bad, "\n".join(bad[:20])


def test_facts_table_has_one_home():
    """The three facts live in event_groups.py only: no module keeps its own copy."""
    assert event_groups.RUN_ID_MASK == (1 << 27) - 1
    assert event_groups.LAUNCH_EVENT == "DoEnqueueProgram"
    assert event_groups.ROOT_LEVEL_BY_NAME["OrbaxServing::ProcessBatch"] == 2
    import tputui.analysis.group_extract as group_extract
    import tputui.analysis.tpu_steps as tpu_steps
    import tputui.analysis.trace_events as te
    for mod in (tpu_steps, te, event_grouping, group_extract):
        src = open(mod.__file__).read()
        assert "1 << 27" not in src and "1 << 28" not in src and "OrbaxProcessBatch" not in src
        assert "DoEnqueueContinuationProgram" not in src


def test_a_grouping_of_another_file_is_not_used():
    """Root ranks index the host's candidate roots: given a grouping whose candidates do not match
    the frame's (another file's), the trace viewer groups its own frame."""
    from dataclasses import replace

    good = host_grouping(_frame())
    assert good.candidates == 8 and good.root_rank.tolist() == list(range(8))
    stale = replace(good, candidates=good.candidates + 1, name=tuple("x" for _ in good.name))
    ev = trace_events(_frame(), grouping=stale)
    dg = np.load(ORACLE / "trace_viewer.digest.npz")
    assert as_sorted_table(*digest_rows(ev)) == _digest_table(dg)
