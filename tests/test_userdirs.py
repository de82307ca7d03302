"""Where exports and settings go: never into the logdir, always somewhere the user owns."""
from __future__ import annotations

import os

import pytest

from tputui import userdirs


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("TPUTUI_EXPORT_DIR", "XDG_DOWNLOAD_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    os.makedirs(tmp_path / "home")
    return tmp_path / "home"


def test_export_dir_is_downloads_when_there_is_one_else_the_cache(home):
    assert userdirs.export_dir() == str(home / ".cache" / "tputui" / "exports")
    (home / "Downloads").mkdir()
    assert userdirs.export_dir() == str(home / "Downloads")


def test_export_dir_is_never_inside_the_logdir(home, monkeypatch):
    (home / "Downloads").mkdir()
    # The user views their home as a logdir: Downloads is inside it, so the cache is not either...
    logdir = str(home)
    with pytest.raises(OSError, match="TPUTUI_EXPORT_DIR"):
        userdirs.export_dir(logdir)
    # ...an explicit folder outside it is used; one inside it is skipped.
    outside = home.parent / "out"
    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(outside))
    assert userdirs.export_dir(logdir) == str(outside) and outside.is_dir()
    monkeypatch.setenv("TPUTUI_EXPORT_DIR", str(home / "logs" / "x"))
    assert userdirs.export_dir(str(home / "logs")) == str(home / "Downloads")
    assert userdirs.export_dir("gs://bucket/logs") == str(home / "logs" / "x")  # a bucket is never local


def test_short_path(home):
    assert userdirs.short_path(str(home / "Downloads" / "a.csv")) == "~/Downloads/a.csv"
    assert userdirs.short_path("/tmp/a.csv") == "/tmp/a.csv"


def test_settings_round_trip_and_survive_a_bad_file(home, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert userdirs.load_settings() == {}
    userdirs.save_setting("theme", "solarized-light")
    userdirs.save_setting("other", 3)
    assert userdirs.load_settings() == {"theme": "solarized-light", "other": 3}
    assert userdirs.config_path() == str(tmp_path / "cfg" / "tputui" / "settings.json")
    (tmp_path / "cfg" / "tputui" / "settings.json").write_text("{not json")
    assert userdirs.load_settings() == {}
