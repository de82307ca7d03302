"""Built without a C compiler, tputui says so once (per installed version), with the fix."""
from __future__ import annotations

import importlib.util

from tputui import cli


def test_says_once_when_the_c_extensions_are_missing(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tputui.data._wire" else real(name, *a))
    assert cli.missing_c_extensions() == ["tputui.data._wire"]
    cli._warn_without_c_extensions()
    first = capsys.readouterr().err
    assert "_wire" in first and "15-20x slower" in first and "pip install --force-reinstall" in first
    cli._warn_without_c_extensions()
    assert capsys.readouterr().err == ""  # once


def test_silent_when_built(capsys):
    if cli.missing_c_extensions():  # this checkout was built without a compiler: nothing to check
        return
    cli._warn_without_c_extensions()
    assert capsys.readouterr().err == ""
