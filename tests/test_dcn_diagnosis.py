"""Megascale findings (issue #31): the stall that stands out, the guide's hardware heuristic (recv-done
short next to a large stall) or the slow peer, and sharding advice when a collective needs more than
the network. Fixtures: pod/dcn_2slices (stalls waiting on data) and pod/dcn_hw_stall (an all-gather
stalled in send-done, its recv-done short), each with XProf's own megascale tables beside it."""
from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import FIXTURES, settle

from tputui.analysis import dcn_diagnosis
from tputui.analysis.megascale import ROW_SCHEMA
from tputui.cli import main

POD = FIXTURES / "pod"


def _export(capsys, fixture: str, *args) -> dict:
    assert main(["export", str(POD / fixture), "--tool", "megascale_stats", *args, "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def _by(found: list[dict], kind: str) -> dict[str, dict]:
    return {f["collective"]: f for f in found if f["kind"] == kind}


@pytest.mark.parametrize("host", ["hw-s0-0", "hw-s1-0"])
def test_hw_stall_fixture_equals_xprof_and_names_a_hardware_cause(capsys, host):
    oracle = json.loads((POD / "dcn_hw_stall" / "oracle" / f"megascale_stats.{host}.json").read_text())
    xprof = {r["c"][0]["v"]: (r["c"][11]["v"], r["c"][10]["v"]) for r in oracle[0]["rows"]}  # stall, recv-done
    d = _export(capsys, "dcn_hw_stall", "--host", host)
    assert {r["name"]: (r["stall_duration_ms"], r["recv_done_stall_ms"]) for r in d["rows"]} == xprof
    outliers = _by(d["findings"], "stall_outlier")
    hw = outliers["dcn_allgather_params"]
    assert hw["cause"] == "hardware_or_network" and hw["recv_done_ms"] < 0.25 * hw["stall_ms"]
    assert "hardware or network problem" in hw["text"]
    # the all-reduce's stall is recv-done waiting for data: the other slice is named
    peer = outliers["dcn_allreduce_grads"]
    assert peer["cause"] == "slow_peer" and peer["peers"] == [1 if host == "hw-s0-0" else 0]
    assert f"slice {peer['peers'][0]}" in peer["text"]


def test_data_waiting_fixture_never_says_hardware(capsys):
    for host in ("ms-s0-0", "ms-s1-0"):
        d = _export(capsys, "dcn_2slices", "--host", host)
        outliers = _by(d["findings"], "stall_outlier")
        assert list(outliers) == ["dcn_allreduce_grads"]  # 4.4x / 3.6x the others' median: the only one
        assert outliers["dcn_allreduce_grads"]["cause"] == "slow_peer"


def test_no_findings_without_dcn(capsys):
    assert main(["export", str(POD / "pod_v5e_single"), "--tool", "megascale_stats", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_sharding_advice_says_which_collective_and_how_much_over(capsys):
    d = _export(capsys, "dcn_2slices", "--dcn-gbps", "400")
    over = _by(d["findings"], "exceeds_network")
    rows = {r["name"]: r for r in d["rows"]}
    assert set(over) == {n for n, r in rows.items() if r["required_bandwidth_gbps"] * d["cores_per_host"] > 400}
    a = over["dcn_allreduce_grads"]
    assert a["times_network"] == round(rows["dcn_allreduce_grads"]["required_bandwidth_gbps"] * 4 / 400, 2)
    assert "change the sharding" in a["text"] and f"{a['times_network']:.1f}x" in a["text"]
    # a network wide enough: no bandwidth finding, the stall finding stays
    wide = _export(capsys, "dcn_2slices", "--dcn-gbps", "100000")
    assert not _by(wide["findings"], "exceeds_network") and _by(wide["findings"], "stall_outlier")


def _rows(stalls: list[tuple[str, float, float, float]]) -> pl.DataFrame:
    base = {c: 0 for c in ROW_SCHEMA}
    return pl.DataFrame([{**base, "name": n, "recv_op_name": "", "send_op_name": "", "transfer_type": "ALL_REDUCE",
                          "stall_duration_ms": s, "recv_done_stall_ms": rd, "required_bandwidth_gbps": bw,
                          "exceeds_network": False} for n, s, rd, bw in stalls], schema=ROW_SCHEMA)


def test_outlier_needs_three_collectives_and_twice_the_median():
    assert dcn_diagnosis.stall_outliers(_rows([("a", 5.0, 4.0, 1), ("b", 1.0, 1.0, 1)])) == []
    assert dcn_diagnosis.stall_outliers(_rows([("a", 1.9, 1, 1), ("b", 1.0, 1, 1), ("c", 1.0, 1, 1)])) == []
    assert dcn_diagnosis.stall_outliers(_rows([("a", 2.0, 1, 1), ("b", 1.0, 1, 1), ("c", 1.0, 1, 1)])) == ["a"]


def test_a_collective_without_slack_is_said_so():
    rows = _rows([("a", 1.0, 1.0, 2147483647.0), ("b", 1.0, 1.0, 1.0), ("c", 1.0, 1.0, 1.0)])
    found = dcn_diagnosis.findings(rows, 100.0, 4, {})
    assert [(f["collective"], f["cause"]) for f in found] == [("a", "no_slack")]
    assert "no slack" in found[0]["text"]


async def test_screen_marks_the_outlier_and_says_why():
    from conftest import make_app

    from tputui.screens.megascale import MegascaleScreen

    app = make_app(str(POD / "dcn_hw_stall"), "megascale_stats", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MegascaleScreen)
        names = screen.table.frame["name"].to_list()
        assert screen.table.formats["name"]("dcn_allgather_params") == "*! dcn_allgather_params"
        assert names[0] == "dcn_allgather_params"  # the largest aggregated stall: the cursor's row
        assert "hardware or network problem" in str(screen.query_one("#finding").render())
        assert "2 with a stall standing out" in str(screen.query_one("#summary").render())
