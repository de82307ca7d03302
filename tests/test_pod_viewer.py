"""Pod viewer figures equal XProf 2.24's pod_viewer output on every pod fixture (and on the real
profiles whose generic host steps we reproduce). Tolerance: 1e-6 us (XProf prints ps / 1e6)."""
from __future__ import annotations

import json

import polars as pl
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


# --- topology, channels, collective split (tputui's own: XProf 2.24 writes none of them) -------
def builder():
    """scripts/make_pod_fixtures.py: the pod fixtures' builder, whose simulation is the ground truth."""
    import importlib.util
    import sys

    from tests.conftest import ROOT

    name = "make_pod_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "make_pod_fixtures.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.mark.parametrize("fixture", ["pod_v5e_single", "pod_v4_32", "dcn_2slices"])
def test_layout_agrees_with_xprofs_hosts(fixture):
    """XProf's output has no topology and no channel db; what it does say per core, the host,
    is what our layout must respect: one host block per host, every core placed, no two chips
    on one spot."""
    ora = json.loads((POD / fixture / "oracle" / "pod_viewer.json").read_text())
    assert "topology" not in ora
    assert all(not m.get("channelDb") for m in ora["podStatsSequence"]["podStatsMap"])
    res = pv.analyze(run_of(POD / fixture))
    topo = res.topology
    assert topo is not None
    cores = res.core_table()
    chips = cores["chip"].unique().to_list()
    assert topo.dims[0] * topo.dims[1] * topo.dims[2] == len(chips)
    assert len({topo.coords[c] for c in chips}) == len(chips)
    block_of_host: dict[str, set] = {}
    for core, rec in ora["podStatsSequence"]["podStatsMap"][0]["podStatsPerCore"].items():
        row = cores.filter(cores["core"] == int(core)).row(0, named=True)
        assert (row["x"], row["y"], row["z"]) == topo.coords[row["chip"]]
        block_of_host.setdefault(rec["hostName"], set()).add(topo.host_block(row["chip"]))
    assert all(len(b) == 1 for b in block_of_host.values())
    assert len({next(iter(b)) for b in block_of_host.values()}) == len(block_of_host)


def test_v4_is_a_3d_torus_with_one_host_per_z_layer():
    res = pv.analyze(run_of(POD / "pod_v4_32"))
    topo = res.topology
    assert topo.is_3d and topo.dims == (2, 2, 4) and topo.host_dims == (2, 2, 1) and topo.cores_per_chip == 2
    df = res.core_table()
    for _host, part in df.group_by("host"):
        assert part["z"].n_unique() == 1 and len(part) == 8
    v5e = pv.analyze(run_of(POD / "pod_v5e_single")).topology
    assert not v5e.is_3d and v5e.dims == (2, 2, 1) and v5e.cores_per_chip == 1


def test_slice_shapes_are_cloud_tpus():
    """Cloud TPU's documented slice shapes: v4 / v5p 3D, v5e / v6e 2D."""
    from tputui.analysis.pod_topology import slice_dims

    assert [slice_dims(n, 3) for n in (4, 8, 16, 32, 64, 128, 256, 512)] == [
        (2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4), (4, 4, 4), (4, 4, 8), (4, 8, 8), (8, 8, 8)]
    assert [slice_dims(n, 2) for n in (1, 4, 8, 16, 32, 64, 128, 256)] == [
        (1, 1, 1), (2, 2, 1), (2, 4, 1), (4, 4, 1), (4, 8, 1), (8, 8, 1), (8, 16, 1), (16, 16, 1)]
    assert slice_dims(12, 3) is None and slice_dims(6, 2) is None


def test_no_topology_when_the_profile_does_not_allow_it():
    from tputui.analysis.pod_topology import derive
    from tputui.analysis.tpu_steps import CoreInfo

    cpu = pv.analyze(run_of(PROFILES / "tf_loop"))
    assert cpu.topology is None and cpu.to_json()["topology"] is None
    assert cpu.core_table()["x"].null_count() == len(cpu.cores)
    v4 = pv.analyze(run_of(POD / "pod_v4_32")).cores
    assert derive("TPU v3", v4) is None  # a generation whose layout we do not know
    # Two hosts claiming chips of one host block: the derivation disagrees with the profile.
    swapped = [CoreInfo(c.core, c.host, {3: 4, 4: 3}.get(c.chip, c.chip), c.core_on_chip, c.local_chip, c.ordinal)
               for c in v4]
    assert derive("TPU v4", swapped) is None


def test_export_has_xprofs_topology_and_channel_info_shapes():
    res = pv.analyze(run_of(POD / "pod_v4_32"))
    doc = res.to_json()
    topo = doc["topology"]
    assert {"xDimension", "yDimension", "zDimension", "hostXStride", "hostYStride", "hostZStride",
            "numCoresPerChip", "cores"} <= set(topo) and topo["source"].startswith("derived")
    assert len(topo["cores"]) == 16
    assert f"Chip coordinates {topo['source']}." in doc["diagnostics"]["info"]
    assert {"x", "y", "z", "hostX", "hostY", "hostZ", "indexOnHost", "globalId"} == set(topo["cores"][0])
    (ch,) = doc["channel_db"]
    assert ch["channelId"] == 4 and ch["srcCoreIds"] == sorted(c.core for c in res.cores)
    assert ch["hloNames"] == ["recv-done.4", "send.4"] and ch["dataSize"] == 16 << 20
    # Send start -> recv-done end = (send start -> recv-done start) + recv-done's duration.
    row = res.channels.row(0, named=True)
    assert ch["durationUs"] == pytest.approx(row["send_delay_us"] + row["latency_us"], rel=1e-9)
    assert res.channel_latency() == [("4", ch["durationUs"])]
    core = doc["steps"][0]["cores"][0]
    assert {"x", "y", "z", "core_on_chip", "collective_sync_ms", "collective_transfer_ms"} <= set(core)
    json.dumps(doc)
    csv = res.tables()
    assert {"x", "y", "z", "collective_sync_us"} <= set(csv["steps"].columns)
    assert csv["channels"]["src_core_ids"].dtype == pl.String


