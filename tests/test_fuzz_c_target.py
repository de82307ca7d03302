"""The riegeli / C entry-point fuzz target (scripts/fuzz_c.py): its riegeli mutator keeps files
readable so the merge is reached (absurd times included), every entry point is called without a
finding on random inputs, and a short campaign runs (or skips cleanly without atheris)."""
from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import pytest
from conftest import ROOT

SCRIPT = ROOT / "scripts" / "fuzz_c.py"


def load_target():
    spec = importlib.util.spec_from_file_location("fuzz_c", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_riegeli_seeds_and_mutants_read_or_are_refused_in_one_line():
    target = load_target()
    rng = random.Random(5)
    files = target.riegeli_seeds(rng)
    assert len(files) >= 7
    assert all(target.records_of(f) for f in files)  # the seeds read cleanly
    mutants = [target.mutate_riegeli(rng.choice(files), rng) for _ in range(150)]
    assert sum(target.records_of(m) is not None for m in mutants) > 100  # rewritten with valid hashes
    for data in files + mutants:
        target.read_riegeli_file(data)  # a finding raises


def test_every_c_entry_point_is_called_and_refuses_cleanly():
    pytest.importorskip("atheris")
    target = load_target()
    calls = target._calls()
    modules = {c.__code__.co_freevars for c in calls}
    names = {name for used in modules for name in used}
    for ext in ("_columns", "_derive", "_nesting", "_trace_json", "_highway", "_wire"):
        assert ext in names, ext
    rng = random.Random(3)
    for i in range(400):
        data = bytes([i % len(calls)]) + rng.randbytes(rng.randrange(0, 400))
        target.call_one(data, calls)


def test_a_short_campaign_runs():
    pytest.importorskip("atheris")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(SCRIPT), "--runs", "300"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Done 300 runs" in p.stderr
