"""The caches of computed results are keyed by the code that computed them (issue #33, item 8): an
edited checkout with the same version and format numbers computes again."""
from __future__ import annotations

from conftest import PROFILES

from tputui.analysis import host_map, op_stats_format
from tputui.data import code_stamp, derived_cache
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData


def test_op_stats_cached_by_one_build_are_not_read_by_another(monkeypatch):
    run = RunData(open_logdir(str(PROFILES / "jax_mlp")).runs[0])
    hf = run.run.hosts[0]
    host_map.host_op_stats(run)
    kind, version = op_stats_format.KIND, op_stats_format.FORMAT_VERSION
    assert derived_cache.has(hf, kind, version) and derived_cache.load(hf, kind, version) is not None
    monkeypatch.setattr(derived_cache, "code_stamp", lambda: "another build")
    assert not derived_cache.has(hf, kind, version) and derived_cache.load(hf, kind, version) is None


def test_the_stamp_moves_with_the_code(tmp_path, monkeypatch):
    pkg = tmp_path / "tputui"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(code_stamp, "_PACKAGE", str(pkg))
    code_stamp.code_stamp.cache_clear()
    first = code_stamp.code_stamp()
    code_stamp.code_stamp.cache_clear()
    import os

    os.utime(pkg / "a.py", (1e9, 2e9))  # edited later
    assert code_stamp.code_stamp() != first
    code_stamp.code_stamp.cache_clear()
