"""Advice: XProf's smart suggestions (BarrierCoresRule equal to XProf 2.24's `smart_suggestion`
output, text and all, no tolerance; the nine rules its open-source build does not run checked
against XProf's own rule tests and, through their signals, against XProf's overview / input
pipeline / pod viewer / HLO stats) and our performance-guide checks (figures computed by hand).

Fixtures: tests/fixtures/advice/ (scripts/make_advice_fixtures.py: synthetic TPU pods with
`barrier-cores` ops), tests/fixtures/suggestions/ (scripts/make_suggestion_fixtures.py: one
synthetic TPU host per rule), XProf's outputs beside each, and the real profiles.
Ported XProf rule tests: tests/test_suggestion_rules.py."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import (
    advice_rules,
    barrier_cores,
    host_map,
    perf_guide,
    smart_suggestion,
    suggestion_rules,
    suggestion_signals,
)
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.proto import xla_data_pb2 as xd

ADVICE = FIXTURES / "advice"
CASES = [ADVICE / "barrier_4hosts", ADVICE / "barrier_light",
         *[PROFILES / p for p in ("jax_mlp", "jax_live_capture", "tpu_v6e_inference", "tf_loop", "tf_keras")]]


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0], use_cache=False)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_suggestions_equal_xprof(path):
    """XProf's converter runs its open-source rules only: ours for those rules equal its output."""
    want = json.loads((path / "oracle" / "smart_suggestion.json").read_text())
    got = json.loads(export_text(run_of(path), "smart_suggestion", "json"))
    assert [s for s in got["suggestions"] if s["ruleName"] in advice_rules.OPEN_SOURCE_RULES] == want["suggestions"]


def test_barrier_fractions_and_straggler():
    run = run_of(ADVICE / "barrier_4hosts")
    hosts = [barrier_cores.special_op_fractions(run.frame(h), h) for h in run.hosts]
    # 6 steps, first and last dropped; 2 cores per host
    assert all(len(h.per_step) == 4 and len(h.per_core) == 2 for h in hosts)
    slow = advice_rules.stragglers(hosts)
    assert [s[0] for s in slow] == ["bar-w-3"] and round(slow[0][1], 1) == 8.5
    text = advice_rules.plain_text(advice_rules.barrier_cores_suggestion(hosts)["suggestionText"])
    assert text.startswith("Your program is likely bottlenecked by TPU barrier-cores operations:  an average of 12.7%")
    assert "• Host bar-w-3 average barrier-cores time fraction: 8.5%" in text


def test_padding_of_a_tiled_layout():
    f32 = xd.PrimitiveType.Value("F32")
    shape = xd.ShapeProto(element_type=f32, dimensions=[3, 100], layout=xd.LayoutProto(
        minor_to_major=[1, 0], tiles=[xd.TileProto(dimensions=[8, 128])]))
    assert perf_guide.padding_of(shape) == (3 * 100 * 4, 8 * 128 * 4)
    transposed = xd.ShapeProto(element_type=f32, dimensions=[3, 100], layout=xd.LayoutProto(
        minor_to_major=[0, 1], tiles=[xd.TileProto(dimensions=[8, 128])]))
    assert perf_guide.padding_of(transposed) == (1200, 104 * 128 * 4)  # 100 rows -> 104, 3 columns -> 128
    untiled = xd.ShapeProto(element_type=f32, dimensions=[3, 100], layout=xd.LayoutProto(minor_to_major=[1, 0]))
    assert perf_guide.padding_of(untiled) == (1200, 1200)


def test_guide_checks_on_real_profiles():
    mlp = {c.name: c for c in perf_guide.checks(run_of(PROFILES / "jax_mlp"))}
    mxu = mlp["mxu_alignment"]
    # x[128,784] . w[784,256]: contraction 784 -> 896 on a 128 MXU: 1 - 784/896 = 12.5% padding
    first = {f.op: f.figures for f in mxu.findings}
    assert first["dot_general.4"]["contraction"] == 784 and first["dot_general.4"]["mxu_waste_percent"] == 12.5
    assert mxu.severity == "info" and "ran on CPU" in mxu.detail
    v6e = {c.name: c for c in perf_guide.checks(run_of(PROFILES / "tpu_v6e_inference"))}
    offload = v6e["host_offload"]
    # jit_f copies three f32[5,1024,1024,256] buffers (5 GiB each) in and out of host memory
    assert len(offload.findings) == 6 and sum(f.figures["bytes"] for f in offload.findings) == 6 * 5 * (1 << 30)
    assert perf_guide.mxu_size("TPU v6 lite") == 256 and perf_guide.mxu_size("TPU v5 lite") == 128
    loop = {c.name: c for c in perf_guide.checks(run_of(PROFILES / "tf_loop"))}
    assert loop["input_bound"].severity == "high"


