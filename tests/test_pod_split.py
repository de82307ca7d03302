"""tputui's finer split of the pod viewer's device compute (high- / low-FLOPS) and device to device
(send / recv-done / megacore fusion), beside XProf's unchanged figures, and the chip pairs a
channel links.

Tolerance: the parts are computed in integer picoseconds and sum to XProf's category exactly
there; in the µs / ms floats the result holds, the sum agrees to 1e-9 µs (float rounding)."""
from __future__ import annotations

import dataclasses
import json
import shutil

import polars as pl
import pytest

from tests.conftest import FIXTURES, PROFILES
from tputui.analysis import host_map
from tputui.analysis import pod_viewer as pv
from tputui.analysis.pod_split import HIGH_FLOPS_CATEGORIES, SPLIT_KEYS, finer_split
from tputui.analysis.tpu_steps import tpu_breakdown
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

POD = FIXTURES / "pod"
POD_FIXTURES = sorted(p.name for p in POD.iterdir() if (p / "plugins").is_dir())
TOL_US = 1e-9
SHARED = FIXTURES.parents[2] / "shared" / "profiles"  # /work/shared/profiles beside the repo, when present


def run_of(path) -> RunData:
    return RunData(open_logdir(str(path)).runs[0])


def test_split_of_one_core_step_by_hand():
    cats = {"convolution fusion": 500, "output fusion": 200, "convolution": 30, "loop fusion": 90, "copy": 10,
            "send": 4, "send-done": 6, "recv": 3, "recv-done": 40, "megacore fusion": 8, "infeed": 100,
            "all-reduce": 50, "IDLE": 999}
    bd = tpu_breakdown(cats, 1200)
    split = finer_split(cats, bd)
    assert split == {"high_flops_compute": 730, "low_flops_compute": 100,  # loop fusion + copy
                     "d2d_send": 10, "d2d_recv_done": 43, "d2d_megacore_fusion": 8}
    assert bd["device_compute"] == 830 and bd["device_to_device"] == 61


def test_high_flops_never_exceeds_device_compute():
    """XProf clamps device compute at 0 when collectives fill the busy time; our part follows."""
    split = finer_split({"convolution": 70}, {"device_compute": 0, "device_to_device": 0})
    assert split["high_flops_compute"] == 0 and split["low_flops_compute"] == 0


@pytest.mark.parametrize("fixture", POD_FIXTURES)
def test_split_sums_to_xprofs_figure_per_step_and_core(fixture):
    res = pv.analyze(run_of(POD / fixture))
    df = res.steps
    assert len(df) and df["tputui_high_flops_compute_us"].null_count() == 0
    compute = df["tputui_high_flops_compute_us"] + df["tputui_low_flops_compute_us"]
    d2d = df["tputui_d2d_send_us"] + df["tputui_d2d_recv_done_us"] + df["tputui_d2d_megacore_fusion_us"]
    assert (compute - df["device_compute_us"]).abs().max() <= TOL_US
    assert (d2d - df["device_to_device_us"]).abs().max() <= TOL_US
    assert all(df[f"tputui_{k}_us"].min() >= 0 for k in SPLIT_KEYS)
    # The fixtures' step program has convolution / output fusions and loop fusions / copies:
    # both parts of device compute are there on every core of every step.
    assert df["tputui_high_flops_compute_us"].min() > 0 and df["tputui_low_flops_compute_us"].min() > 0
    # ... and XProf's chip-to-chip send / recv ops: both parts of device to device.
    if df["device_to_device_us"].sum() > 0:
        assert df["tputui_d2d_send_us"].min() > 0 and df["tputui_d2d_recv_done_us"].min() > 0


@pytest.mark.parametrize("fixture", ["pod_v5e_single", "pod_v4_32", "dcn_2slices"])
def test_json_keeps_xprofs_fields_and_adds_ours(fixture):
    """XProf's per-core fields equal its oracle as before; ours sit in `tputui_split`."""
    doc = pv.analyze(run_of(POD / fixture)).to_json()
    ora = json.loads((POD / fixture / "oracle" / "pod_viewer.json").read_text())
    names = {str(i): k for i, _, k in pv.CATEGORIES}
    for step, m in zip(doc["steps"], ora["podStatsSequence"]["podStatsMap"]):
        for core in step["cores"]:
            rec = m["podStatsPerCore"][str(core["core"])]
            for cid, us in rec["stepBreakdownUs"].items():
                assert core[f"{names[cid]}_ms"] == pytest.approx(us / 1000, abs=1e-9)
            ours = core["tputui_split"]
            assert set(ours) == {f"{k}_ms" for k in SPLIT_KEYS}
            assert ours["high_flops_compute_ms"] + ours["low_flops_compute_ms"] == pytest.approx(
                core["device_compute_ms"], abs=TOL_US / 1000)
            assert ours["d2d_send_ms"] + ours["d2d_recv_done_ms"] + ours["d2d_megacore_fusion_ms"] == pytest.approx(
                core["device_to_device_ms"], abs=TOL_US / 1000)
    assert doc["tputui_split_definition"]["source"].startswith("tputui")
    json.dumps(doc)


def test_host_steps_have_no_split():
    res = pv.analyze(run_of(PROFILES / "tf_loop"))
    assert res.steps["tputui_high_flops_compute_us"].null_count() == len(res.steps)
    assert res.finer_split_ms(res.step_numbers[0], [c.core for c in res.cores]) is None
    assert res.to_json()["steps"][0]["cores"][0]["tputui_split"] is None


