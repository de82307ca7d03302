"""input_pipeline_analyzer export vs XProf's oracle on every shared profile.

Tolerances: step times and breakdowns within 1 us; the host breakdown within 1% (relative) and the
input-op table's times within 1 us, percentages within 1e-6; XProf's one-decimal summaries equal as text.
"""
from __future__ import annotations

import json

import pytest
from conftest import ALL_PROFILES, PROFILES, oracle_dir

from tputui.analysis import tf_data
from tputui.analysis.input_pipeline import html_to_text
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text


def _runs():
    for profile in ALL_PROFILES + ["jax_named_steps"]:  # + a profile whose step marker is named "step"
        for run in open_logdir(str(PROFILES / profile)).runs:
            yield pytest.param(profile, run, id=f"{profile}:{run.name}")


def _oracle(profile, run):
    d = oracle_dir(profile, run.name if profile == "jax_two_runs" else None)
    return json.loads((d / "input_pipeline_analyzer.json").read_text())


@pytest.fixture(scope="module")
def exports():
    cache = {}

    def get(run):
        if run.path not in cache:
            cache[run.path] = json.loads(export_text(RunData(run), "input_pipeline_analyzer", "json"))
        return cache[run.path]
    return get


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_steps_and_summaries(profile, run, exports):
    got, table = exports(run), _oracle(profile, run)[1]
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, (c.get("v") if c else None for c in r["c"]))) for r in table["rows"]]
    assert [s["step"] for s in got["steps"]] == [r["stepnum"] for r in rows]
    for s, r in zip(got["steps"], rows):
        assert s["step_time_ms"] == pytest.approx(r["stepTimeMs"], abs=1e-3)
        for ours, theirs in (("host_compute_ms", "hostComputeTimeMs"), ("input_ms", "infeedTimeMs"),
                             ("other_ms", "otherTimeMs"), ("kernel_launch_ms", "kernelLaunchTimeMs"),
                             ("device_compute_ms", "deviceComputeTimeMs"), ("output_ms", "outfeedTimeMs"),
                             ("compile_ms", "compileTimeMs")):
            if theirs in r:
                assert s[ours] == pytest.approx(r[theirs], abs=1e-3), ours
    p = table["p"]
    digits = 2 if got["hardware_type"] == "TPU" else 1
    st = got["step_time_ms"] or {"avg": 0.0, "min": 0.0, "max": 0.0, "stddev": 0.0}
    for key, prop in (("avg", "steptime_ms_average"), ("min", "steptime_ms_minimum"),
                      ("max", "steptime_ms_maximum"), ("stddev", "steptime_ms_standard_deviation")):
        assert f"{st[key]:.{digits}f}" == p[prop]
    if got["hardware_type"] != "TPU":
        b = got["step_time_breakdown_ms"]
        for ours, prop in (("host_compute_ms", "host_compute_time_ms"), ("input_ms", "infeed_time_ms"),
                           ("other_ms", "other_time_ms"), ("device_compute_ms", "device_compute_time_ms"),
                           ("kernel_launch_ms", "kernel_launch_time_ms"), ("compile_ms", "compile_time_ms")):
            assert f"{b[ours]['avg']:.1f}" == p[prop + "_avg"], ours
            assert f"{b[ours]['stddev']:.1f}" == p[prop + "_sdv"], ours
    else:
        ip = got["input_percent"]
        assert f"{ip['avg']:.1f}" == p["infeed_percent_average"]


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_verdict(profile, run, exports):
    got, p = exports(run), _oracle(profile, run)[1]["p"]
    assert got["verdict"]["statement"] == p["input_conclusion"]
    assert got["verdict"]["summary_next_step"] == html_to_text(p["summary_nextstep"])
    if "all_other_statement" in p:
        assert got["bottleneck"]["all_other_statement"] == p["all_other_statement"]
        assert got["bottleneck"]["kernel_launch_statement"] == p["kernel_launch_statement"]


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_host_side(profile, run, exports):
    got, ora = exports(run), _oracle(profile, run)
    table = ora[2]
    p = table["p"]
    hb = got["host_breakdown_ms"]
    for ours, prop in (("enqueue", "enqueue_us"), ("demanded_file_read", "demanded_file_read_us"),
                       ("advanced_file_read", "advanced_file_read_us"), ("preprocessing", "preprocessing_us"),
                       ("unclassified_non_enqueue", "unclassified_nonequeue_us")):
        assert hb[ours] * 1000 == pytest.approx(float(p[prop]), rel=0.01, abs=1e-3), ours
    ids = [c["id"] for c in table["cols"]]
    want = [dict(zip(ids, (c["v"] for c in r["c"]))) for r in table["rows"]]
    ops = got["input_ops"]
    assert [o["name"] for o in ops] == [w["opName"] for w in want]
    for o, w in zip(ops, want):
        assert o["count"] == w["count"]
        assert o["total_ms"] == pytest.approx(w["timeInMs"], abs=1e-3)
        assert o["self_ms"] == pytest.approx(w["selfTimeInMs"], abs=1e-3)
        assert o["total_percent"] == pytest.approx(w["timeInPercent"] * 100, abs=1e-6)
        assert o["self_percent"] == pytest.approx(w["selfTimeInPercent"] * 100, abs=1e-6)
        assert o["category"] == w["category"]
    assert got["recommendations"] == [html_to_text(r["c"][0]["v"]) for r in ora[3]["rows"]]
    assert [(d["severity"], d["message"]) for d in got["diagnostics"]] == \
        [(r["c"][0]["v"], r["c"][1]["v"]) for r in ora[4]["rows"]]


