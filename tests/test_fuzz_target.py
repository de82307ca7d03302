"""The fuzz target (scripts/fuzz_wire.py): its property holds on the seed corpus and on mutants,
a bounded libFuzzer campaign runs when atheris is installed, and it skips cleanly when not."""
from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import pytest
from conftest import PROFILES, ROOT
from helpers.xspace_corpus import mutate, seeds

SCRIPT = ROOT / "scripts" / "fuzz_wire.py"


def load_target():
    spec = importlib.util.spec_from_file_location("fuzz_wire", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_property_holds_on_seeds_and_mutants():
    target = load_target()
    rng = random.Random(7)
    inputs = seeds(PROFILES)
    assert len(inputs) >= 7  # at least one seed per fixture profile
    inputs += [mutate(rng.choice(inputs), rng) for _ in range(300)]
    accepted = 0
    for data in inputs:
        target.check_one(data)  # raises AssertionError on a finding
        accepted += all(r is not None for r in target.decode_both(data))
    assert accepted > 50


def run_script(*args, env_extra=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)


def test_a_bounded_campaign_runs_and_finds_nothing(tmp_path):
    pytest.importorskip("atheris")
    proc = run_script(str(SCRIPT), "--runs", "300", env_extra={"XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "C decoder with comparison tracing" in proc.stdout
    assert "Done 300 runs" in proc.stderr
    assert not list((tmp_path / "tputui" / "fuzz-findings").iterdir())


def test_without_atheris_it_says_so_and_exits_0():
    code = ("import runpy, sys; sys.modules['atheris'] = None; sys.argv = ['fuzz_wire.py', '--seconds', '60']; "
            f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')")
    proc = run_script("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fuzz_wire: atheris is not installed (pip install 'tputui[fuzz]'); fuzz campaign skipped\n"
