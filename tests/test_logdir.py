"""Logdir discovery: every accepted LOGDIR form, XProf's run names, newest first."""
from __future__ import annotations

import shutil

import pytest
from conftest import FIXTURES, PROFILES

from tputui.data.logdir import LogdirError, open_logdir


def names(path) -> list[str]:
    return [r.name for r in open_logdir(str(path)).runs]


def test_root_of_many_profiles_names_runs_like_xprof():
    got = names(PROFILES)
    # XProf: "<dir holding plugins/profile, relative to the logdir>/<run>".
    assert set(got) >= {
        "jax_live_capture/2026_11_22_12_59_04", "jax_mlp/2026_11_22_12_58_33",
        "jax_two_runs/2026_11_22_12_58_45", "jax_two_runs/2026_11_22_12_58_50",
        "tf_keras/train/2026_11_22_12_58_40", "tf_loop/2026_11_22_13_01_15",
        "tpu_v6e_inference/2025_12_10_run"}
    assert len(got) == len(list(PROFILES.rglob("plugins/profile/*/")))  # one run per run folder
    # Newest first (timestamped names are compared by their time).
    stamped = [n for n in got if not n.endswith("_run")]
    assert stamped == sorted(stamped, key=lambda n: n.rsplit("/", 1)[1], reverse=True)


def test_keras_run_lives_under_train():
    assert names(PROFILES / "tf_keras") == ["train/2026_11_22_12_58_40"]


def test_plugins_profile_folder_and_run_folder_and_file():
    pp = PROFILES / "jax_two_runs" / "plugins" / "profile"
    assert names(pp) == ["2026_11_22_12_58_50", "2026_11_22_12_58_45"]
    run = pp / "2026_11_22_12_58_45"
    assert names(run) == ["2026_11_22_12_58_45"]
    logdir = open_logdir(str(run / "vm.xplane.pb"))
    assert [h.host for h in logdir.runs[0].hosts] == ["vm"]


def test_hosts_and_run_selection():
    logdir = open_logdir(str(PROFILES / "jax_live_capture"))
    assert [h.host for h in logdir.runs[0].hosts] == ["localhost_9015"]
    assert logdir.run("2026_11_22_12_59_04").name == "2026_11_22_12_59_04"
    with pytest.raises(LogdirError, match="no run 'nope'"):
        logdir.run("nope")
    with pytest.raises(LogdirError, match="no host 'x'"):
        logdir.runs[0].host("x")


def test_missing_and_empty_logdirs_say_what_is_expected(tmp_path):
    with pytest.raises(LogdirError, match="no such file or directory"):
        open_logdir(str(tmp_path / "absent"))
    with pytest.raises(LogdirError, match=r"no profiles under .*: expected plugins/profile/<run>/<host>.xplane.pb"):
        open_logdir(str(tmp_path))
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(LogdirError, match="not an XProf profile"):
        open_logdir(str(tmp_path / "notes.txt"))


def test_riegeli_hosts_are_listed_and_read_like_pb(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    shutil.copy(next((FIXTURES / "riegeli" / "tf_loop_none").rglob("*.xplane.riegeli")), run / "big-host.xplane.riegeli")
    shutil.copy(next((PROFILES / "jax_mlp").rglob("*.xplane.pb")), run / "small.xplane.pb")
    r = open_logdir(str(tmp_path)).runs[0]
    assert [(h.host, h.format) for h in r.hosts] == [("big-host", "riegeli"), ("small", "pb")]
    from tputui.data.run_data import RunData

    rd = RunData(r)
    assert rd.hosts == ["big-host", "small"]
    assert rd.frame("big-host").num_events == rd.frame("big-host").raw.num_events > 1000


def test_unreadable_riegeli_run_is_one_line_for_every_tool(tmp_path, capsys):
    from tputui.cli import main
    from tputui.tools import tool_names

    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "big-host.xplane.riegeli").write_bytes(b"riegeli")
    for tool in tool_names():
        assert main(["export", str(tmp_path), "--tool", tool]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("tputui: error: ") and "\n" not in err and "not a Riegeli" in err, err


def test_hosts_sort_numbers_by_value(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    src = next((PROFILES / "jax_mlp").rglob("*.xplane.pb"))
    for host in ("w-10", "w-2", "w-1", "w-0", "host-b", "host-a"):
        shutil.copy(src, run / f"{host}.xplane.pb")
    assert [h.host for h in open_logdir(str(tmp_path)).runs[0].hosts] == \
        ["host-a", "host-b", "w-0", "w-1", "w-2", "w-10"]
