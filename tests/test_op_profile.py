"""op_profile against XProf 2.24's op_profile on the TPU profile: both groupings, with and without
IDLE: every node's name, category, order, raw time, flops and occurrences exactly, down to the ops
fused into each fusion (from the HLO protos); utilizations and HBM bytes to 1e-9 relative."""
from __future__ import annotations

import math

import pytest
from op_tools_helpers import REL, extra_oracle, oracle, run_of

from tputui.analysis import op_profile
from tputui.analysis.result import NoDataError
from tputui.analysis.stdsort import partial_sort


@pytest.fixture(scope="module")
def profile():
    return op_profile.analyze(run_of("tpu_v6e_inference"))


def _compare(ours: dict, theirs: dict, total_ps: int, path="", fused_level=False) -> list[str]:
    bad = []
    m, om = ours["metrics"], theirs["metrics"]
    where = f"{path}/{theirs['name']}"
    if ours["name"] != theirs["name"]:
        return [f"{where}: name {ours['name']!r}"]
    for mine, key in (("raw_time_ps", "rawTime"), ("raw_flops", "rawFlops"), ("occurrences", "occurrences")):
        if m[mine] != om[key]:
            bad.append(f"{where}: {mine} {m[mine]} != {om[key]}")
    # XProf stores flops utilization times the node's share of total time (its UI divides back).
    if not math.isclose(m["flops_utilization"] * m["raw_time_ps"] / total_ps, om["flops"], rel_tol=REL, abs_tol=1e-15):
        bad.append(f"{where}: flops_utilization {m['flops_utilization']}")
    if not math.isclose(m["hbm_bandwidth_utilization"], om["bandwidthUtils"][0], rel_tol=REL, abs_tol=1e-15):
        bad.append(f"{where}: hbm util {m['hbm_bandwidth_utilization']} != {om['bandwidthUtils'][0]}")
    if not math.isclose(m["raw_bytes_accessed"], om["rawBytesAccessedArray"][0], rel_tol=REL, abs_tol=1e-6):
        bad.append(f"{where}: hbm bytes {m['raw_bytes_accessed']}")
    if "xla" in theirs and ours["category"] != theirs["xla"]["category"]:
        bad.append(f"{where}: category {ours['category']!r} != {theirs['xla']['category']!r}")
    if ours["num_children"] != theirs.get("numChildren", 0) or len(ours["children"]) != len(theirs["children"]):
        bad.append(f"{where}: children {[c['name'] for c in ours['children']]} != "
                   f"{[c['name'] for c in theirs['children']]}")
        return bad
    for a, b in zip(ours["children"], theirs["children"]):
        bad += _compare(a, b, total_ps, where)
    return bad


@pytest.mark.parametrize("ours_key,file,theirs_key", [
    ("by_program", "oracle", "byProgram"),
    ("by_program_exclude_idle", "oracle", "byProgramExcludeIdle"),
    ("by_category", "by_category", "byCategory"),
    ("by_category_exclude_idle", "by_category", "byCategoryExcludeIdle"),
])
def test_tree_equals_xprof(profile, ours_key, file, theirs_key):
    doc = oracle("tpu_v6e_inference", "op_profile") if file == "oracle" else \
        extra_oracle("tpu_v6e_inference.op_profile.by_category.json")
    theirs = doc[theirs_key]
    ours = profile.to_json()[ours_key]
    bad = _compare(ours, theirs, theirs["metrics"]["rawTime"])
    assert not bad, "\n".join(bad[:20])
    # The tree is not trivially small: programs, categories, a dedup group, IDLE.
    names = [n["name"] for n in ours["children"]]
    assert len(names) >= (3 if "program" in ours_key else 5)


def test_dedup_group_and_idle_placement(profile):
    root = profile.tree("program")
    jit_f = next(c for c in root.children if c.name.startswith("jit_f("))
    fusion = next(c for c in jit_f.children if c.name == "loop fusion")
    group = fusion.children[0]
    assert group.name == "broadcast_add_fusion.1 and its duplicate(s)"
    assert [c.name for c in group.children] == ["broadcast_add_fusion.1", "broadcast_add_fusion", "broadcast_add_fusion.2"]
    assert any(c.name == "IDLE" for c in root.children)
    assert not any(c.name == "IDLE" for c in profile.tree("program", exclude_idle=True).children)


def test_details_of_an_op_node(profile):
    op = next(n for n in profile.tree("category").walk() if n.name == "broadcast_add_fusion.1" and n.is_op)
    assert op.expression.startswith("%broadcast_add_fusion.1 = f32[5,1024,1024,256]")
    assert op.provenance == "jit(f)/jit(main)/add:"
    assert op.source.endswith("host_offload_stress_test.py:29")
    assert op.shape == "f32[5,1024,1024,256]{3,2,1,0:T(8,128)}"
    assert 0 < op.flops_utilization < 1e-3 and 0.8 < op.hbm_bandwidth_utilization < 0.81


