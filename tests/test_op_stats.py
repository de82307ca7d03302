"""The per-host op-stats map and its reduce: computed once, cached on disk, the same result in this
process, in worker processes and on a real local Dask cluster."""
from __future__ import annotations

import json
import os
import shutil
import threading

import pytest
from conftest import FIXTURES, PROFILES

from tputui.analysis import host_map, map_pool, op_stats, op_stats_format
from tputui.data import derived_cache
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text

POD = FIXTURES / "pod" / "pod_v4_32"  # 4 TPU hosts, 32 cores, some steps missing on some hosts
OP_TOOLS = ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "op_profile", "hlo_stats",
            "roofline_model", "pod_viewer"]


def _run(root=POD, **kw) -> RunData:
    return RunData(open_logdir(str(root)).runs[0], **kw)


def _exports(run: RunData) -> dict[str, str]:
    return {t: export_text(run, t) for t in OP_TOOLS}


@pytest.fixture
def no_map(monkeypatch):
    """Fail if anything runs the map in this process (it must come from a memo or the cache)."""
    def refuse(*_a, **_k):
        raise AssertionError("the op-stats map ran again")
    monkeypatch.setattr(op_stats, "map_host", refuse)


def test_in_process_and_worker_processes_give_identical_results():
    local = _exports(_run(jobs=1, use_cache=False))
    parallel = _exports(_run(jobs=2, use_cache=False))
    assert parallel == local


def test_every_tool_reads_the_same_memo(monkeypatch):
    run = _run(jobs=1, use_cache=False)
    calls = []
    real = op_stats.map_host
    monkeypatch.setattr(op_stats, "map_host", lambda fr, h: calls.append(h) or real(fr, h))
    _exports(run)
    assert sorted(calls) == sorted(run.hosts)  # once per host for seven tools


def test_a_second_open_reads_the_disk_cache(monkeypatch):
    first = _exports(_run(jobs=1))
    calls = []
    monkeypatch.setattr(op_stats, "map_host", lambda *a: calls.append(a))
    assert _exports(_run(jobs=1)) == first
    assert not calls


def test_a_changed_file_or_format_is_recomputed(tmp_path, monkeypatch):
    root = tmp_path / "logs"
    shutil.copytree(PROFILES / "jax_mlp", root)
    before = export_text(_run(root, jobs=1), "overview_page")
    host = _run(root).run.hosts[0]
    assert derived_cache.load(host, host_map.KIND, op_stats_format.FORMAT_VERSION) is not None
    os.utime(host.path, (1, 1))  # same bytes, new mtime: a new key
    calls = []
    real = op_stats.map_host
    monkeypatch.setattr(op_stats, "map_host", lambda fr, h: calls.append(h) or real(fr, h))
    assert export_text(_run(root, jobs=1), "overview_page") == before
    assert calls == ["vm"]
    monkeypatch.setattr(op_stats_format, "FORMAT_VERSION", op_stats_format.FORMAT_VERSION + 1)
    export_text(_run(root, jobs=1), "overview_page")
    assert calls == ["vm", "vm"]


def test_a_damaged_cache_entry_is_recomputed():
    run = _run(PROFILES / "tf_loop", jobs=1)
    want = export_text(run, "overview_page")
    hf = run.run.hosts[0]
    entry = derived_cache.entry_path(hf, host_map.KIND, op_stats_format.FORMAT_VERSION)
    with open(os.path.join(entry, "tree.json"), "r+b") as f:  # same size, other bytes
        f.write(b"{garbage")
    assert derived_cache.load(hf, host_map.KIND, op_stats_format.FORMAT_VERSION) is None
    assert not os.path.exists(entry)
    assert export_text(_run(PROFILES / "tf_loop", jobs=1), "overview_page") == want


def test_no_cache_writes_nothing(tmp_path):
    _exports(_run(use_cache=False, jobs=1))
    frames = os.path.join(os.environ["XDG_CACHE_HOME"], "tputui", "frames")
    assert not os.path.isdir(frames) or not [e for e in os.listdir(frames) if e.endswith(host_map.KIND)]


def test_per_host_progress_is_reported():
    said = []
    host_map.host_op_stats(_run(jobs=2, use_cache=False), progress=said.append)
    assert said[0] == "op stats: 4 hosts in 2 processes"
    hosts = sorted(s.split("(")[1].split(",")[0].rstrip(")") for s in said[1:])
    assert hosts == ["v4-w-0", "v4-w-1", "v4-w-2", "v4-w-3"]
    assert any(s.endswith(", here)") for s in said[1:])  # this process took hosts too
    assert said[-1].startswith("op stats: 4/4 hosts done")


def test_the_intermediate_is_small_and_holds_no_frame():
    import pickle

    stats = host_map.host_op_stats(_run(PROFILES / "tpu_v6e_inference", use_cache=False))[0]
    size = len(pickle.dumps(stats))
    assert size < os.path.getsize(_run(PROFILES / "tpu_v6e_inference").run.hosts[0].path)
    assert "XSpaceFrame" not in repr(type(v) for v in vars(stats).values())


def test_dask_cluster_gives_the_local_result():
    distributed = pytest.importorskip("distributed")
    local = _exports(_run(jobs=1, use_cache=False))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster:
        said = []
        run = _run(dask=cluster.scheduler_address, use_cache=False)
        host_map.host_op_stats(run, progress=said.append)
        assert said[0].startswith(f"op stats: 4 hosts on Dask at {cluster.scheduler_address} (2 workers)")
        assert _exports(run) == local


def test_an_unreachable_dask_scheduler_is_one_line():
    pytest.importorskip("distributed")
    from helpers.live import closed_port

    run = _run(dask=f"tcp://127.0.0.1:{closed_port()}", use_cache=False)
    with pytest.raises(host_map.ScaleOutError, match="cannot reach the Dask scheduler"):
        host_map.host_op_stats(run)


