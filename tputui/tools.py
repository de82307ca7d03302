"""The registry of tools: one entry per XProf tool, imported lazily.

Each tool is an analysis function `analyze(run: RunData, host: str | None, **options)`
returning a result object with `to_json() -> dict` and `tables() -> dict[str, DataFrame]`
(see tputui/analysis/result.py), plus an optional Textual screen class that draws it.
A tool added here shows up in the app's tool picker, `tputui export --tool` and `--list`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    name: str  # XProf's tool id, used by --tool and in export file names
    title: str  # what the tool picker shows
    analysis: str  # "module:function" -> analyze(run, host, **options)
    screen: str | None = None  # "module:Class" (a ToolScreen subclass)
    has_data: str | None = None  # "module:function" -> bool(run); None: always listed
    key: str | None = None  # optional shortcut key in the app

    def analyze_fn(self):
        return _load(self.analysis)

    def screen_class(self):
        return _load(self.screen) if self.screen else None

    def available(self, run) -> bool:
        if self.has_data is None:
            return True
        try:
            return bool(_load(self.has_data)(run))
        except Exception:  # a tool that cannot tell is listed; opening it says why
            return True


def _load(path: str):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


# Order = the tool picker's order (XProf's order where it has one).
TOOLS: list[Tool] = [
    Tool("summary", "Profile summary", "tputui.analysis.summary:analyze",
         "tputui.screens.summary:SummaryScreen"),
    Tool("trace_viewer", "Trace viewer", "tputui.analysis.trace_export:analyze",
         None),
    Tool("memory_profile", "Memory profile", "tputui.analysis.memory_profile:analyze",
         None, has_data="tputui.analysis.memory_profile:has_data"),
    Tool("memory_viewer", "Memory viewer", "tputui.analysis.memory_viewer:analyze",
         None, has_data="tputui.analysis.memory_viewer:has_data"),
]


def get_tool(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise KeyError(name)


def tool_names() -> list[str]:
    return [t.name for t in TOOLS]