def test_partners_are_the_other_ends_of_the_channels():
    res = pv.analyze(run_of(POD / "dcn_2slices"))
    every = {c.core for c in res.cores}
    assert res.partners([0]) == every - {0}  # SPMD: every core sends and receives channel 4
    assert pv.analyze(run_of(PROFILES / "tf_loop")).partners([1]) == set()


@pytest.mark.parametrize("fixture", ["pod_v5e_single", "pod_v4_32", "dcn_2slices"])
def test_collective_split_recovers_the_simulated_transfer(fixture):
    """The builder's all-reduce ends a fixed transfer after the slowest core arrives: the split
    must find that transfer, and each core's wait is the rest of its all-reduce."""
    transfer_us = builder().ALL_REDUCE_TRANSFER_US
    res = pv.analyze(run_of(POD / fixture))
    assert res.split_note == ""
    s = res.steps
    assert s["collective_transfer_us"].to_list() == pytest.approx([transfer_us] * len(s), abs=1e-6)
    assert (s["collective_sync_us"] + s["collective_transfer_us"] - s["device_collectives_us"]).abs().max() < 1e-9
    assert s.group_by("step").agg(pl.col("collective_sync_us").min())["collective_sync_us"].to_list() == [0.0] * len(
        res.step_numbers)
    sync, transfer = res.collective_split(res.step_numbers[0], [c.core for c in res.cores])
    first = res.step_frame(res.step_numbers[0])
    assert sync == pytest.approx(first["collective_sync_us"].mean() / 1000) and transfer == pytest.approx(transfer_us / 1000)


def test_collectives_not_split_on_host_steps():
    res = pv.analyze(run_of(PROFILES / "tf_loop"))
    assert res.split_note.startswith("host (CPU / GPU) steps")
    assert res.steps["collective_sync_us"].null_count() == len(res.steps)
    assert res.collective_split(res.step_numbers[0], [1]) is None
    assert res.to_json()["collective_split"]["note"] == res.split_note


def test_partners_of_a_one_way_channel():
    """The profile's own send / recv-done events, kept only where host 0's first two chips send
    and its last two receive: the senders' partners are the receivers and the other way round."""
    import dataclasses

    from tputui.analysis import host_map

    stats = host_map.host_op_stats(run_of(POD / "pod_v4_32"), None)
    ev = stats[0].send_recv
    one_way = ev.filter(((pl.col("cat") == "send") & (pl.col("plane_id") < 4))
                        | ((pl.col("cat") == "recv-done") & (pl.col("plane_id") >= 4)))
    empty = ev.clear()
    res = pv.from_op_stats([dataclasses.replace(stats[0], send_recv=one_way),
                            *[dataclasses.replace(s, send_recv=empty) for s in stats[1:]]])
    (row,) = res.channels.iter_rows(named=True)
    assert (row["src_cores"], row["dst_cores"]) == ("0-3", "4-7")
    assert res.partners([0]) == {4, 5, 6, 7} and res.partners([6, 7]) == {0, 1, 2, 3}
    assert res.partners([1000]) == set()


def test_some_hosts_of_a_slice_sit_where_their_chips_are():
    """A profile of part of a slice: the real v6e host (chips 4-7 of a slice of at least 8) and
    the v4 pod's chips renumbered as the upper half of a 2x4x4 slice."""
    from tputui.analysis.pod_topology import derive
    from tputui.analysis.tpu_steps import CoreInfo

    v6e = pv.analyze(run_of(PROFILES / "tpu_v6e_inference"))
    chips = sorted({c.chip for c in v6e.cores})
    topo = v6e.topology
    assert chips == [4, 5, 6, 7] and topo.dims == (2, 4, 1) and "4 of its 8 chips" in topo.source
    assert {topo.host_block(c) for c in chips} == {(0, 1, 0)}
    assert sorted(topo.coords[c] for c in chips) == [(0, 2, 0), (0, 3, 0), (1, 2, 0), (1, 3, 0)]
    v4 = pv.analyze(run_of(POD / "pod_v4_32")).cores
    upper = derive("TPU v4", [CoreInfo(c.core, c.host, c.chip + 16, c.core_on_chip, c.local_chip, c.ordinal)
                              for c in v4])
    assert upper.dims == (2, 4, 4) and "16 of its 32 chips" in upper.source
    assert {upper.coords[c][2] for c in range(16, 32)} == {2, 3}
    assert derive("TPU v4", v4[:-2]).dims == (2, 2, 4)  # the last chip's cores not captured