def test_advice_tables_and_json():
    result = smart_suggestion.analyze(run_of(ADVICE / "barrier_4hosts"))
    items = result.items()
    assert items["source"][0] == "XProf" and items["title"][0] == "Cores waiting at barriers"
    assert set(result.tables()) == {"advice", "op_findings"}


def test_padding_from_shape_text_for_the_op_profile_card():
    assert perf_guide.padding_of_text("f32[3,100]{1,0:T(8,128)}") == (1200, 8 * 128 * 4)
    assert perf_guide.padding_of_text("f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)}") == (5 << 30, 5 << 30)
    assert perf_guide.padding_of_text("bf16[7]{0}") == (14, 14)
    assert perf_guide.padding_of_text("(f32[], s32[2]{0})") is None


def test_long_tail_and_per_core_batch():
    import polars as pl

    # 10 big matmuls (60% of the time at full rate) and 40 tiny elementwise ops (40%, no FLOPs)
    ops = pl.DataFrame({"name": [f"dot.{i}" for i in range(10)] + [f"add.{i}" for i in range(40)],
                        "self_time_ps": [6_000_000] * 10 + [1_000_000] * 40,
                        "flops": [6_000_000 * 100] * 10 + [0] * 40, "occurrences": [1] * 50})
    check = perf_guide.long_tail_check(ops, peak_tflops=100.0)
    assert check is not None and len(check.findings) == 40 and "40.0% of device op time" in check.detail
    assert perf_guide.long_tail_check(ops.head(12), peak_tflops=100.0) is None  # tail too small
    f32 = xd.PrimitiveType.Value("F32")
    shape = xd.ShapeProto(element_type=f32, dimensions=[60, 512])
    tiled = xd.OpSharding(type=xd.OpSharding.OTHER, tile_assignment_dimensions=[8, 1], iota_reshape_dims=[8])
    assert perf_guide.per_core_dims(shape, tiled) == [8, 512]
    assert perf_guide.per_core_dims(shape, xd.OpSharding(type=xd.OpSharding.REPLICATED)) is None


# --- the nine rules XProf's converter does not run, through the real pipeline ----------------------
SUGGESTIONS = FIXTURES / "suggestions"
# What each fixture was built to fire (scripts/make_suggestion_fixtures.py).
FIRES = {
    "collective_bound": ["CollectiveBoundRule"], "input_bound": ["InputBoundRule"],
    "host_input": ["DataTransferBoundRule", "HostProcessingBoundRule"], "compute_bound": ["ComputeBoundRule"],
    "memory_bound": ["MemoryBoundRule"], "tc_idle": ["TensorCoreIdleBoundRule"],
    "data_shuffle": ["DataShuffleBoundRule"], "debug_print": ["BarrierCoresRule", "DebugPrintRule"],
}


def oracle_of(path, tool):
    return json.loads((path / "oracle" / f"{tool}.json").read_text())


@pytest.fixture(scope="module")
def advice_json():
    cache = {}

    def get(path):
        if path not in cache:
            cache[path] = json.loads(export_text(run_of(path), "smart_suggestion", "json"))
        return cache[path]
    return get


@pytest.mark.parametrize("name", FIRES)
def test_fixture_fires_its_rules(name, advice_json):
    got = advice_json(SUGGESTIONS / name)
    assert [s["ruleName"] for s in got["suggestions"]] == FIRES[name]
    want = oracle_of(SUGGESTIONS / name, "smart_suggestion")["suggestions"]  # XProf runs BarrierCoresRule only
    assert [s for s in got["suggestions"] if s["ruleName"] in advice_rules.OPEN_SOURCE_RULES] == want


