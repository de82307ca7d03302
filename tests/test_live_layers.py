"""Issue 13: tputui/live is below the UI. No module there imports Textual, widgets, screens or an
app, not even inside a function (the monitor's pane used to be started from live/monitor.py)."""
from __future__ import annotations

import ast

from conftest import ROOT

UI = ("textual", "rich", "tputui.widgets", "tputui.screens", "tputui.app", "tputui.monitor_app", "tputui.cli")


def imported_modules(path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def test_live_never_imports_the_ui():
    files = sorted((ROOT / "tputui" / "live").glob("*.py"))
    assert len(files) >= 8
    bad = [(f.name, m) for f in files for m in imported_modules(f) if m == "textual" or m.startswith(UI)]
    assert bad == []


def test_the_monitor_pane_is_started_from_the_command_line():
    cli = imported_modules(ROOT / "tputui" / "cli.py")
    assert "tputui.monitor_app" in cli and "tputui.live.feed" in cli
