"""Monitor figures of one window agree with XProf 2.24 on the real profiles (oracle/overview_page.json).

Tolerances: step times exact to 1e-6 ms (XProf prints them with 6 decimals); XProf's
device idle % and duty cycle are printed with one decimal, so ours must round to them (0.05 points);
top-op shares to 1e-6 (XProf's fractions).
"""
from __future__ import annotations

import json

import pytest
from conftest import oracle_dir, xplane

from tputui.data.xspace import decode
from tputui.live.figures import window_figures
from tputui.live.monitor import sample_from_xspace
from tputui.live.plain import plain_lines


def _overview(profile):
    return json.loads((oracle_dir(profile) / "overview_page.json").read_text())


@pytest.mark.parametrize("profile", ["jax_live_capture", "jax_mlp", "tf_loop"])
def test_step_times_match_xprof_step_table(profile):
    rows = _overview(profile)[1]["rows"]
    want = [(r["c"][0]["v"], r["c"][-1]["v"]) for r in rows]  # ("train 75", step ms)
    w = window_figures(decode(xplane(profile).read_bytes()))
    assert len(w.step_ms) == len(want) > 0
    assert w.step_names == [name for name, _ in want]
    for (_, ms), ours in zip(want, w.step_ms):
        assert ours == pytest.approx(ms, abs=1e-6)
    # Input share per step: XProf's "Input" column (ms) over the step time.
    inputs = [r["c"][6]["v"] for r in rows]
    for pct, ms, want_input in zip(w.infeed_pct, w.step_ms, inputs):
        assert pct / 100 * ms == pytest.approx(want_input, abs=1e-6)
    p = _overview(profile)[1]["p"]
    assert f"{sum(w.step_ms) / len(w.step_ms):.1f}" == p["steptime_ms_average"]
    assert f"{min(w.step_ms):.1f}" == p["steptime_ms_minimum"]
    assert f"{max(w.step_ms):.1f}" == p["steptime_ms_maximum"]


def test_keras_batches_without_root_marker_are_not_steps():
    w = window_figures(decode(xplane("tf_keras").read_bytes()))
    assert w.step_ms == [] and len(_overview("tf_keras")[1]["rows"]) == 0


def test_tpu_device_figures_match_xprof_overview():
    ov = _overview("tpu_v6e_inference")
    w = window_figures(decode(xplane("tpu_v6e_inference").read_bytes()))
    env = ov[2]["p"]
    assert w.device_type == env["device_type"] == "TPU v6 Lite"
    assert w.cores == int(env["device_core_count"]) == 4
    idle = float(ov[0]["p"]["device_idle_time_percent"].rstrip("%"))
    assert w.idle_pct == pytest.approx(idle, abs=0.05)
    assert w.step_ms == []  # inference: no step markers (XProf: "No step marker observed")
    busy = float(ov[0]["p"]["device_duty_cycle_percent"].rstrip("%"))
    assert w.busy_pct == pytest.approx(busy, abs=0.05)
    # The overview's top device ops: same order, same share of op time (XProf: fraction, 1e-6).
    want = [(r["c"][3]["v"], r["c"][0]["v"]) for r in ov[0]["rows"]][:len(w.top_ops)]
    assert [t.name for t in w.top_ops] == [n for n, _ in want]
    for t, (_, frac) in zip(w.top_ops, want):
        assert t.percent / 100 == pytest.approx(frac, abs=1e-6)


def test_plain_lines_for_tpu_and_host_windows():
    s = sample_from_xspace(xplane("tpu_v6e_inference").read_bytes(), "t:8466", 1000, now=0)
    lines = plain_lines(s, 2)
    assert lines[1] == "TPU type: TPU v6 Lite" and lines[2] == "Number of TPU cores: 4"
    assert lines[3] == f"TPU idle time (lower is better): {s.idle_pct:.1f}%"
    # no counters in a trace window: the window's FLOPs over its cores' time at the peak, labelled so
    assert lines[4] == (f"Utilization of TPU Matrix Units (higher is better): {s.mxu_pct:.3f}% "
                        "(from the profile window: device op FLOPs / (the cores' time x peak FLOP rate))")
    assert plain_lines(s, 1)[2].startswith("Utilization of TPU Matrix Units")
    h = sample_from_xspace(xplane("jax_live_capture").read_bytes(), "h:1", 1000, now=0)
    hl = plain_lines(h, 2)
    assert hl[1] == "Device type: CPU (host only: no TPU or GPU in the trace)"
    assert hl[3] == (f"Step time: {h.step_ms_avg:.3f}ms (avg), {h.step_ms_min:.3f}ms (min), "
                     f"{h.step_ms_max:.3f}ms (max) over 325 steps")
