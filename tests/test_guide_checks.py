"""The Cloud TPU performance guide's Advice checks that no real profile here showed (issue #31), each on a
small fixture built to show it: it fires there and stays silent on the other three. Where XProf computes
the figure a check reads (per-op self time and FLOP rate, buffer sizes), XProf's own output sits beside the
fixture and the check's figures are compared with it.

  guides/unfused_elementwise     JAX CPU, multiply -> add -> tanh on 2 MiB arrays, XLA fusion off
  guides/materialized_broadcast  JAX CPU, an 8 MiB broadcast then an add, XLA fusion off
  pod/pod_long_tail              TPU v5e-shaped: 90 small low-FLOPS loop fusions after the step's work
  pod/pod_padding_oom            TPU v5e-shaped: an f32[33554432,2] T(8,128) buffer, 256 MiB padded to 16 GiB
  guides/conv_small_batch        JAX CPU, a 3x3 convolution of 16 images with 3 features (the guide's example)
  guides/spmd_small_batch        JAX CPU on 8 devices, a [96, 100] batch sharded 8 ways: 12 x 100 per core
(scripts/make_guide_fixtures.py and scripts/make_pod_fixtures.py make them.)"""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import run_tool

FIXTURE_OF = {"unfused_elementwise": FIXTURES / "guides" / "unfused_elementwise",
              "materialized_broadcast": FIXTURES / "guides" / "materialized_broadcast",
              "low_flops_tail": FIXTURES / "pod" / "pod_long_tail",
              "layout_padding": FIXTURES / "pod" / "pod_padding_oom",
              "mxu_alignment": FIXTURES / "guides" / "conv_small_batch",
              "per_core_batch": FIXTURES / "guides" / "spmd_small_batch"}
# A per-core batch of 12 rows is also 12 dot rows, not a multiple of 8: the MXU check fires there too
ALSO = {"mxu_alignment": ["per_core_batch"]}


def _checks(path) -> dict[str, dict]:
    result = run_tool(RunData(open_logdir(str(path)).run(None), use_cache=False), "smart_suggestion")
    return {c["check"]: c for c in result.to_json()["checks"]}


@pytest.fixture(scope="module")
def checks() -> dict[str, dict[str, dict]]:
    return {name: _checks(path) for name, path in FIXTURE_OF.items()}


@pytest.mark.parametrize("check", list(FIXTURE_OF))
def test_each_check_fires_on_its_fixture_only(checks, check):
    fired_on = [fixture for fixture, found in checks.items() if check in found]
    assert fired_on == [f for f in FIXTURE_OF if f == check or f in ALSO.get(check, [])]


def test_unfused_chain_names_each_hop_with_xprofs_buffer_size(checks):
    c = checks["unfused_elementwise"]["unfused_elementwise"]
    hops = {(f["reads"], f["op"]): f["bytes"] for f in c["findings"]}
    assert hops == {("wrapped_multiply", "wrapped_add"): 2 << 20, ("wrapped_add", "wrapped_tanh"): 2 << 20}
    xprof = json.loads((FIXTURE_OF["unfused_elementwise"] / "oracle" / "memory_viewer.json").read_text())
    sizes = {b["instructionName"]: b["logicalBufferSizeMib"] for m in xprof.values() for b in m["maxHeap"]
             if "instructionName" in b}  # the folded small buffers have no instruction
    assert sizes["wrapped_multiply"] * (1 << 20) == hops[("wrapped_multiply", "wrapped_add")]
    assert "8.0 MiB written and read back" in c["detail"]


def test_materialized_broadcast_size_equals_xprofs(checks):
    c = checks["materialized_broadcast"]["materialized_broadcast"]
    (f,) = c["findings"]
    assert (f["op"], f["feeds"], f["shape"]) == ("wrapped_broadcast", "wrapped_add", "f32[2048,1024]{1,0}")
    xprof = json.loads((FIXTURE_OF["materialized_broadcast"] / "oracle" / "memory_viewer.json").read_text())
    sizes = {b["instructionName"]: b["logicalBufferSizeMib"] for m in xprof.values() for b in m["maxHeap"]
             if "instructionName" in b}  # the folded small buffers have no instruction
    assert sizes["wrapped_broadcast"] * (1 << 20) == f["bytes"] == 8 << 20


