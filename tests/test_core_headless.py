"""The core (data, analysis, live, export) never imports Textual: scripts and CI use it headless."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

BLOCK_TEXTUAL = r"""
import importlib, pkgutil, sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "textual" or name.startswith("textual."):
            raise ImportError(f"the headless core imported {name}")
        return None

sys.meta_path.insert(0, Block())
import tputui
names = ["tputui.export", "tputui.tools", "tputui.format", "tputui.cli"]
for pkg in ("tputui.data", "tputui.analysis", "tputui.live"):
    mod = importlib.import_module(pkg)
    names += [m.name for m in pkgutil.walk_packages(mod.__path__, pkg + ".")]
for name in names:
    try:
        importlib.import_module(name)
    except ImportError as e:
        if "headless core imported" in str(e):
            raise SystemExit(f"{name}: {e}")
        # An optional extra that is not installed (e.g. gcsfs) is not our concern here.
print(len(names))
"""


def test_core_modules_import_without_textual():
    proc = subprocess.run([sys.executable, "-c", BLOCK_TEXTUAL], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert int(proc.stdout.strip()) >= 10
