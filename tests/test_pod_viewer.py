"""Pod viewer figures equal XProf 2.24's pod_viewer output on every pod fixture (and on the real
profiles whose generic host steps we reproduce). Tolerance: 1e-6 us (XProf prints ps / 1e6)."""
from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, PROFILES
from tputui.analysis import pod_viewer as pv
from tputui.analysis.result import NoDataError  # noqa: F401  (imported for API parity)
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

POD = FIXTURES / "pod"
KEY_OF_ID = {str(i): k for i, _, k in pv.CATEGORIES}
TOL_US = 1e-6


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0])


def check_against_oracle(logdir, oracle_file) -> pv.PodViewerResult:
    res = pv.analyze(run_of(logdir))
    ora = json.loads(oracle_file.read_text())
    seq = ora["podStatsSequence"]["podStatsMap"]
    assert res.device_type == ora["deviceType"]
    assert res.step_numbers == [m["stepNum"] for m in seq]
    assert [e["name"] for e in ora["stepBreakdownEvents"]] == [n for _, n, _ in pv.CATEGORIES]
    assert res.diagnostics["warnings"] == ora["diagnostics"]["warnings"]
    n = 0
    for m in seq:
        ours = res.steps.filter(res.steps["step"] == m["stepNum"])
        assert sorted(ours["core"].to_list()) == sorted(int(c) for c in m["podStatsPerCore"])
        for core, rec in m["podStatsPerCore"].items():
            r = ours.filter(ours["core"] == int(core)).row(0, named=True)
            assert r["total_us"] == pytest.approx(rec["totalDurationUs"], abs=TOL_US)
            for cid, v in rec["stepBreakdownUs"].items():
                assert r[f"{KEY_OF_ID[cid]}_us"] == pytest.approx(v, abs=TOL_US), (m["stepNum"], core, cid)
            assert r["bottleneck"] == rec["bottleneck"]
            assert res.core_info(int(core)).host == rec["hostName"]
            n += 1
    return res


@pytest.mark.parametrize("fixture", ["pod_v5e_single", "pod_v4_32", "dcn_2slices"])
def test_pod_fixtures_equal_xprof(fixture):
    res = check_against_oracle(POD / fixture, POD / fixture / "oracle" / "pod_viewer.json")
    assert len(res.steps) > 0


def test_pod_v4_32_shape():
    """32 cores over 4 hosts; XProf drops the steps not seen on every core / host and renumbers."""
    res = pv.analyze(run_of(POD / "pod_v4_32"))
    assert len(res.cores) == 32
    assert res.step_numbers == [0, 1, 2, 3, 4]  # 7 simulated, host 2 lacks step 0, a core lacks step 6
    assert sorted({c.core // 1000 for c in res.cores}) == [0, 1, 2, 3]
    assert sorted({c.chip for c in res.cores}) == list(range(16))  # 2 cores per chip


@pytest.mark.parametrize("profile", ["tf_loop", "tf_keras", "tpu_v6e_inference", "jax_mlp", "jax_live_capture"])
def test_real_profiles_equal_xprof(profile):
    check_against_oracle(PROFILES / profile, PROFILES / profile / "oracle" / "pod_viewer.json")


def test_channels_pair_sends_with_recv_dones():
    res = pv.analyze(run_of(POD / "pod_v5e_single"))
    ch = res.channels
    assert ch["channel"].to_list() == ["4"]
    row = ch.row(0, named=True)
    assert row["src_cores"] == "0-3" and row["dst_cores"] == "0-3"
    assert row["occurrences"] == 6 * 4  # one recv-done per core per step
    assert row["data_mib"] == pytest.approx(16.0)
    assert 40 < row["latency_us"] < 80 and row["bandwidth_gibps"] > 0


def test_export_schema():
    doc = pv.analyze(run_of(POD / "dcn_2slices")).to_json()
    assert set(doc) >= {"steps", "channels", "diagnostics"}
    core = doc["steps"][0]["cores"][0]
    assert {"core", "chip", "host", "total_ms", "device_compute_ms", "input_ms", "all_others_ms"} <= set(core)
    json.dumps(doc)


def test_breakdown_formula_sparse_core_and_idle():
    cats = {"convolution fusion": 500, "infeed": 100, "all-reduce": 50, "send": 10, "recv-done": 5,
            "host send": 7, "sparsecorev0 infeed": 30, "sparsecorev0 outfeed": 20, "IDLE": 999}
    bd = pv.tpu_breakdown(cats, 1000)
    assert bd["input"] == 100 + 30  # infeed + (wait 10 + transform 20)
    assert bd["output"] == 7 + 20
    assert bd["device_collectives"] == 50
    assert bd["device_to_device"] == 15
    assert bd["all_others"] == 1000 - (500 + 100 + 50 + 10 + 5 + 7 + 30 + 20)
    assert sum(bd.values()) == 1000  # the categories partition the step
    assert pv.bottleneck(bd) == "Device compute"


def test_chip_frame_is_the_mean_of_each_chips_cores():
    """The per-chip columns the screen draws: each chip's mean over its cores (ms), exact."""
    import polars as pl

    r = pv.analyze(run_of(POD / "pod_v4_32"))
    step = r.step_numbers[0]
    chips = r.chip_frame(step)
    cores = r.step_frame(step)
    assert chips["chip"].to_list() == sorted(cores["chip"].unique().to_list())
    for row in chips.iter_rows(named=True):
        mine = cores.filter(pl.col("chip") == row["chip"])
        assert row["cores"] == len(mine) and row["host"] == mine["host"][0]
        parts = [k for k in pv.CATEGORY_KEYS if f"{k}_ms" in chips.columns]
        for k in parts:
            assert row[f"{k}_ms"] == pytest.approx(mine[f"{k}_us"].mean() / 1000, rel=1e-12)
        assert row["total_ms"] == pytest.approx(sum(row[f"{k}_ms"] for k in parts), rel=1e-12)
    # Categories without any time are left out; the means over a chip's cores match cores_mean_ms.
    assert all(chips[c].sum() > 0 for c in chips.columns if c.endswith("_ms") and c != "total_ms")
    first = chips.row(0, named=True)
    mean = r.cores_mean_ms(step, cores.filter(pl.col("chip") == first["chip"])["core"].to_list())
    assert mean["device_compute"] == pytest.approx(first["device_compute_ms"], rel=1e-12)
    assert r.dominant_category == pv.CATEGORY_KEYS.index("device_compute")
