"""Megascale stats equal XProf 2.24's megascale_stats on the two-slice DCN fixture, per host.
Tolerance: exact for names / counts / bytes, 1e-9 relative for ms and Gbps."""
from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, PROFILES
from tputui.analysis import megascale as ms
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

DCN = FIXTURES / "pod" / "dcn_2slices"
PAIRS = [("recv_op_name", "recv_op_name"), ("send_op_name", "send_op_name"), ("transfer_type", "transfer_type"),
         ("slack_time_ms", "slack_time"), ("observed_duration_ms", "observed_duration"),
         ("send_stall_ms", "send_stall"), ("send_done_stall_ms", "send_done_stall"),
         ("recv_stall_ms", "recv_stall"), ("recv_done_stall_ms", "recv_done_stall"),
         ("stall_duration_ms", "stall_duration"), ("aggregated_total_stall_ms", "total_stall"),
         ("occurrences", "occurrences"), ("data_transmitted_bytes", "net_tx_bytes"),
         ("required_bandwidth_gbps", "required_bandwidth")]


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0])


@pytest.mark.parametrize("host", ["ms-s0-0", "ms-s1-0"])
def test_equal_xprof_per_host(host):
    res = ms.analyze(run_of(DCN), host)
    table = json.loads((DCN / "oracle" / f"megascale_stats.{host}.json").read_text())[0]
    ids = [c["id"] for c in table["cols"]]
    oracle = {r["c"][0]["v"]: dict(zip(ids, [c.get("v") for c in r["c"]])) for r in table["rows"]}
    assert sorted(res.rows["name"].to_list()) == sorted(oracle)
    for r in res.rows.iter_rows(named=True):
        o = oracle[r["name"]]
        assert o["host_stall"] == "-"
        for ours, theirs in PAIRS:
            if isinstance(o[theirs], str):
                assert r[ours] == o[theirs]
            else:
                assert r[ours] == pytest.approx(o[theirs], rel=1e-9, abs=1e-12), (r["name"], ours)


def test_sorted_by_total_stall_and_first_occurrence_skipped():
    res = ms.analyze(run_of(DCN))
    stalls = res.rows["aggregated_total_stall_ms"].to_list()
    assert stalls == sorted(stalls, reverse=True)
    occ = dict(zip(res.rows["name"].to_list(), res.rows["occurrences"].to_list()))
    assert occ["dcn_allreduce_grads"] == 4  # its first send happened before the capture
    assert occ["dcn_pipeline_p2p"] == 5


def test_dcn_gbps_flags_rows():
    res = ms.analyze(run_of(DCN), dcn_gbps=200.0)
    flagged = res.rows.filter(res.rows["exceeds_network"])["name"].to_list()
    need = res.rows["required_bandwidth_gbps"] * res.cores_per_host
    assert flagged == res.rows.filter(need > 200.0)["name"].to_list()
    assert flagged and len(flagged) < len(res.rows)
    assert res.to_json()["dcn_gbps"] == 200.0


@pytest.mark.parametrize("profile", ["tpu_v6e_inference", "jax_mlp"])
def test_no_dcn_is_empty_like_xprof(profile):
    res = ms.analyze(run_of(PROFILES / profile))
    assert len(res.rows) == 0
    assert json.loads((PROFILES / profile / "oracle" / "megascale_stats.json").read_text())[0]["rows"] == []
    assert res.diagnostics


def test_transmitted_bytes_rules():
    assert ms.transmitted_bytes(1000, 2, "ALL_REDUCE") == 1000
    assert ms.transmitted_bytes(1000, 4, "ALL_GATHER") == 750
    assert ms.transmitted_bytes(1000, 4, "REDUCE_SCATTER") == 3000
    assert ms.transmitted_bytes(1000, 1, "ONE_TO_ONE") == 1000
    assert ms.transmitted_bytes(1000, 0, "ALL_REDUCE") == 0


def test_export_schema():
    doc = ms.analyze(run_of(DCN)).to_json()
    row = doc["rows"][0]
    assert set(row) >= {"name", "recv_op_name", "send_op_name", "slack_time_ms", "observed_duration_ms",
                        "stall_duration_ms", "occurrences", "aggregated_total_stall_ms",
                        "data_transmitted_bytes", "required_bandwidth_gbps"}


def test_listed_only_where_there_are_dcn_collectives():
    from tests.conftest import FIXTURES, PROFILES
    from tputui.analysis.megascale import has_data
    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData

    def run(path):
        return RunData(open_logdir(str(path)).runs[0])

    assert has_data(run(FIXTURES / "pod" / "dcn_2slices"))
    assert not has_data(run(FIXTURES / "pod" / "pod_v4_32"))
    assert not has_data(run(PROFILES / "tpu_v6e_inference"))


def test_flagged_names_and_first_recv_done():
    """What the screen marks and where `enter` jumps: from the result, not the screen."""
    res = ms.analyze(run_of(DCN), dcn_gbps=0)
    assert res.flagged_names == set() and res.exceeding_count == 0  # bandwidth set to none
    flagged = res.flag(200.0)
    assert flagged.flagged_names == set(flagged.rows.filter(flagged.rows["exceeds_network"])["name"].to_list())
    assert flagged.exceeding_count == len(flagged.flagged_names)
    name = res.rows["name"][0]
    start, end = res.first_recv_done(name)
    spans = res.recv_done_spans.filter(res.recv_done_spans["name"] == name)
    assert start == spans["start_ps"].min() and start < end
    assert res.first_recv_done("no such collective") is None


def test_dcn_bandwidth_of_the_tpu_generation_by_default():
    """The fixture's hosts are TPU v5e (XProf's 'TPU v5 lite'), 4 chips each: 25 Gbps per chip
    (Cloud TPU docs) = 100 Gbps per host, used unless a bandwidth is given; 0 turns it off."""
    res = ms.analyze(run_of(DCN))
    assert res.device_type == "TPU v5 lite" and res.cores_per_host == 4
    assert res.suggested_gbps == ms.DCN_GBPS_PER_CHIP["v5e"] * 4 == res.dcn_gbps
    assert "v5e" in res.suggestion and "Cloud TPU docs" in res.suggestion
    need = res.rows["required_bandwidth_gbps"] * res.cores_per_host
    assert res.exceeding_count == int((need > res.dcn_gbps).sum()) > 0
    assert ms.analyze(run_of(DCN), dcn_gbps=5000.0).dcn_gbps == 5000.0
    assert ms.analyze(run_of(DCN), dcn_gbps=0).dcn_gbps is None
    assert res.to_json()["suggested_dcn_gbps"] == 100.0
    v4 = ms.analyze(run_of(FIXTURES / "pod" / "pod_v4_32"))  # no published per-chip figure: nothing assumed
    assert v4.suggested_gbps is None and v4.dcn_gbps is None and "TPU v4" in v4.suggestion


@pytest.mark.parametrize(("device_type", "generation"), [
    ("TPU v6 Lite", "v6e"), ("TPU v5 lite", "v5e"), ("TPU v5e", "v5e"), ("TPU v5", "v5p"), ("TPU v5p", "v5p"),
    ("TPU v4", None), ("TPU7x", None), ("", None)])
def test_tpu_generation_from_device_type(device_type, generation):
    assert ms.tpu_generation(device_type) == generation
