"""TPU steps on the pod fixtures (tests/fixtures/pod, XProf 2.24 oracles): the overview and the input
pipeline analyzer's TensorCore step table, verdict, idle / duty cycle and top ops.

Tolerances: per-step times within 1e-6 ms (XProf prints ps / 1e9), input % within 1e-6; XProf's
one- and two-decimal summaries equal as text; top-op fractions within 1e-9 relative.
"""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from tputui.analysis.input_pipeline import html_to_text
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text

POD = ["pod_v5e_single", "pod_v4_32", "dcn_2slices"]


def _run(name):
    return RunData(open_logdir(str(FIXTURES / "pod" / name)).runs[0])


def _oracle(name):
    return json.loads((FIXTURES / "pod" / name / "oracle" / "overview_page.json").read_text())


@pytest.fixture(scope="module")
def exported():
    cache = {}

    def get(name, tool):
        if (name, tool) not in cache:
            cache[name, tool] = json.loads(export_text(_run(name), tool, "json"))
        return cache[name, tool]
    return get


@pytest.mark.parametrize("name", POD)
def test_tensorcore_step_table(name, exported):
    got, table = exported(name, "input_pipeline_analyzer"), _oracle(name)[1]
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, (c["v"] for c in r["c"]))) for r in table["rows"]]
    assert [s["step"] for s in got["steps"]] == [r["stepnum"] for r in rows]
    for s, r in zip(got["steps"], rows):
        for col in ("tcComputeTimeMs", "scv0ComputeTimeMs", "scv0InfeedTimeMs", "tcInfeedTimeMs",
                    "tcOutfeedTimeMs", "tcIdleTimeMs", "hostTransferTimeMs"):
            key = {"tcComputeTimeMs": "tc_compute_ms", "scv0ComputeTimeMs": "scv0_compute_ms",
                   "scv0InfeedTimeMs": "scv0_infeed_ms", "tcInfeedTimeMs": "tc_infeed_ms",
                   "tcOutfeedTimeMs": "tc_outfeed_ms", "tcIdleTimeMs": "tc_idle_ms",
                   "hostTransferTimeMs": "host_transfer_ms"}[col]
            assert s[key] == pytest.approx(r[col], abs=1e-6), (key, s["step"])
        for col, key in (("infeedPercentAverage", "infeed_percent_avg"), ("infeedPercentMin", "infeed_percent_min"),
                         ("infeedPercentMax", "infeed_percent_max")):
            assert s[key] == pytest.approx(r[col], abs=1e-6)
    p = table["p"]
    st = got["step_time_ms"]
    for key, prop in (("avg", "steptime_ms_average"), ("min", "steptime_ms_minimum"),
                      ("max", "steptime_ms_maximum"), ("stddev", "steptime_ms_standard_deviation")):
        assert f"{st[key]:.2f}" == p[prop]
    ip = got["input_percent"]
    for key, prop in (("avg", "infeed_percent_average"), ("min", "infeed_percent_minimum"),
                      ("max", "infeed_percent_maximum"), ("stddev", "infeed_percent_standard_deviation")):
        assert f"{ip[key]:.1f}" == p[prop]
    assert got["verdict"]["statement"] == p["input_conclusion"]
    assert got["verdict"]["summary_next_step"] == html_to_text(p["summary_nextstep"])


@pytest.mark.parametrize("name", POD)
def test_overview_summary(name, exported):
    got, ora = exported(name, "overview_page"), _oracle(name)
    p = ora[0]["p"]
    for key in ("device_idle_time_percent", "device_duty_cycle_percent", "host_idle_time_percent",
                "host_tf_op_percent", "device_tf_op_percent"):
        assert f"{got[key]:.1f}%" == p[key], key
    assert got["idle_time_high_confidence_ps"] == pytest.approx(float(p["idle_time_high_confidence_ps"]), rel=1e-5)
    env, pe = got["run_environment"], ora[2]["p"]
    assert (env["device_type"], str(env["device_core_count"]), str(env["host_count"])) == \
        (pe["device_type"], pe["device_core_count"], pe["host_count"])
    # XProf's overview statement is empty for TPU steps; the input pipeline verdict is separate.
    assert got["statement"] == ora[3]["p"]["statement"] == ""
    assert got["input_conclusion"] == ora[1]["p"]["input_conclusion"]
    for g, w in zip(got["top_device_ops"], ora[0]["rows"]):
        frac, _, cat, name_, rate = (c["v"] for c in w["c"])
        assert (g["name"], g["category"]) == (name_, cat)
        assert g["self_time_percent"] == pytest.approx(frac * 100, rel=1e-9)
        assert g["flop_rate_gflops"] == pytest.approx(rate, rel=1e-9)
    assert len(got["top_device_ops"]) == len(ora[0]["rows"])
