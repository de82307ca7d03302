"""Multi-host runs through the op-stats map/reduce against XProf 2.24's combined (ALL_HOSTS) outputs
on the pod fixtures (scripts/make_pod_fixtures.py; XProf's outputs in tests/fixtures/pod/*/oracle):
framework op stats, HLO stats, roofline, op profile and the input pipeline's steps. Counts exact,
floats 1e-9 relative (as the single-host tests), with one stated exception: the device's total time.

XProf's device total time per TensorCore (the span from the first step / op to the last, which sets
IDLE and every "% of total" figure) differs from ours by up to 2.3 us per core on these synthetic
hosts, whose Steps events carry device offsets 7.3 us away from their host times (the real TPU
profile matches exactly). So IDLE is compared within 3 us per core and time shares within 1e-4
relative; every op's own figures stay exact.
"""
from __future__ import annotations

import json
import math

import pytest
from conftest import FIXTURES
from op_tools_helpers import datatable_rows
from test_framework_op_stats import COLUMNS as FOS_COLUMNS
from test_framework_op_stats import RENAMES as FOS_RENAMES

from tputui.analysis import framework_op_stats, hlo_stats, input_pipeline, op_profile, roofline
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

PODS = ["pod_v4_32", "dcn_2slices"]
IDLE_PS_PER_CORE = 3_000_000  # see the module doc
SHARE_REL = 1e-4
SHARES = ("percent", "utilization", "flops", "bandwidth")  # columns / metrics that divide by total time


def _run(pod: str) -> RunData:
    return RunData(open_logdir(str(FIXTURES / "pod" / pod)).runs[0], jobs=1)


def _cores(pod: str) -> int:
    from tputui.analysis import host_map

    return host_map.run_op_stats(_run(pod)).device_core_count


def _same(col: str, a, b, idle_us: float | None) -> bool:
    """Exact / 1e-9 as everywhere, except total-time shares (1e-4) and the IDLE / Program rows (their
    times within `idle_us`, their rates 1e-4), see the module doc."""
    if a == b:
        return True
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
        return True
    whole = idle_us is not None  # the IDLE / Program row: every rate divides by the total time
    if (whole or any(w in col for w in SHARES)) and math.isclose(a, b, rel_tol=SHARE_REL, abs_tol=1e-12):
        return True
    return whole is not None and "time" in col and abs(a - b) <= idle_us


def _mismatches(ours: list[dict], theirs: list[dict], columns, idle_us: float, renames=None) -> list[str]:
    renames = renames or {}
    bad = []
    for i, (a, b) in enumerate(zip(ours, theirs)):
        whole = str(b.get("operation") or b.get("hlo_op_name") or b.get("category")) in ("IDLE", "Program")
        for c in columns:
            mine = a.get(renames.get(c, c))
            if not _same(c, mine, b[c], idle_us if whole else None):
                bad.append(f"row {i} {c}: ours {mine!r} xprof {b[c]!r}")
    return bad


def _oracle(pod: str, tool: str):
    return json.loads((FIXTURES / "pod" / pod / "oracle" / f"{tool}.json").read_text())


@pytest.mark.parametrize("pod", PODS)
def test_framework_op_stats_of_all_hosts_equal_xprof(pod):
    ours = framework_op_stats.analyze(_run(pod))
    doc = _oracle(pod, "framework_op_stats")
    for table, theirs in ((ours.with_idle, doc[0]), (ours.without_idle, doc[1])):
        rows, expect = table.to_dicts(), datatable_rows(theirs)
        assert len(rows) == len(expect) > 1
        bad = _mismatches(rows, expect, FOS_COLUMNS, _cores(pod) * IDLE_PS_PER_CORE / 1e6, FOS_RENAMES)
        assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("pod", PODS)
def test_hlo_stats_of_all_hosts_equal_xprof(pod):
    rows = hlo_stats.analyze(_run(pod)).rows.to_dicts()
    theirs = datatable_rows(_oracle(pod, "hlo_stats"))
    assert len(rows) == len(theirs) > 0
    cols = [c for c in theirs[0] if c not in ("source_info", "vdd_energy")]
    bad = _mismatches(rows, theirs, cols, _cores(pod) * IDLE_PS_PER_CORE / 1e6)
    assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("pod", PODS)
def test_roofline_of_all_hosts_equals_xprof(pod):
    """The Total rows (Program + every op, with and without infeed / outfeed). XProf's per-step rows
    (one Program row per step and their Average) need per-step op databases we do not build yet."""
    rows = [r for r in roofline.analyze(_run(pod)).rows.to_dicts() if r["step"] == "Total"]
    theirs = [r for r in datatable_rows(_oracle(pod, "roofline_model")[0]) if r["step"] == "Total"]
    assert len(rows) == len(theirs) > 0
    cols = [c for c in theirs[0] if c != "source_info"]
    bad = _mismatches(rows, theirs, cols, _cores(pod) * IDLE_PS_PER_CORE / 1e6)
    assert not bad, "\n".join(bad[:20])