@pytest.mark.parametrize("name", FIRES)
def test_signals_equal_xprof_overview_and_input_pipeline(name, advice_json):
    """The figures the rules read from XProf's overview and input pipeline, as XProf prints them."""
    path = SUGGESTIONS / name
    sig = advice_json(path)["signals"]
    ov, ip = oracle_of(path, "overview_page"), oracle_of(path, "input_pipeline_analyzer")
    assert f"{sig['mxu_utilization_percent']:.1f}%" == ov[0]["p"]["mxu_utilization_percent"]
    assert f"{sig['input_percent']:.1f}% of the total step time sampled is waiting for input" in \
        ip[1]["p"]["input_conclusion"]
    host = ip[2]["p"]
    assert sig["enqueue_us"] == pytest.approx(float(host["enqueue_us"]), abs=1e-3)
    non_enqueue = sum(float(host[k]) for k in ("demanded_file_read_us", "advanced_file_read_us",
                                               "preprocessing_us", "unclassified_nonequeue_us"))
    assert sig["non_enqueue_us"] == pytest.approx(non_enqueue, abs=1e-3)
    rows = [r["c"] for r in ip[1]["rows"]]
    col = [c["id"] for c in ip[1]["cols"]].index("tcIdleTimeMs")
    assert sig["tensor_core_idle_ms"] == pytest.approx(sum(r[col]["v"] for r in rows) / len(rows), rel=1e-9)
    tips = [float(re.search(r"Step time = ([\d.]+) ms", r[8]["v"]).group(1)) for r in rows]
    assert sig["step_time_ms"] == pytest.approx(sum(tips) / len(tips), abs=1e-3)
    assert f"{sig['step_time_ms']:.2f}" == ip[1]["p"]["steptime_ms_average"]


def _pod_steps(path):
    """XProf's pod viewer per step: [(collective us, summed core step us)] ("3": Device collective communication)."""
    seq = oracle_of(path, "pod_viewer")["podStatsSequence"]["podStatsMap"]
    return [(sum(c["stepBreakdownUs"]["3"] for c in s["podStatsPerCore"].values()),
             sum(c["totalDurationUs"] for c in s["podStatsPerCore"].values())) for s in seq]


@pytest.mark.parametrize("name", FIRES)
def test_step_times_of_the_rules_equal_xprof_step_db(name):
    """The per-step denominators (summed TensorCore step times) are XProf's step database's."""
    path = SUGGESTIONS / name
    ours = suggestion_signals.step_category_ps(host_map.run_op_stats(run_of(path)))
    assert [t / 1e6 for _, _, t in ours] == pytest.approx([t for _, t in _pod_steps(path)], rel=1e-12)


def test_collective_percent_equals_xprof_step_db():
    """collective_bound: its only collective HLO category is all-reduce, which XProf's pod viewer
    breaks out per core and step; the rule's average of step fractions from those equals ours."""
    path = SUGGESTIONS / "collective_bound"
    fractions = [float(np.float32(c) / np.float32(t)) for c, t in _pod_steps(path)]
    want = float(np.mean(np.asarray(fractions, np.float32), dtype=np.float64)) * 100.0
    got = json.loads(export_text(run_of(path), "smart_suggestion", "json"))
    assert got["signals"]["collective_percent"] == pytest.approx(want, rel=1e-6)
    assert f"An average of <b>{want:.1f}%</b> of each step" in got["suggestions"][0]["suggestionText"]


def test_data_shuffle_time_equals_xprof_hlo_stats():
    """data_shuffle: the shuffle categories' self time over the steps is XProf's HLO stats' total."""
    path = SUGGESTIONS / "data_shuffle"
    table = oracle_of(path, "hlo_stats")
    ids = [c["id"] for c in table["cols"]]
    cat, self_us = ids.index("category"), ids.index("total_self_time")
    want = sum(r["c"][self_us]["v"] for r in table["rows"]
               if r["c"][cat]["v"] in suggestion_rules.DATA_SHUFFLE_CATEGORIES)
    ours = suggestion_signals.step_category_ps(host_map.run_op_stats(run_of(path)))
    assert want > 0 and sum(s for _, s, _ in ours) / 1e6 == pytest.approx(want, rel=1e-9)