def test_csv_steps_table_has_our_columns_after_xprofs():
    cols = pv.analyze(run_of(POD / "pod_v4_32")).tables()["steps"].columns
    assert cols[-len(SPLIT_KEYS):] == [f"tputui_{k}_us" for k in SPLIT_KEYS]
    assert cols.index("bottleneck") < cols.index("tputui_high_flops_compute_us")


def _category_rates(path) -> pl.DataFrame:
    """Per op: its HLO category, self time and FLOP rate (FLOP/s), from the device op table."""
    stats = host_map.host_op_stats(run_of(path), None)
    ops = pl.concat([s.device_db.ops for s in stats if s.device_db is not None])
    return ops.filter(pl.col("self_time_ps") > 0).with_columns(
        high=pl.col("category").is_in(list(HIGH_FLOPS_CATEGORIES)),
        rate=pl.col("flops") / (pl.col("self_time_ps") / 1e12))


@pytest.mark.parametrize("fixture", ["pod_v5e_single", "pod_v4_32"])
def test_high_flops_categories_are_the_fast_ops_of_the_fixtures(fixture):
    """Why by category: on the fixtures every op we call high-FLOPS runs at 5x or more the
    FLOP rate of every op we call low-FLOPS that does any FLOPs (measured: the slowest
    high-FLOPS op 1.70 TFLOP/s, the fastest low-FLOPS one 0.18 TFLOP/s, 9.5x)."""
    ops = _category_rates(POD / fixture)
    high, low = ops.filter(pl.col("high")), ops.filter(~pl.col("high") & (pl.col("flops") > 0))
    assert len(high) and len(low)
    assert high["rate"].min() >= 5 * low["rate"].max()


@pytest.mark.parametrize("root", [PROFILES, SHARED], ids=["committed", "shared"])
def test_real_tpu_profile_is_all_low_flops(root):
    """The real TPU v6e profile (inference: loop fusions, copies, one all-reduce; no steps, so
    the pod viewer shows none) has no convolution or dot: split as one step, its device compute
    is all low-FLOPS, and its loop fusions run far under 1% of the chip's peak."""
    path = root / "tpu_v6e_inference"
    if not (path / "plugins").is_dir():
        pytest.skip(f"{path} is not here")
    ops = _category_rates(path)
    assert not ops["high"].any()
    stats = host_map.host_op_stats(run_of(path), None)[0]
    cats = {c: int(v) for c, v in ops.group_by("category").agg(pl.col("self_time_ps").sum()).iter_rows()}
    bd = tpu_breakdown(cats, sum(cats.values()))
    split = finer_split(cats, bd)
    assert split["high_flops_compute"] == 0 and split["low_flops_compute"] == bd["device_compute"] > 0
    loops = ops.filter(pl.col("category") == "loop fusion")
    assert loops["rate"].max() < 0.01 * stats.peak_teraflops * 1e12


# --- the chip pairs a channel links ---------------------------------------------------------
def one_way_channel() -> pv.PodViewerResult:
    """pod_v4_32 with host 0's first two chips sending channel 4 and its last two receiving it."""
    stats = host_map.host_op_stats(run_of(POD / "pod_v4_32"), None)
    ev = stats[0].send_recv
    one_way = ev.filter(((pl.col("cat") == "send") & (pl.col("plane_id") < 4))
                        | ((pl.col("cat") == "recv-done") & (pl.col("plane_id") >= 4)))
    return pv.from_op_stats([dataclasses.replace(stats[0], send_recv=one_way),
                             *[dataclasses.replace(s, send_recv=ev.clear()) for s in stats[1:]]])


def test_channel_links_pair_sending_and_receiving_chips():
    res = one_way_channel()
    chip = {c.core: c.chip for c in res.cores}
    senders = sorted({chip[c] for c in (0, 1, 2, 3)})
    receivers = sorted({chip[c] for c in (4, 5, 6, 7)})
    assert len(senders) == len(receivers) == 2
    assert res.channel_links("4") == [(s, d) for s in senders for d in receivers]
    assert res.channel_links("no such channel") == []
    doc = res.to_json()
    assert doc["channel_links"] == [{"channel": "4", "chip_pairs": [[s, d] for s in senders for d in receivers]}]
    assert "does not record which sender fed which receiver" in doc["channel_links_note"]


def test_every_chip_sending_and_receiving_links_every_other_chip():
    res = pv.analyze(run_of(POD / "pod_v5e_single"))
    pairs = res.channel_links("4")
    assert len(pairs) == 4 * 3 and all(s != d for s, d in pairs)


def test_export_cli_writes_the_new_fields(tmp_path, capsys):
    from tputui.cli import main

    logdir = tmp_path / "pod"
    shutil.copytree(POD / "pod_v5e_single", logdir, ignore=shutil.ignore_patterns("oracle"))
    out = tmp_path / "pod.json"
    assert main(["export", str(logdir), "--tool", "pod_viewer", "--format", "json", "-o", str(out)]) in (0, None)
    doc = json.loads(out.read_text())
    core = doc["steps"][0]["cores"][0]
    assert "device_compute_ms" in core and set(core["tputui_split"]) == {f"{k}_ms" for k in SPLIT_KEYS}
    assert doc["channel_links"][0]["channel"] == "4" and doc["tputui_split_definition"]
