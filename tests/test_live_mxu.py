"""The live monitor's matrix-unit utilization where neither the Monitor RPC nor libtpu's runtime metrics
give one (issue #31): computed from the profile window, device op FLOPs over the cores' time at the peak
FLOP rate, labelled with its source. Checked against XProf's op_profile of the same profile (its root's
raw FLOPs and raw time, IDLE included) and the TPU's peak."""
from __future__ import annotations

import json

import pytest
from conftest import PROFILES, xplane

from tputui.live.figures import MXU_SOURCE
from tputui.live.monitor import sample_from_xspace
from tputui.live.plain import plain_lines


def test_window_mxu_from_flops_equals_xprofs_figures():
    s = sample_from_xspace(xplane("tpu_v6e_inference").read_bytes(), "t:8466", 1000, now=0)
    root = json.loads((PROFILES / "tpu_v6e_inference" / "oracle" / "op_profile.json").read_text())["byProgram"]["metrics"]
    peak = 918.0e12  # the profile's peak_teraflops_per_second
    want = 100.0 * root["rawFlops"] / (root["rawTime"] * 1e-12 * peak)
    assert s.mxu_pct == pytest.approx(want, rel=1e-9)
    assert s.mxu_source == MXU_SOURCE


def test_no_device_no_figure():
    s = sample_from_xspace(xplane("jax_mlp").read_bytes(), "h:1", 1000, now=0)
    assert s.mxu_pct is None and s.mxu_source is None
    assert "n/a" in next(line for line in plain_lines(s, 1) if "Matrix Units" in line)


async def test_pane_labels_the_window_figure():
    from helpers.pane import drawn, settle

    from tputui.monitor_app import MonitorApp
    from tputui.screens.monitor import MonitorScreen

    s = sample_from_xspace(xplane("tpu_v6e_inference").read_bytes(), "10.130.0.2:8466", 1000, now=0)
    app = MonitorApp(MonitorScreen(lambda: iter([s]), addresses=[s.address], window_ms=s.window_ms))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        figures = drawn(app.screen.query_one("#figures"))
        assert "MXU utilization (window FLOPs)" in figures and "needs the TPU's performance counters" not in figures
