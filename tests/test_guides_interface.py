"""Issue #31's interface: the memory viewer's HBM capacity / headroom / fit and the batch advice, and
megascale stats for any TPU of a host (`--device`, `T` on the screen)."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, PROFILES, settle

from tputui.analysis import hbm_capacity
from tputui.cli import main

TPU = str(PROFILES / "tpu_v6e_inference")
DCN = str(FIXTURES / "pod" / "dcn_2slices")
GIB = 1 << 30


def _export(capsys, logdir: str, *args) -> dict:
    assert main(["export", logdir, *args, "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_memory_viewer_json_has_capacity_headroom_and_fit(capsys):
    d = _export(capsys, TPU, "--tool", "memory_viewer")
    peak = round(d["peak_heap_mib"] * (1 << 20))
    assert d["hbm_capacity_bytes"] == 32 * GIB  # "TPU v6 Lite": a v6e chip, 32 GiB
    assert "v6e" in d["hbm_capacity_source"]
    assert d["headroom_bytes"] == 32 * GIB - peak and d["fits"] is True
    # 20 GiB of temporaries, ~0 indefinite: 12 GiB free lets the temporaries grow 1.6x
    assert d["batch_growth_factor"] == pytest.approx(1 + d["headroom_bytes"] / (20 * GIB), rel=1e-6)
    assert "Increase the batch size" in d["batch_advice"] and "1.6x larger would fit" in d["batch_advice"]


def test_memory_viewer_capacity_is_null_where_unknown(capsys):
    d = _export(capsys, str(PROFILES / "jax_mlp"), "--tool", "memory_viewer")  # CPU: no HBM
    assert (d["hbm_capacity_bytes"], d["headroom_bytes"], d["fits"]) == (None, None, None)
    # other memory spaces than HBM: no HBM figures either
    d = _export(capsys, TPU, "--tool", "memory_viewer", "--memory-space", "1")
    assert d["hbm_capacity_bytes"] is None and d["fits"] is None


@pytest.mark.parametrize("device_type, gib", [("TPU v6 Lite", 32), ("TPU v5 lite", 16), ("TPU v5", 95),
                                               ("TPU v5p", 95), ("TPU v4", 32), ("TPU v7x", 192), ("TPU v3", 16)])
def test_tpu_capacity_by_generation(device_type, gib):
    cap = hbm_capacity.tpu_capacity(device_type)
    assert cap is not None and cap.bytes == gib * GIB


def test_headroom_when_the_peak_does_not_fit_and_when_little_is_left():
    cap = hbm_capacity.Capacity(16 * GIB, "test")
    over = hbm_capacity.headroom(18 * GIB, 10 * GIB, cap)
    assert over.fits is False and over.headroom_bytes == -2 * GIB and over.batch_factor is None
    assert "over this device's HBM" in over.advice
    tight = hbm_capacity.headroom(15 * GIB, 10 * GIB, cap)
    assert tight.fits and tight.batch_factor == pytest.approx(1.1) and "little room" in tight.advice
    assert hbm_capacity.headroom(1, 1, None).capacity_bytes is None


async def test_memory_viewer_screen_shows_capacity_beside_the_peak():
    from conftest import make_app

    from tputui.screens.memory_viewer import MemoryViewerScreen

    app = make_app("tpu_v6e_inference", "memory_viewer", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryViewerScreen) and screen.error is None
        from rich.console import Console

        console = Console(width=140, record=True, color_system=None)
        console.print(screen.query_one("#mv-summary").content)
        text = console.export_text()
        assert "HBM per device" in text and "32.00 GiB" in text and "12.00 GiB, fits" in text and "Larger batch fits" in text
        assert "a batch about 1.6x larger would fit" in str(screen.query_one("#mv-hbm-advice").content)


def test_megascale_device_option_reads_that_tpu(capsys):
    first = _export(capsys, DCN, "--tool", "megascale_stats")
    third = _export(capsys, DCN, "--tool", "megascale_stats", "--device", "/device:TPU:2")
    short = _export(capsys, DCN, "--tool", "megascale_stats", "--device", "2")
    assert first["device"] == "/device:TPU:0" and third["device"] == short["device"] == "/device:TPU:2"
    assert first["devices"] == [f"/device:TPU:{i}" for i in range(4)]
    assert third["rows"] == short["rows"]
    # the same collectives, each core's own stalls
    assert {r["name"] for r in third["rows"]} == {r["name"] for r in first["rows"]}
    assert [r["stall_duration_ms"] for r in third["rows"]] != [r["stall_duration_ms"] for r in first["rows"]]


def test_megascale_default_device_still_equals_xprof(capsys):
    oracle = json.loads((FIXTURES / "pod" / "dcn_2slices" / "oracle" / "megascale_stats.ms-s0-0.json").read_text())
    xprof = {r["c"][0]["v"]: r["c"][11]["v"] for r in oracle[0]["rows"]}  # name -> stall duration (ms)
    ours = _export(capsys, DCN, "--tool", "megascale_stats", "--device", "/device:TPU:0")
    assert {r["name"]: r["stall_duration_ms"] for r in ours["rows"]} == xprof


def test_megascale_unknown_device_is_one_line_exit_2(capsys):
    assert main(["export", DCN, "--tool", "megascale_stats", "--device", "9", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no device '9'" in err and "/device:TPU:3" in err


async def test_megascale_screen_picks_another_device():
    from conftest import make_app

    from tputui.screens.megascale import MegascaleScreen
    from tputui.screens.pickers import PickerScreen

    app = make_app(DCN, "megascale_stats", use_cache=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MegascaleScreen) and screen.result.device == "/device:TPU:0"
        assert "4 TPU devices, T for another" in str(screen.query_one("#summary").content)
        await pilot.press("T")
        await pilot.pause()
        assert isinstance(app.screen, PickerScreen)
        app.screen.dismiss("/device:TPU:3")
        await settle(pilot)
        assert app.screen is screen and screen.result.device == "/device:TPU:3"
        assert "/device:TPU:3" in str(screen.query_one("#summary").content)


def test_capacity_of_a_big_host_comes_without_a_plane_decode(monkeypatch):
    from tputui.analysis import hbm_capacity, host_map
    from tputui.data.logdir import open_logdir
    from tputui.data.run_data import RunData

    monkeypatch.setattr(hbm_capacity, "PLANE_READ_MAX_BYTES", 0)  # every host file counts as big
    run = RunData(open_logdir(TPU).run(None), use_cache=False)
    host = run.hosts[0]
    # No op stats yet: the device plane's own stats, read without its events (no frame decoded).
    before = hbm_capacity.device_capacity(run, host)
    assert before is not None and before.bytes == 32 * GIB
    assert not any(k[0] == host and k[1] is not None for k in run._frames)
    host_map.host_op_stats(run, host)  # what the overview computes: now the device type is known
    cap = hbm_capacity.device_capacity(run, host)
    assert cap is not None and cap.bytes == 32 * GIB
