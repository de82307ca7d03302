"""op_events: the frame rows behind a row of an op tool are the events that row adds up.

Each row's event count is compared with the row's own occurrences (exact), on the real and the
synthetic fixtures; device framework ops sum their HLO ops' occurrences (XProf reports the max)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES

from tputui.analysis import framework_op_stats, hlo_stats, kernel_stats
from tputui.analysis.op_events import (
    framework_op_rows,
    hlo_op_rows,
    kernel_rows,
    program_rows,
)
from tputui.analysis.op_metrics import parse_tf_op
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData


def run(path: str) -> RunData:
    return RunData(open_logdir(str(FIXTURES / path)).runs[0])


@pytest.mark.parametrize("path", ["profiles/tpu_v6e_inference", "pod/pod_v5e_single"])
def test_hlo_op_rows_are_the_op_occurrences(path):
    rd = run(path)
    frame = rd.frame()
    rows = hlo_stats.analyze(rd).rows
    for r in rows.iter_rows(named=True):
        found = hlo_op_rows(frame, [r["hlo_op_name"]], int(r["program_id"]))
        assert len(found) == r["occurrences"], r["hlo_op_name"]
        names = {frame.raw.em_display_name[m] or frame.raw.em_name[m]
                 for m in frame.events["metadata"].to_numpy()[found]}
        assert names == {r["hlo_op_name"]}


def test_hlo_op_rows_other_program_finds_nothing():
    frame = run("profiles/tpu_v6e_inference").frame()
    assert len(hlo_op_rows(frame, ["copy-done.4"], 12190760917235803885)) == 400
    assert len(hlo_op_rows(frame, ["copy-done.4"], 1)) == 0


@pytest.mark.parametrize("path", ["profiles/tf_loop", "profiles/tf_keras", "profiles/tpu_v6e_inference"])
def test_framework_op_rows_are_the_op_occurrences(path):
    rd = run(path)
    frame = rd.frame()
    fos = framework_op_stats.analyze(rd).with_idle
    hlo = hlo_stats.analyze(rd).rows if path.endswith("tpu_v6e_inference") else None
    checked = 0
    for r in fos.filter(fos["operation"] != "IDLE").iter_rows(named=True):
        found = framework_op_rows(frame, r["host_or_device"], r["operation"])
        if r["host_or_device"] == "Host":
            assert len(found) == r["occurrences"], r["operation"]
        else:  # the op's HLO ops (its tf_op provenance, or the HLO op itself without one)
            named = [(parse_tf_op(t)[1] if t else h) == r["operation"]
                     for t, h in zip(hlo["tf_op_name"].to_list(), hlo["hlo_op_name"].to_list())]
            assert len(found) == hlo.filter(named)["occurrences"].sum() > 0, r["operation"]
        checked += 1
    assert checked == fos.height - fos.filter(fos["operation"] == "IDLE").height


def test_program_rows_are_the_program_runs():
    frame = run("profiles/tpu_v6e_inference").frame()
    found = program_rows(frame, "jit_f(12190760917235803885)")
    assert len(found) == 400
    assert {frame.raw.line_name[ln] for ln in np.unique(frame.events["line"].to_numpy()[found])} == {"XLA Modules"}


def test_kernel_rows_are_the_kernel_launches():
    rd = run("gpu_kernels")
    frame = rd.frame()
    rows = kernel_stats.analyze(rd).rows
    for r in rows.iter_rows(named=True):
        found = kernel_rows(frame, r["kernel_name"], r["op_name"], r["grid_dim"], r["block_dim"])
        assert len(found) == r["occurrences"], r["kernel_name"]


def test_profiles_without_the_planes_find_nothing():
    frame = run("profiles/jax_mlp").frame()
    assert len(hlo_op_rows(frame, ["fusion"])) == 0
    assert len(framework_op_rows(frame, "Device", "add")) == 0
    assert len(kernel_rows(frame, "volta_h884gemm_128x128_ldg8_nn")) == 0