def _compare_tree(ours: dict, theirs: dict, total_ps: int, idle_ps: float, path="") -> list[str]:
    """op_profile's tree: names, children, occurrences and flops exact; raw time exact except the
    root and IDLE (which hold the device's total time); utilizations to SHARE_REL."""
    where = f"{path}/{theirs['name']}"
    if ours["name"] != theirs["name"]:
        return [f"{where}: name {ours['name']!r}"]
    m, om = ours["metrics"], theirs["metrics"]
    bad = []
    whole = not path or theirs["name"] == "IDLE"
    if m["occurrences"] != om["occurrences"] or m["raw_flops"] != om["rawFlops"]:
        bad.append(f"{where}: occurrences / flops {m['occurrences']} {m['raw_flops']}")
    if m["raw_time_ps"] != om["rawTime"] and not (whole and abs(m["raw_time_ps"] - om["rawTime"]) <= idle_ps):
        bad.append(f"{where}: raw_time_ps {m['raw_time_ps']} != {om['rawTime']}")
    if not math.isclose(m["flops_utilization"] * m["raw_time_ps"] / total_ps, om["flops"], rel_tol=SHARE_REL,
                        abs_tol=1e-15):
        bad.append(f"{where}: flops_utilization {m['flops_utilization']}")
    if len(ours["children"]) != len(theirs["children"]):
        return bad + [f"{where}: children {[c['name'] for c in ours['children']]}"]
    for a, b in zip(ours["children"], theirs["children"]):
        bad += _compare_tree(a, b, total_ps, idle_ps, where)
    return bad


@pytest.mark.parametrize("pod", PODS)
def test_op_profile_ops_of_all_hosts_equal_xprof(pod):
    """Every program's children (categories, ops, fused ops) against XProf, all figures."""
    theirs = _oracle(pod, "op_profile")["byProgram"]
    ours = op_profile.analyze(_run(pod)).to_json()["by_program"]
    total = theirs["metrics"]["rawTime"]
    bad = []
    for prog_a, prog_b in zip(ours["children"], theirs["children"]):
        assert prog_a["name"] == prog_b["name"]
        for a, b in zip(prog_a["children"], prog_b["children"]):
            bad += _compare_tree(a, b, total, _cores(pod) * IDLE_PS_PER_CORE, f"/{prog_b['name']}")
    assert len(ours["children"]) == len(theirs["children"]) and not bad, "\n".join(bad[:20])


@pytest.mark.xfail(strict=True, reason=(
    "known gap: on these multi-host runs XProf's program-level FLOPS utilization is 0.87x the sum of its "
    "children's (ours is the sum, as on every single-host profile); names, counts, times and every op's "
    "figures agree"))
@pytest.mark.parametrize("pod", PODS)
@pytest.mark.parametrize("ours_key,theirs_key", [("by_program", "byProgram"),
                                                 ("by_program_exclude_idle", "byProgramExcludeIdle")])
def test_op_profile_of_all_hosts_equals_xprof(pod, ours_key, theirs_key):
    theirs = _oracle(pod, "op_profile")[theirs_key]
    ours = op_profile.analyze(_run(pod)).to_json()[ours_key]
    bad = _compare_tree(ours, theirs, theirs["metrics"]["rawTime"], _cores(pod) * IDLE_PS_PER_CORE)
    assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("pod", PODS)
def test_input_pipeline_tpu_steps_of_all_hosts_equal_xprof(pod):
    ours = input_pipeline.analyze(_run(pod)).step_table
    table = _oracle(pod, "input_pipeline_analyzer")[1]
    ids = [c["id"] for c in table["cols"]]
    theirs = [dict(zip(ids, (c.get("v") if c else None for c in r["c"]))) for r in table["rows"]]
    assert ours.height == len(theirs) > 0
    assert ours["name"].to_list() == [r["stepnum"] for r in theirs]
    cols = {"tc_compute_ms": "tcComputeTimeMs", "tc_infeed_ms": "tcInfeedTimeMs", "tc_outfeed_ms": "tcOutfeedTimeMs",
            "tc_idle_ms": "tcIdleTimeMs", "host_transfer_ms": "hostTransferTimeMs",
            "infeed_percent_avg": "infeedPercentAverage", "infeed_percent_min": "infeedPercentMin",
            "infeed_percent_max": "infeedPercentMax"}
    for a, b in zip(ours.to_dicts(), theirs):
        for mine, key in cols.items():
            assert a[mine] == pytest.approx(b[key], rel=1e-9, abs=1e-9), (a["name"], mine)
