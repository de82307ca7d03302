"""overview_page export vs XProf's oracle on every shared profile.

Tolerances: percentages XProf prints with one decimal must round to the same text; top-op fractions
and flop rates (printed in full by XProf) within 1e-9 relative; step times within 1 us; statements equal.
"""
from __future__ import annotations

import json

import pytest
from conftest import ALL_PROFILES, PROFILES, oracle_dir

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
    return json.loads((d / "overview_page.json").read_text())


def _pct(x: float) -> str:
    return f"{x:.1f}%"


@pytest.fixture(scope="module")
def exports():
    cache = {}

    def get(run):
        if run.path not in cache:
            cache[run.path] = json.loads(export_text(RunData(run), "overview_page", "json"))
        return cache[run.path]
    return get


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_summary_figures(profile, run, exports):
    got, ora = exports(run), _oracle(profile, run)
    p = ora[0]["p"]
    assert _pct(got["device_idle_time_percent"]) == p["device_idle_time_percent"]
    assert _pct(got["host_idle_time_percent"]) == p["host_idle_time_percent"]
    assert _pct(got["device_duty_cycle_percent"]) == p["device_duty_cycle_percent"]
    assert _pct(got["host_tf_op_percent"]) == p["host_tf_op_percent"]
    assert _pct(got["device_tf_op_percent"]) == p["device_tf_op_percent"]
    assert _pct(got["flop_rate_utilization_relative_to_roofline_percent"]) == \
        p["flop_rate_utilization_relative_to_roofline"]
    assert _pct(got["memory_bw_utilization_relative_to_hw_limit_percent"]) == \
        p["memory_bw_utilization_relative_to_hw_limit"]
    if "idle_time_high_confidence_ps" in p:
        assert got["idle_time_high_confidence_ps"] == pytest.approx(float(p["idle_time_high_confidence_ps"]),
                                                                    rel=1e-5)


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_run_environment(profile, run, exports):
    env, p = exports(run)["run_environment"], _oracle(profile, run)[2]["p"]
    assert env["device_type"] == p["device_type"]
    assert str(env["device_core_count"]) == p["device_core_count"]
    assert str(env["host_count"]) == p["host_count"]
    assert str(env["is_training"]).lower() == p["is_training"]


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_top_ops_same_order_and_percentages(profile, run, exports):
    got = exports(run)["top_device_ops"]
    want = _oracle(profile, run)[0]["rows"]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        frac, cum, cat, name, rate = (c["v"] for c in w["c"])
        assert (g["name"], g["category"]) == (name, cat)
        assert g["self_time_percent"] == pytest.approx(frac * 100, rel=1e-9, abs=1e-10)
        assert g["cumulative_time_percent"] == pytest.approx(cum * 100, rel=1e-9)
        assert g["flop_rate_gflops"] == pytest.approx(rate, rel=1e-9)


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_steps_and_step_time(profile, run, exports):
    got, table = exports(run), _oracle(profile, run)[1]
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, (c.get("v") if c else None for c in r["c"]))) for r in table["rows"]]
    assert [s["step"] for s in got["steps"]] == [r["stepnum"] for r in rows]
    for s, r in zip(got["steps"], rows):
        assert s["step_time_ms"] == pytest.approx(r["stepTimeMs"], abs=1e-3)
        if "hostComputeTimeMs" in r:
            assert s["host_compute_ms"] == pytest.approx(r["hostComputeTimeMs"], abs=1e-3)
            assert s["input_ms"] == pytest.approx(r["infeedTimeMs"], abs=1e-3)
            assert s["other_ms"] == pytest.approx(r["otherTimeMs"], abs=1e-3)
    p = table["p"]
    if rows:
        st = got["step_time_ms"]
        assert st["count"] == len(rows)
        for key, prop in (("avg", "steptime_ms_average"), ("min", "steptime_ms_minimum"),
                          ("max", "steptime_ms_maximum"), ("stddev", "steptime_ms_standard_deviation")):
            assert f"{st[key]:.1f}" == p[prop]
    else:
        assert got["step_time_ms"] is None


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_recommendation_and_diagnostics(profile, run, exports):
    got, ora = exports(run), _oracle(profile, run)
    p = ora[3]["p"]
    assert got["bottleneck"] == p["bottleneck"]
    assert got["statement"] == p["statement"]
    rec = got["recommendation"]
    for key in ("all_other_bottleneck", "all_other_statement", "kernel_launch_bottleneck",
                "kernel_launch_statement", "device_collectives_bottleneck", "device_collectives_statement",
                "precision_statement"):
        assert rec[key] == p[key], key
    assert html_to_text(ora[1]["p"]["summary_nextstep"]) == rec["summary_next_step"]
    tips = [(t["type"], t["tip"]) for t in rec["tips"]]
    want = [(r["c"][0]["v"], html_to_text(r["c"][1]["v"])) for r in ora[3]["rows"]]
    assert tips[:len(want)] == want
    assert [(d["severity"], d["message"]) for d in got["diagnostics"]] == \
        [(r["c"][0]["v"], r["c"][1]["v"]) for r in ora[6]["rows"]]


def test_csv_export_gives_the_top_ops_table():
    run = open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0]
    csv = export_text(RunData(run), "overview_page", "csv")
    header, first = csv.splitlines()[:2]
    assert header == "name,category,self_time_percent,cumulative_time_percent,flop_rate_gflops"
    assert first.startswith("copy-done.4,Unknown,24.68")


def test_one_host_of_a_run_equals_the_run_for_a_single_host_profile():
    run = RunData(open_logdir(str(PROFILES / "tf_loop")).runs[0])
    every = json.loads(export_text(run, "overview_page", "json"))
    one = json.loads(export_text(run, "overview_page", "json", host="vm"))
    assert one["hosts"] == every["hosts"] == ["vm"]
    assert one["steps"] == every["steps"] and one["statement"] == every["statement"]


def test_step_summary_and_parts_are_result_properties():
    """What the overview screen reads: the same figures the JSON export writes."""
    from tputui.analysis import overview

    run = RunData(open_logdir(str(PROFILES / "jax_mlp")).run(None), use_cache=False)
    r = overview.analyze(run)
    doc = r.to_json()
    assert r.step_time_ms == doc["step_time_ms"] and r.step_time_ms["count"] > 0
    parts = r.step_parts_ms
    avg = doc["step_time_breakdown_ms"]
    assert parts and all(v == avg[c]["avg"] > 0 for c, v in parts)
    assert [v for _, v in parts] == sorted((v for _, v in parts), reverse=True)
    assert {c for c, _ in parts} == {c for c, v in avg.items() if v["avg"] > 0}
