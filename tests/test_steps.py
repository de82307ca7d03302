"""steps: XProf's step list, step times and per-step breakdown on every shared profile.

Oracle: the step-time table of `oracle/input_pipeline_analyzer.json` (XProf 2.24). Tolerance: step
names equal; step time and each breakdown column within 1 us (the oracle prints ms with 6 decimals).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ALL_PROFILES, PROFILES, oracle_dir

from tputui.analysis import host_map
from tputui.analysis import steps as S
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

US_IN_MS = 1e-3


def _runs():
    for profile in ALL_PROFILES + ["jax_named_steps"]:  # + a profile whose step marker is named "step"
        for run in open_logdir(str(PROFILES / profile)).runs:
            yield pytest.param(profile, run, id=f"{profile}:{run.name}")


def _oracle_steps(profile, run):
    d = oracle_dir(profile, run.name if profile == "jax_two_runs" else None)
    table = json.loads((d / "input_pipeline_analyzer.json").read_text())[1]
    ids = [c["id"] for c in table["cols"]]
    return [dict(zip(ids, (c.get("v") if c else None for c in r["c"]))) for r in table["rows"]], table


@pytest.mark.parametrize("profile,run", list(_runs()))
def test_steps_match_xprof(profile, run):
    want, table = _oracle_steps(profile, run)
    db = host_map.run_op_stats(RunData(run)).steps
    got = db.per_step()
    assert len(got) == len(want)
    if not want:
        assert db.diagnostics == [S.NO_STEP_MARKER]
        return
    assert got["name"].to_list() == [w["stepnum"] for w in want]
    ms = lambda col: got[col].to_numpy() / 1e9
    np.testing.assert_allclose(ms("duration_ps"), [w["stepTimeMs"] for w in want], atol=US_IN_MS)
    columns = {
        "hostComputeTimeMs": ms("host_compute_ps"),
        "infeedTimeMs": ms("host_wait_input_ps") + ms("host_to_device_ps") + ms("device_wait_host_ps"),
        "otherTimeMs": ms("unknown_ps"),
        "kernelLaunchTimeMs": ms("host_prepare_ps"),
        "compileTimeMs": ms("host_compile_ps"),
        "outfeedTimeMs": ms("device_to_host_ps"),
        "deviceComputeTimeMs": ms("device_compute_16_ps") + ms("device_compute_32_ps"),
    }
    for col, ours in columns.items():
        np.testing.assert_allclose(ours, [w[col] for w in want], atol=US_IN_MS, err_msg=col)
    # XProf's summary properties (one decimal).
    summary = db.summary_ms()
    assert f"{summary['avg']:.1f}" == table["p"]["steptime_ms_average"]
    assert f"{summary['stddev']:.1f}" == table["p"]["steptime_ms_standard_deviation"]


def test_first_and_last_partial_steps_are_dropped():
    run = open_logdir(str(PROFILES / "jax_mlp")).runs[0]
    fr = RunData(run).frame()
    kept = S.host_steps(fr)
    every = S.host_steps(fr, drop_incomplete=False)
    assert len(every.steps) == len(kept.steps) + 2
    assert every.steps["name"][0] == "train 0" and kept.steps["name"][0] == "train 1"


def test_zero_length_event_holds_type_until_next_end():
    # XProf quirk kept: a zero-length host event in a gap raises "host compute" until the next
    # host-compute event ends. Step [0, 100]; events: zero-length at 10, [40, 50].
    bd, seen = S._sweep_breakdown(np.array([0, 0]), np.array([1, 1]), np.array([10, 40]),
                                  np.array([10, 50]), np.array([0]), np.array([100]))
    assert bd[0, S._T["host_compute"]] == 40
    assert bd[0, S._T["unknown"]] == 60
    assert seen[0, S._T["host_compute"]]


def test_multi_type_priority():
    # Wait-for-input [20, 60] beats host compute [0, 50]; compute resumes nowhere after.
    bd, _ = S._sweep_breakdown(np.array([0, 0]), np.array([S._T["host_compute"], S._T["host_wait_input"]]),
                               np.array([0, 20]), np.array([50, 60]), np.array([0]), np.array([100]))
    assert bd[0, S._T["host_compute"]] == 20
    assert bd[0, S._T["host_wait_input"]] == 40
    assert bd[0, S._T["unknown"]] == 40


def test_vectorized_sweep_equals_xprof_loop_on_random_steps():
    # The one-type fast path must give what XProf's boundary sweep gives, zero-length quirk included.
    rng = np.random.default_rng(0)
    sb, se = np.array([0, 10, 20]), np.array([60, 40, 70])
    for _ in range(2000):
        m = int(rng.integers(1, 12))
        g = rng.integers(0, 3, m)
        s = rng.integers(0, 50, m)
        e = s + np.where(rng.random(m) < 0.4, 0, rng.integers(1, 20, m))
        ty = np.ones(m, np.int64)
        fast = np.zeros((3, len(S.BREAKDOWN_TYPES)), np.int64)
        exact = fast.copy()
        fast_seen, exact_seen = np.zeros_like(fast, bool), np.zeros_like(fast, bool)
        S._single_type_sweep(g, ty, s, e, sb, se, fast, fast_seen)
        S._boundary_sweep(g, ty, s, e, sb, se, exact, exact_seen)
        assert (fast[:, 1] == exact[:, 1]).all(), (g, s, e)
        assert (fast_seen[:, 1] == exact_seen[:, 1]).all(), (g, s, e)
