"""Batch size in the run environment (issue #31): recorded by the profile (a `batch_size` stat, which
tf.data's batching iterators carry) or else derived from the step program's input shapes, labelled so.
XProf derives none (its RunEnvironment has no batch field), so there is no oracle figure to match:
each fixture's value is stated here with where it comes from.
"""
from __future__ import annotations

import json
import pathlib

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis.batch_size import STATE_ARGUMENTS, derived_batch_size
from tputui.analysis.hlo_modules import HloModuleEntry
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text
from tputui.proto import hlo_pb2

SHARED = pathlib.Path("/work/shared/profiles")
# fixture -> (batch, source, why)
EXPECTED = {
    "profiles/tf_loop": (32, "recorded", "tf.data's .batch(32): MapAndBatch carries batch_size=32"),
    "profiles/tf_keras": (64, "recorded", "tf.data's .batch(64) under Keras: MapAndBatch carries 64"),
    "profiles/jax_mlp": (128, "derived", "jit_train_step's x [128, 784] and y [128, 10]; params[...] left out"),
    "profiles/jax_two_runs": (128, "derived", "the same train step as jax_mlp, batch 128"),
    "profiles/jax_live_capture": (64, "derived", "jit_step(w, x): x [64, 256]; w is a weight"),
    "profiles/jax_named_steps": (None, None, "one program, jit_tiny: not named like a step function"),
    "profiles/tpu_v6e_inference": (None, None, "jit_f holds weights only (ws[...]) and is not named like a step"),
    "guides/spmd_small_batch": (96, "derived", "partitioned x is 12 rows per core, tiled 8 ways: 96"),
    "guides/conv_small_batch": (16, "derived", "x [16, 32, 32, 3] beside the kernel k [3, 3, 3, 8]"),
    "tf_input/from_generator": (16, "recorded", "from_generator(...).batch(16): BatchV2 carries 16"),
    "tf_input/iterator_outside_step": (16, "recorded", "map(...).batch(16): MapAndBatch carries 16"),
    "tf_input/py_function_map": (16, "recorded", "map(py_function).batch(16): MapAndBatch carries 16"),
    "tf_input/tfrecord_late_shard": (16, "recorded", "batch(16) after the shard: BatchV2 carries 16 (the step is "
                                                     "an XLA program too, but a recorded batch comes first)"),
    "tf_input/device_pipeline": (16, "recorded", "the global batch of 16 (MapAndBatch), which Rebatch splits "
                                                 "into 8 per replica"),
}


def _env(path: pathlib.Path) -> dict:
    run = open_logdir(str(path)).runs[0]
    return json.loads(export_text(RunData(run), "overview_page", "json"))["run_environment"]


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_batch_size_of_each_fixture(fixture):
    value, source, why = EXPECTED[fixture]
    got = _env(FIXTURES / fixture)["batch_size"]
    if value is None:
        assert got is None, why
    else:
        assert (got["value"], got["source"]) == (value, source), why
        assert got["detail"] and value in got["values"]


@pytest.mark.parametrize("profile", ["tf_loop", "tf_keras", "jax_mlp", "jax_two_runs", "jax_live_capture",
                                     "tpu_v6e_inference"])
def test_shared_profiles_give_the_same(profile):
    if not (SHARED / profile).is_dir():
        pytest.skip("/work/shared/profiles is not here")
    value, source, _ = EXPECTED[f"profiles/{profile}"]
    got = _env(SHARED / profile)["batch_size"]
    assert (got and (got["value"], got["source"])) == ((value, source) if value else None)


def test_xprof_fields_stay_and_xprof_has_no_batch():
    env = _env(PROFILES / "jax_mlp")
    assert set(env) == {"device_type", "device_core_count", "host_count", "hosts", "task_count", "is_training",
                        "hardware_type", "tpu_runtime", "batch_size"}
    xprof_env = json.loads((PROFILES / "jax_mlp" / "oracle" / "overview_page.json").read_text())[2]["p"]
    assert not [k for k in xprof_env if "batch" in k]  # nothing of XProf's to compare with


def _module(name: str, params: list[tuple[str, list[int], int]], spmd: bool = False) -> HloModuleEntry:
    proto = hlo_pb2.HloProto()
    comp = proto.hlo_module.computations.add()
    comp.id, comp.name = 1, "main.1_spmd" if spmd else "main.1"
    proto.hlo_module.entry_computation_id = 1
    for n, (arg, dims, tiles) in enumerate(params):
        ins = comp.instructions.add()
        ins.opcode, ins.name, ins.parameter_number = "parameter", f"p{n}", n
        ins.metadata.op_name = arg
        ins.shape.dimensions.extend(dims)
        if tiles > 1:
            ins.sharding.tile_assignment_dimensions.extend([tiles] + [1] * (len(dims) - 1))
    return HloModuleEntry(f"{name}(1)", name, 1, "h", proto.SerializeToString())


def test_derivation_rules():
    step = _module("jit_train_step", [("params[0][0]", [784, 256], 1), ("params[0][1]", [256], 1),
                                      ("x", [32, 784], 1), ("y", [32], 1), ("opt_state[0]", [256, 256], 1)])
    helper = _module("jit_normal", [("x", [7, 7], 1)])
    got = derived_batch_size([helper, step])
    assert (got.value, got.source) == (32, "derived") and "x, y" in got.detail and "jit_train_step" in got.detail
    assert derived_batch_size([helper]) is None  # no program named like a step
    assert derived_batch_size([_module("jit_step", [("params", [8, 8], 1)])]) is None  # model state only
    sharded = derived_batch_size([_module("jit_step", [("x", [12, 100], 8), ("w", [100, 256], 1)], spmd=True)])
    assert sharded.value == 96 and "12 per core x 8" in sharded.detail
    assert "params" in STATE_ARGUMENTS and "x" not in STATE_ARGUMENTS


def test_overview_screen_shows_it_labelled():
    from tputui.analysis.overview import analyze
    from tputui.screens.overview import _environment

    text = _environment(analyze(RunData(open_logdir(str(PROFILES / "jax_mlp")).runs[0]))).plain
    assert "Batch size: 128" in text and "derived: leading dimension of x, y in jit_train_step(32)" in text
