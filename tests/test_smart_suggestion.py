"""Advice: XProf's smart suggestions (equal to XProf 2.24's `smart_suggestion` output, text and
all, no tolerance) and our performance-guide checks (figures computed by hand in the tests).

Fixtures: tests/fixtures/advice/ (scripts/make_advice_fixtures.py: synthetic TPU pods with
`barrier-cores` ops, XProf's output beside each) and the real profiles (XProf finds nothing)."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import advice_rules, barrier_cores, perf_guide, smart_suggestion
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
    want = json.loads((path / "oracle" / "smart_suggestion.json").read_text())
    got = json.loads(export_text(run_of(path), "smart_suggestion", "json"))
    assert got["suggestions"] == want["suggestions"]


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
    assert items["source"][0] == "XProf" and items["title"][0] == "BarrierCoresRule"
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