def test_debug_print_share_equals_xprofs_barrier_share(advice_json):
    """debug_print: a debug_print and a barrier-cores op of the same length each step, one host;
    XProf's analyzer treats both alike, so its BarrierCoresRule average is our debug_print share."""
    got = advice_json(SUGGESTIONS / "debug_print")
    xprof_barrier = oracle_of(SUGGESTIONS / "debug_print", "smart_suggestion")["suggestions"][0]["suggestionText"]
    percent = re.search(r"an average of ([\d.]+)% of each step", xprof_barrier).group(1)
    (host,) = got["signals"]["debug_print_hosts"]
    assert f"{host['percent']:.1f}" == percent
    text = got["suggestions"][1]["suggestionText"]
    assert f"<b> up to {percent}% of step time</b>" in text and f"<li>Host <b>{host['host']}</b>" in text


def test_hbm_signal_is_the_overview_figure(advice_json):
    """The rules read the HBM bandwidth utilization the overview shows. (XProf's open-source
    overview never fills it: ConvertOpStatsToOverviewPage passes no TPU limits, so it prints 0.0%.)"""
    path = SUGGESTIONS / "memory_bound"
    overview = json.loads(export_text(run_of(path), "overview_page", "json"))
    sig = advice_json(path)["signals"]
    assert sig["hbm_utilization_percent"] == overview["memory_bw_utilization_relative_to_hw_limit_percent"] > 70
    assert any(a["title"] == "Memory-bound" for a in overview["advice"])  # the recommendation panel's list


def test_real_tf_profile_is_host_processing_bound():
    """tf_loop (a real CPU run, 90.7% input): HostProcessingBoundRule, from XProf's own input-pipeline figures."""
    path = PROFILES / "tf_loop"
    got = json.loads(export_text(run_of(path), "smart_suggestion", "json"))
    ip = oracle_of(path, "input_pipeline_analyzer")
    host = ip[2]["p"]
    assert got["signals"]["non_enqueue_us"] == pytest.approx(float(host["preprocessing_us"]), abs=1e-3)
    assert got["signals"]["enqueue_us"] == float(host["enqueue_us"]) == 0.0
    (found,) = got["suggestions"]
    assert found["ruleName"] == "HostProcessingBoundRule"
    # 100% of the input time is host processing: the rule's share is the input percent
    share = re.search(r"<b>([\d.]+)% of the total step time</b>", found["suggestionText"]).group(1)
    assert f"because {share}% of the total step time" in ip[1]["p"]["input_conclusion"]


@pytest.mark.parametrize("name", ["pod_v5e_single", "pod_v4_32", "dcn_2slices"])
def test_tensor_core_idle_signal_equals_xprof_on_pods(name, advice_json):
    """TensorCoreIdleBoundRule's figures (average TensorCore idle and step time) on the pod fixtures,
    as XProf's overview prints them (dcn_2slices, 21% idle, fires the rule)."""
    path = FIXTURES / "pod" / name
    sig = advice_json(path)["signals"]
    p = oracle_of(path, "overview_page")[1]["p"]
    assert f"{sig['tensor_core_idle_ms']:.2f}" == p["tc_idle_ms_average"]
    assert f"{sig['step_time_ms']:.2f}" == p["steptime_ms_average"]
    fired = [s["ruleName"] for s in advice_json(path)["suggestions"]]
    latency_bound = sig["mxu_utilization_percent"] < 50 and sig["hbm_utilization_percent"] < 50
    assert ("TensorCoreIdleBoundRule" in fired) == (latency_bound and sig["tensor_core_idle_percent"] > 10.0)


def test_advice_on_a_tpu_profile_without_xla_ops():
    """A TPU profile with counters but no XLA Ops lines (tests/fixtures/counters) gets advice
    without the op-based checks instead of an error."""
    from tputui.analysis.smart_suggestion import analyze
    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData

    root = PROFILES.parent / "counters" / "v6e_counters"
    run = RunData(open_logdir(str(root)).run(None))
    res = analyze(run, None)
    assert res.suggestions == [] and res.hosts and all(c.name != "long_tail" for c in res.checks)