def test_lanes_follow_jobs_hosts_and_size():
    files = _run().run.hosts  # 4 small hosts (well under map_pool.PARALLEL_MIN_BYTES)
    assert map_pool.lanes(files, None) == 1  # by default small runs stay in this process
    assert map_pool.lanes(files, 2) == 2
    assert map_pool.lanes(files, 16) == len(files)  # never more lanes than hosts
    assert map_pool.lanes(files[:1], 4) == 1


def test_uncached_lists_only_hosts_without_op_stats(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    run = _run(jobs=1)
    assert map_pool.uncached(run.run.hosts) == run.run.hosts
    host_map.host_op_stats(run, run.hosts[0])
    assert map_pool.uncached(run.run.hosts) == run.run.hosts[1:]


def test_export_starts_the_workers_before_the_map_and_the_map_uses_them(tmp_path, monkeypatch):
    from tputui import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    want = export_text(_run(jobs=1, use_cache=False), "overview_page")
    events, taken = [], []
    real_start, real_take, real_map = map_pool.start, map_pool.take, host_map._compute
    monkeypatch.setattr(map_pool, "start", lambda n: events.append(("start", n)) or real_start(n))
    monkeypatch.setattr(map_pool, "take", lambda n: taken.append((map_pool._started, real_take(n))) or taken[-1][1])
    monkeypatch.setattr(host_map, "_compute", lambda *a: events.append(("map", len(a[1]))) or real_map(*a))
    out = tmp_path / "o.json"
    assert cli.main(["export", str(POD), "--tool", "overview_page", "--jobs", "2", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(want)
    assert events == [("start", 1), ("map", 4)]  # one worker, started before the map began
    assert len(taken) == 1 and taken[0][0] is taken[0][1]  # the map ran on that started pool
    assert taken[0][1]._shutdown_thread  # and shut it down when done
    # Another op tool on the same run: every host's op stats are cached, so no worker starts.
    assert cli.main(["export", str(POD), "--tool", "pod_viewer", "--jobs", "2", "-o", str(out)]) == 0
    assert events == [("start", 1), ("map", 4)] and len(taken) == 1


def test_a_multi_host_map_caches_op_stats_not_the_small_hosts_frames(tmp_path, monkeypatch):
    from tputui.data.cache import has_entry

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    run = _run(jobs=1)
    assert all(hf.size < host_map.FRAME_CACHE_MIN_BYTES for hf in run.run.hosts)
    want = export_text(run, "overview_page")
    _join_cache_writes()
    assert not map_pool.uncached(run.run.hosts)  # every host's op stats are cached
    assert not any(has_entry(hf) for hf in run.run.hosts)  # no host's whole frame is
    assert export_text(_run(jobs=1), "overview_page") == want  # read back from those entries
    # A host whose frame is asked for by itself (the trace viewer's) is decoded and cached as ever.
    _run(jobs=1).frame(run.hosts[0])
    _join_cache_writes()
    assert [has_entry(hf) for hf in run.run.hosts] == [True, False, False, False]


def _join_cache_writes() -> None:
    for t in threading.enumerate():
        if t.name == "tputui-cache-write":
            t.join()  # entries are written beside the caller


def test_hlo_modules_read_only_hosts_that_bring_new_programs(monkeypatch):
    from tputui.analysis import hlo_modules

    want = [(m.name, m.host, m.data) for m in hlo_modules.hlo_modules(_run(use_cache=False))]
    run = _run(jobs=1, use_cache=False)
    stats = host_map.host_op_stats(run)
    assert stats[0].hlo_module_names and len({s.hlo_module_names for s in stats}) == 1
    read = []
    real = RunData.frame
    monkeypatch.setattr(RunData, "frame", lambda self, h=None, planes=None, **kw: read.append(h) or real(self, h, planes, **kw))
    got = [(m.name, m.host, m.data) for m in hlo_modules.hlo_modules(run)]
    assert got == want
    assert read == [run.hosts[0]]  # the other hosts run the same programs: not read again


def test_a_big_single_hosts_frame_is_not_kept_after_its_map(tmp_path, monkeypatch):
    """A one-host run's frame stays for the next tool, except a big .xplane.pb's that the cache
    takes: the app would otherwise hold ~4x the file through the overview (1.3 GB at x400); the
    next tool maps the cache entry and gives the same output. A frame decoded before the map
    (an export's prefetch) is kept."""
    from tputui.data.cache import has_entry

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tpu = PROFILES / "tpu_v6e_inference"
    small = _run(tpu)
    want = {t: export_text(small, t) for t in ("overview_page", "hlo_stats", "summary")}
    assert small.has_frame(small.hosts[0])  # under FRAME_CACHE_MIN_BYTES: kept, as before
    _join_cache_writes()
    shutil.rmtree(tmp_path / "tputui", ignore_errors=True)

    monkeypatch.setattr(host_map, "FRAME_CACHE_MIN_BYTES", 0)  # every host file is "big"
    run = _run(tpu)
    assert export_text(run, "overview_page") == want["overview_page"]
    assert not run.has_frame(run.hosts[0])
    _join_cache_writes()
    assert has_entry(run.run.hosts[0])
    assert export_text(run, "hlo_stats") == want["hlo_stats"]  # from the op stats: no frame
    assert not run.has_frame(run.hosts[0])
    assert export_text(run, "summary") == want["summary"]  # a frame tool: the mapped entry

    prefetched = _run(tpu, use_cache=False)
    prefetched.frame(prefetched.hosts[0])
    assert export_text(prefetched, "overview_page") == want["overview_page"]
    assert prefetched.has_frame(prefetched.hosts[0])
