"""The TPU runtime log (`--tpu-logs`, tpu_driver.INFO): init time, premapped buffer, the guide's two
diagnoses, in the overview's run environment and in Advice, from the CLI and the app."""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES, PROFILES, settle

from tputui.analysis import tpu_log_files as tlf
from tputui.analysis import tpu_runtime_log as trl
from tputui.cli import main

LOGS = FIXTURES / "tpu_logs"
TPU = str(PROFILES / "tpu_v6e_inference")


def test_each_fixture_log_parses_to_its_figures():
    healthy = trl.read(str(LOGS / "healthy"))
    assert healthy is not None
    assert (healthy.init_seconds, healthy.premapped_buffer_bytes, healthy.failures) == (5.583190661, 4294967296, [])
    slow = trl.read(str(LOGS / "slow_init"))
    assert slow is not None and (slow.init_seconds, slow.premapped_buffer_bytes) == (21.904117302, 68719476736)
    full = trl.read(str(LOGS / "premapped_exhausted" / "tpu_driver.INFO"))  # the file itself works too
    assert full is not None and len(full.failures) == 2
    assert (full.failures[0]["requested"], full.failures[0]["free"], full.failures[0]["line"]) == ("3.00G", "1.25G", 12)


def test_each_diagnosis_fires_on_its_log_only():
    names = {d: [c.name for c in trl.checks(trl.read(str(LOGS / d)))]
             for d in ("healthy", "slow_init", "premapped_exhausted")}
    assert names == {"healthy": [], "slow_init": ["slow_tpu_init"], "premapped_exhausted": ["premapped_buffer_exhausted"]}
    exhausted = trl.checks(trl.read(str(LOGS / "premapped_exhausted")))[0]
    assert "TPU_PREMAPPED_BUFFER_SIZE" in exhausted.change
    assert "TPU_PREMAPPED_BUFFER_TRANSFER_THRESHOLD_BYTES" in exhausted.change
    assert "3.00G requested, 1.25G free" in exhausted.detail
    slow = trl.checks(trl.read(str(LOGS / "slow_init")))[0]
    assert "21.9 s" in slow.detail and "68,719,476,736 bytes" in slow.detail and "TPU_PREMAPPED_BUFFER_SIZE" in slow.change


def test_a_folder_without_a_log_reads_as_none_and_the_newest_glog_file_is_found(tmp_path):
    assert trl.read(str(tmp_path)) is None and trl.read(None) is None
    # glog's own file names, when the tpu_driver.INFO link is missing: the newest is read
    old = tmp_path / "tpu_driver.t1v.root.log.INFO.20260603-101010.100"
    new = tmp_path / "tpu_driver.t1v.root.log.INFO.20260604-124521.62136"
    old.write_text("I0603 10:10:10.0 1 x.cc:1] CreateTpuSystemState: TPU initialization is successful and it took 1.5s\n")
    shutil.copy(LOGS / "healthy" / "tpu_driver.INFO", new)
    import os

    os.utime(old, (1, 1))
    rt = trl.read(str(tmp_path))
    assert rt is not None and rt.log == str(new) and rt.init_seconds == 5.583190661


def _export(capsys, *args) -> dict:
    assert main(["export", TPU, *args, "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_overview_json_has_the_runtime_and_advice_has_the_finding(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(tlf, "DEFAULT_DIR", str(tmp_path / "absent"))
    env = _export(capsys, "--tool", "overview_page", "--tpu-logs", str(LOGS / "premapped_exhausted"))["run_environment"]
    assert env["tpu_runtime"] == {"init_seconds": 5.583190661, "premapped_buffer_bytes": 4294967296,
                                  "premapped_allocation_failures": 2,
                                  "log": str(LOGS / "premapped_exhausted" / "tpu_driver.INFO")}
    overview = _export(capsys, "--tool", "overview_page", "--tpu-logs", str(LOGS / "premapped_exhausted"))
    assert any("premapped buffer" in a["title"] for a in overview["advice"])
    advice = _export(capsys, "--tool", "smart_suggestion", "--tpu-logs", str(LOGS / "premapped_exhausted"))
    found = [c for c in advice["checks"] if c["check"] == "premapped_buffer_exhausted"]
    assert found and found[0]["severity"] == "high" and "TPU_PREMAPPED_BUFFER_SIZE" in found[0]["what_to_change"]
    # no log anywhere: the key is there, null; no runtime advice
    plain = _export(capsys, "--tool", "overview_page")
    assert plain["run_environment"]["tpu_runtime"] is None
    assert not any("premapped" in a["title"] for a in plain["advice"])


def test_default_folder_is_read_when_it_exists(capsys, monkeypatch):
    monkeypatch.setattr(tlf, "DEFAULT_DIR", str(LOGS / "slow_init"))
    env = _export(capsys, "--tool", "overview_page")["run_environment"]
    assert env["tpu_runtime"]["init_seconds"] == 21.904117302
    checks = [c["check"] for c in _export(capsys, "--tool", "smart_suggestion")["checks"]]
    assert "slow_tpu_init" in checks


def test_a_named_folder_without_a_log_is_one_line_and_exit_2(capsys, tmp_path):
    assert main(["export", TPU, "--tool", "overview_page", "--tpu-logs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no tpu_driver.INFO" in err and "Traceback" not in err
    assert main(["export", TPU, "--tool", "overview_page", "--tpu-logs", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_tools_without_the_option_ignore_the_default_folder(capsys, monkeypatch):
    monkeypatch.setattr(tlf, "DEFAULT_DIR", str(LOGS / "healthy"))
    assert main(["export", TPU, "--tool", "summary", "--no-cache"]) == 0  # no "takes no option" refusal


def test_a_changed_log_is_not_answered_from_the_export_cache(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(tlf, "DEFAULT_DIR", str(tmp_path / "absent"))
    logs = tmp_path / "logs"
    shutil.copytree(LOGS / "healthy", logs)

    def init() -> float:
        assert main(["export", TPU, "--tool", "overview_page", "--tpu-logs", str(logs)]) == 0
        return json.loads(capsys.readouterr().out)["run_environment"]["tpu_runtime"]["init_seconds"]

    assert init() == 5.583190661
    log = logs / "tpu_driver.INFO"
    log.write_text(log.read_text().replace("5.583190661s", "7.25s"))
    assert init() == 7.25


@pytest.mark.parametrize("folder", ["premapped_exhausted"])
async def test_app_overview_shows_the_runtime_line(folder):
    from conftest import make_app

    from tputui.screens.overview import OverviewScreen

    app = make_app("tpu_v6e_inference", "overview_page", use_cache=False, tpu_logs=str(LOGS / folder))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OverviewScreen) and screen.error is None
        from rich.console import Console

        console = Console(width=200, record=True, color_system=None)
        console.print(screen.query_one("#ov-env").content)
        text = console.export_text()
        assert "TPU runtime: init 5.6 s, premapped buffer 4.00 GiB, 2 allocation failure(s)" in text
