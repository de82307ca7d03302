"""Warnings are not lost to the caches (issue #33 item 7): a damaged riegeli region is warned
about on a second, cached export too (its output replayed, or op stats / trace index from the
cache), and a .pb host whose decoded columns cannot be cached (a full disk) warns as a riegeli
host does."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, PROFILES, ROOT

from tputui.cli import main

DAMAGED = FIXTURES / "riegeli" / "jax_mlp_corrupt"  # one chunk's data flipped
WARNING = "skipped a damaged region (corrupt chunk data"


@pytest.mark.parametrize("tools", [["overview_page", "overview_page"], ["trace_viewer", "trace_viewer"],
                                   ["overview_page", "framework_op_stats"]], ids=lambda t: "-".join(t))
def test_a_damaged_region_is_warned_about_on_cached_runs(capsys, tools):
    said = []
    for tool in tools:
        assert main(["export", str(DAMAGED), "--tool", tool, "-o", os.devnull]) == 0
        said.append(capsys.readouterr().err)
    assert [WARNING in err for err in said] == [True, True], said
    assert all(err.count(WARNING) == 1 for err in said)


def test_without_the_cache_it_is_warned_about_each_time(capsys):
    for _ in range(2):
        assert main(["export", str(DAMAGED), "--tool", "overview_page", "--no-cache", "-o", os.devnull]) == 0
        assert capsys.readouterr().err.count(WARNING) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE stands in for a full disk")
@pytest.mark.parametrize("logdir, said", [(PROFILES / "jax_mlp", "its decoded columns could not be cached"),
                                          (FIXTURES / "riegeli" / "tf_loop_none", "merging in memory")],
                         ids=["pb", "riegeli"])
def test_a_full_cache_disk_is_warned_about(tmp_path, logdir, said):
    """Writes past 20 kB fail in the child (EFBIG, as ENOSPC would): the export still succeeds."""
    code = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))\n"
            "from tputui.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    p = subprocess.run([sys.executable, "-c", code, "export", str(logdir), "--tool", "trace_viewer", "-o", os.devnull],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert f"tputui: warning: {next(logdir.rglob('*.xplane.*'))}: {said}" in p.stderr