def test_long_tail_share_from_xprofs_hlo_stats(checks):
    c = checks["low_flops_tail"]["low_flops_tail"]
    d = json.loads((FIXTURE_OF["low_flops_tail"] / "oracle" / "hlo_stats.json").read_text())
    col = {x["id"]: i for i, x in enumerate(d["cols"])}
    rows = sorted(([r["c"][col["hlo_op_name"]]["v"], r["c"][col["total_self_time"]]["v"],
                    r["c"][col["model_flop_rate"]]["v"]] for r in d["rows"]), key=lambda r: -r[1])
    total = sum(r[1] for r in rows)
    peak_gflops = 197.0 * 1000  # the fixture's TPU v5e peak, 197 TFLOP/s
    tail = [r for r in rows[10:] if r[2] < 0.1 * peak_gflops]
    share = 100.0 * sum(r[1] for r in tail) / total
    assert f"{share:.1f}% of device op time" in c["detail"] and share >= 20
    assert f"{len(tail)} ops outside the top 10" in c["detail"]
    xprof_pct = {r[0]: 100.0 * r[1] / total for r in rows}
    for f in c["findings"]:
        assert f["time_percent"] == pytest.approx(xprof_pct[f["op"]], abs=0.01)


def test_padding_at_oom_scale_is_high_and_says_the_hbm_share(checks):
    c = checks["layout_padding"]["layout_padding"]
    assert c["severity"] == "high" and "risks running out of HBM" in c["title"]
    (f,) = c["findings"]
    assert (f["logical_bytes"], f["padded_bytes"], f["expansion"], f["hbm_percent"]) == (256 << 20, 16 << 30, 64.0, 100.0)
    assert "16 GiB HBM" in c["detail"]


def test_padding_below_the_oom_share_stays_medium():
    from tputui.analysis import hbm_capacity, perf_guide
    from tputui.analysis.hlo_modules import hlo_modules
    from tputui.analysis.hlo_text import HloModel

    run = RunData(open_logdir(str(FIXTURE_OF["layout_padding"])).run(None), use_cache=False)
    models = [(m.name, HloModel.build(m.parse())) for m in hlo_modules(run)]
    v7x = hbm_capacity.tpu_capacity("TPU v7x")  # 192 GiB: 16 GiB of padding is 8% of it
    c = perf_guide._padding_check(models, v7x)
    assert c is not None and c.severity == "medium" and "wastes memory" in c.title


def test_convolution_fit_is_the_guides_example(checks):
    c = checks["mxu_alignment"]["mxu_alignment"]
    (f,) = c["findings"]
    assert (f["batch"], f["input_features"], f["padded_to"], f["mxu_utilization_percent"]) == (16, 3, "128 x 8", 4.7)


async def test_op_card_says_the_convolutions_mxu_fit():
    from conftest import make_app, settle
    from rich.console import Console

    from tputui.screens.op_profile import OpProfileScreen, node_card

    app = make_app(str(FIXTURES / "pod" / "pod_conv_fit"), "op_profile", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OpProfileScreen)
        r = screen.result
        assert set(r.mxu_fit) == {"convolution.21"}

        def find(n):
            if n.name == "convolution.21":
                return n
            return next((x for x in map(find, n.children) if x is not None), None)

        node = find(r.tree())
        assert node is not None
        console = Console(width=200, record=True, color_system=None)
        console.print(node_card(node, 1, 0.0, None, r.mxu_fit.get(node.name)))
        card = [" ".join(line.split()) for line in console.export_text().splitlines()]
        assert "MXU fit 4.7% of the MXU used: batch 16, input features 3 padded to 128 x 8" in card


def test_partitioned_programs_are_not_divided_again(checks):
    (f,) = checks["per_core_batch"]["per_core_batch"]["findings"]
    # the SPMD-partitioned parameter already holds one core's rows: 96 / 8 = 12, not 12 / 8
    assert (f["per_core_batch"], f["per_core_features"], f["global_shape"], f["partitioned"]) == (12, 100, "96x100", True)


@pytest.mark.parametrize("batch, features, ok", [(8, 128, True), (16, 256, True), (128, 8, True), (1024, 24, True),
                                                 (12, 128, False), (8, 100, False), (128, 3, False), (64, 64, False)])
def test_the_guides_batch_rules(batch, features, ok):
    from tputui.analysis.perf_guide import batch_rule_ok

    assert batch_rule_ok(batch, features) is ok


def test_input_bound_advice_has_the_guides_tensorflow_steps():
    from conftest import PROFILES

    c = _checks(PROFILES / "tf_loop")["input_bound"]
    for words in ("synthetic data", "num_parallel_reads", "shard the dataset early", "after spatial augmentation",
                  "tf.config.threading", "jit_compile=True"):
        assert words in c["what_to_change"]


def test_tf_data_help_explains_iterator_names():
    from tputui.screens.tf_data import TfDataScreen

    assert "Iterator::A::B::C is the iterator of C, which feeds B, which feeds A" in TfDataScreen.help_notes


def test_a_stacked_device_axis_is_not_a_batch():
    from conftest import PROFILES

    # tpu_v6e_inference's jit__psum is partitioned over 2 devices with one [1, 5, 1024, 1024, 256] row each
    assert "per_core_batch" not in _checks(PROFILES / "tpu_v6e_inference")
