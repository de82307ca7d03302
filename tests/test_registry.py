"""The tool registry: every "module:attr" string resolves, and every tool with a screen opens."""
from __future__ import annotations

import importlib

import pytest
from conftest import make_app, settle

from tputui.screens.base import ToolScreen
from tputui.tools import TOOLS

PATHS = [(t.name, kind, path) for t in TOOLS for kind, path in
         (("analysis", t.analysis), ("screen", t.screen), ("has_data", t.has_data)) if path]


@pytest.mark.parametrize(("tool", "kind", "path"), PATHS, ids=[f"{t}-{k}" for t, k, _ in PATHS])
def test_every_registry_path_resolves(tool, kind, path):
    module, _, attr = path.partition(":")
    assert attr, f"{tool}: {kind} {path!r} is not 'module:attr'"
    target = getattr(importlib.import_module(module), attr)
    if kind == "screen":
        assert isinstance(target, type) and issubclass(target, ToolScreen)
    else:
        assert callable(target)


def test_tool_names_and_keys_are_unique():
    names = [t.name for t in TOOLS]
    keys = [t.key for t in TOOLS if t.key]
    assert len(set(names)) == len(names) and len(set(keys)) == len(keys)


# A profile where each screen tool has data (the pod fixtures for the pod viewer and megascale,
# the GPU fixture for kernel stats, a TPU profile for the HLO tools).
PROFILE_FOR = {"pod_viewer": "pod/pod_v4_32", "megascale_stats": "pod/dcn_2slices", "kernel_stats": "gpu_kernels",
               "memory_profile": "tf_keras", "input_pipeline_analyzer": "tf_keras",
               "perf_counters": "counters/v6e_counters", "utilization_viewer": "counters/v6e_utilization",
               "tf_data_bottleneck_analysis": "tf_loop"}
SCREEN_TOOLS = [t.name for t in TOOLS if t.screen]


@pytest.mark.parametrize("tool", SCREEN_TOOLS)
async def test_every_tool_screen_opens(tool):
    """Opening the tool's screen on a profile with data draws a result: no error, no exception."""
    app = make_app(PROFILE_FOR.get(tool, "tpu_v6e_inference"), tool)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ToolScreen) and screen.tool.name == tool
        assert screen.error is None and screen.result is not None


def _contract(kind: str) -> dict:
    import pathlib
    import tomllib

    doc = tomllib.loads((pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text())
    found = [c for c in doc["tool"]["importlinter"]["contracts"] if c["type"] == kind]
    assert len(found) == 1, kind
    return found[0]


def test_tool_independence_contract_lists_every_tool():
    """pyproject's "no tool imports another tool" names exactly the registry's analysis modules: a
    tool added to TOOLS is under the contract from its first commit."""
    registered = {t.analysis.partition(":")[0] for t in TOOLS}
    assert set(_contract("independence")["modules"]) == registered


def test_sibling_modules_are_acyclic_everywhere():
    """The acyclic_siblings contract covers the whole package (lint-imports checks it in CI)."""
    assert _contract("acyclic_siblings")["ancestors"] == ["tputui"]
