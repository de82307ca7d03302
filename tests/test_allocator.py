"""The one-shot commands' allocator policy (tputui/data/allocator.py)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest
from conftest import PROFILES


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_freed_big_blocks_are_reused_not_faulted_in_again():
    """With the policy, freeing a 64 MB array and allocating another costs no new page faults
    (the heap block is reused); glibc's default unmaps it and faults fresh pages in."""
    probe = """
import resource, sys
import numpy as np
from tputui.data.allocator import keep_freed_memory
np._core.multiarray._set_madvise_hugepage(False)  # count 4 KB pages
if sys.argv[1] == "keep":
    assert keep_freed_memory()
a = np.ones(8 << 20); del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b = np.ones(8 << 20)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
    faults = {}
    for mode in ("keep", "default"):
        out = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        faults[mode] = int(out.stdout)
    assert faults["default"] > 8000  # 64 MB of 4 KB pages
    assert faults["keep"] < faults["default"] / 4


def test_the_console_entry_gives_the_same_export_as_main(tmp_path):
    logdir = str(PROFILES / "tf_keras")
    outs = []
    for fn in ("entry", "main"):
        code = (f"import sys; from tputui.cli import {fn}; "
                f"sys.argv = ['tputui', 'export', {logdir!r}, '--tool', 'overview_page']; "
                f"sys.exit({fn}() if '{fn}' == 'entry' else {fn}(sys.argv[1:]))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / fn)})
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout)
    assert json.loads(outs[0]) and outs[0] == outs[1]


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_glibc_is_found_without_running_ldconfig(monkeypatch):
    """ctypes.util.find_library runs `ldconfig -p` in a subprocess (~45 ms of every export):
    glibc's soname is tried first."""
    import ctypes.util

    from tputui.data.allocator import keep_freed_memory

    def no_subprocess(name):
        raise AssertionError(f"find_library({name!r}) called")

    monkeypatch.setattr(ctypes.util, "find_library", no_subprocess)
    assert keep_freed_memory()