def test_partial_sort_matches_libstdcxx_on_ties():
    # std::partial_sort(k = n) on equal keys is a heap sort: [a, b, c] comes out [a, c, b]... we
    # check the property XProf's output shows: equal keys keep a deterministic, heap order.
    items = [("a", 0), ("b", 0), ("c", 0)]
    out = partial_sort(items, 3, lambda x, y: x[1] > y[1])
    assert sorted(out) == sorted(items) and len(out) == 3
    nums = [(str(i), v) for i, v in enumerate([5, 1, 9, 3, 9, 2])]
    assert [v for _, v in partial_sort(nums, 4, lambda x, y: x[1] > y[1])] == [9, 9, 5, 3]


def test_cpu_profile_has_no_op_profile():
    run = run_of("jax_mlp")
    assert not op_profile.has_data(run)
    with pytest.raises(NoDataError):
        op_profile.analyze(run)


def test_card_facts_of_an_op(profile):
    """Average time, arithmetic intensity and bound-by of an op: its own figures, and the same
    bound-by as the roofline / HLO stats give that op (XProf's SetRooflineMetrics)."""
    from tputui.analysis import hlo_stats

    op = next(n for n in profile.tree("program").walk() if n.name == "broadcast_add_fusion.1" and n.is_op)
    assert op.avg_time_ps == op.raw_time_ps / op.occurrences > 0
    assert op.arithmetic_intensity == op.flops / op.bytes_accessed > 0
    rows = hlo_stats.analyze(run_of("tpu_v6e_inference")).rows
    row = rows.filter(rows["hlo_op_name"] == "broadcast_add_fusion.1").row(0, named=True)
    assert op.bound_by == row["bound_by"] == "HBM"
    assert op.arithmetic_intensity < profile.ridge_point  # why it is HBM-bound
    assert profile.ridge_point == profile.peak_tflops * 1e12 / (profile.peak_hbm_gbps * 1e9)
    # Grouping nodes: the larger of their FLOPS and HBM utilizations.
    group = next(n for n in profile.tree("program").walk() if n.name == "loop fusion")
    assert not group.is_op and group.bound_by == (
        "Compute" if group.flops_utilization >= group.hbm_bandwidth_utilization else "HBM")
    assert all(n.bound_by == "" for n in profile.tree("program").walk() if n.is_op and n.raw_time_ps == 0)


@pytest.mark.parametrize("sort", op_profile.SORTS)
def test_view_sorts_every_level(profile, sort):
    root = profile.view("category", sort=sort)
    key = {"time": None, "flops rate": lambda n: -n.flops_utilization,
           "memory bandwidth": lambda n: -n.hbm_bandwidth_utilization, "name": lambda n: n.name.lower()}[sort]
    if key is None:  # XProf's order, as built
        assert [n.name for n in root.walk()] == [n.name for n in profile.tree("category").walk()]
    else:
        for n in root.walk():
            assert [key(c) for c in n.children] == sorted(key(c) for c in n.children), n.name
    assert len(list(root.walk())) == len(list(profile.tree("category").walk()))  # nothing dropped
    assert profile.tree("category").children[0].name == "copy-done"  # the result itself is untouched


def test_view_filter_keeps_matches_with_their_ancestors_and_subtrees(profile):
    root = profile.view("program", needle="BROADCAST_add")

    def kept_ops(n, matched=False):  # every op kept matches, or sits under a node that does
        matched = matched or "broadcast_add" in n.name
        return [(c, matched) for c in n.children if c.is_op] + [o for c in n.children for o in kept_ops(c, matched)]

    ops = kept_ops(root)
    assert ops and all("broadcast_add" in o.name or under for o, under in ops)
    fusion = next(n for n in root.walk() if n.name == "broadcast_add_fusion.1")
    assert [c.name for c in fusion.children] == ["constant.7", "broadcast.8", "add.4"]  # its fused ops kept
    assert {c.name for c in root.children} == {"jit_f(12190760917235803885)"}
    assert root.raw_time_ps == profile.tree("program").raw_time_ps  # shares stay of the whole profile
    by_category = profile.view("category", needle="copy-done")
    assert [c.name for c in by_category.children] == ["copy-done"]
    assert profile.view("program", needle="no such op").children == []
    with pytest.raises(ValueError):
        profile.view(sort="size")


def test_introsort_heap_fallback_uses_the_same_heap():
    """stdsort's heap-sort fallback (a window of two parallel lists) sorts its window by rank,
    leaves the rest alone, and orders ties as partial_sort does on (rank, position) pairs."""
    from tputui.analysis import stdsort

    ranks = [5, 1, 3, 1, 2, 3, 0, 1, 9]
    r, p = list(ranks), list(range(len(ranks)))
    stdsort._heap_sort(r, p, 2, 8)
    assert r[:2] == ranks[:2] and r[8:] == ranks[8:] and r[2:8] == sorted(ranks[2:8])
    assert [ranks[i] for i in p] == r
    pairs = stdsort.partial_sort(list(zip(ranks[2:8], range(2, 8))), 6, lambda x, y: x[0] < y[0])
    assert p[2:8] == [i for _, i in pairs]