def test_tf_data_bottleneck_on_the_slow_map_pipeline(exports):
    """tf_loop reads through a deliberately slow py_function map: the slowest pipeline is the host's
    root iterator, its slow calls are the ones over 50 us, and the bottleneck is MapAndBatch."""
    run = open_logdir(str(PROFILES / "tf_loop")).runs[0]
    t = exports(run)["tf_data_bottleneck"]
    assert t["is_input_bound"] and t["input_bound_host"] == "vm"
    pipe = t["pipelines"][0]
    assert pipe["input_pipeline"] == "Host:0" and pipe["calls"] == 20
    assert pipe["slow_calls"] == 18  # the first two calls found prefetched batches (15-20 us)
    assert pipe["bottleneck_iterator"] == "MapAndBatch"
    assert pipe["bottleneck_iterator_long_name"] == "Iterator::Root::Prefetch::MapAndBatch"
    assert pipe["suggestion"] == tf_data.SUGGESTIONS["other"]
    assert pipe["max_latency_us"] > 50 and pipe["min_latency_us"] <= pipe["avg_latency_us"] <= pipe["max_latency_us"]


def test_tf_data_section_absent_without_tf_data(exports):
    run = open_logdir(str(PROFILES / "jax_mlp")).runs[0]
    assert exports(run)["tf_data_bottleneck"] is None


def test_bottleneck_kinds():
    assert tf_data.bottleneck_kind("TFRecord") == "source"
    assert tf_data.bottleneck_kind("Map") == "parallelizable"
    assert tf_data.bottleneck_kind("Batch") == "sequential"
    assert tf_data.bottleneck_kind("Prefetch") == "other"


@pytest.mark.parametrize("pod", ["pod_v4_32", "dcn_2slices"])
def test_input_wait_across_cores_per_step_equals_xprof(pod):
    """The per-core range the screen draws: XProf's per-step infeed % average / min / max over cores
    (its input pipeline's interval chart), to 1e-9."""
    from conftest import FIXTURES

    from tputui.analysis import input_pipeline

    path = FIXTURES / "pod" / pod
    result = input_pipeline.analyze(RunData(open_logdir(str(path)).runs[0], use_cache=False))
    table = next(t for t in json.loads((path / "oracle" / "input_pipeline_analyzer.json").read_text())
                 if isinstance(t, dict) and "cols" in t and any(c["id"] == "infeedPercentMin" for c in t["cols"]))
    ids = [c["id"] for c in table["cols"]]
    theirs = [dict(zip(ids, [c.get("v") for c in r["c"]])) for r in table["rows"]]
    ours = result.step_table
    assert ours.height == len(theirs) and result.core_ranges is not None and result.core_ranges["cores"].min() > 1
    for row, o in zip(ours.iter_rows(named=True), theirs):
        assert row["infeed_percent_avg"] == pytest.approx(o["infeedPercentAverage"], rel=1e-9, abs=1e-12)
        assert row["infeed_percent_min"] == pytest.approx(o["infeedPercentMin"], rel=1e-9, abs=1e-12)
        assert row["infeed_percent_max"] == pytest.approx(o["infeedPercentMax"], rel=1e-9, abs=1e-12)
        assert row["infeed_percent_min"] <= row["infeed_percent_avg"] <= row["infeed_percent_max"]
