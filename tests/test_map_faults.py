"""The map when its workers fail (issue #33): a worker process killed mid-map (its host named,
mapped again here), a Dask cluster whose only worker died (one line, exit 2)."""
from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest
from conftest import FIXTURES

from tputui.analysis import host_map, map_pool
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text

POD = FIXTURES / "pod" / "pod_v4_32"  # 4 TPU hosts


def _run(**kw) -> RunData:
    return RunData(open_logdir(str(POD)).runs[0], **kw)


def test_a_worker_killed_mid_map_is_named_and_its_host_mapped_here(caplog, monkeypatch):
    monkeypatch.setattr(logging.getLogger("tputui"), "propagate", True)  # a CLI run before turned it off
    want = export_text(_run(jobs=1, use_cache=False), "overview_page")
    run = _run(jobs=2, use_cache=False)
    map_pool.start(1)
    pool = map_pool._started
    assert pool is not None
    (worker,) = pool._processes
    os.kill(worker, signal.SIGSTOP)  # it takes its first host and cannot finish it

    def progress(message: str) -> None:
        if not message.endswith(", here)") or not os.path.exists(f"/proc/{worker}"):
            return
        deadline = time.monotonic() + 30
        while not any(w.fn is host_map.map_host_file for w in list(pool._pending_work_items.values())):
            assert time.monotonic() < deadline, "no host was handed to the worker"
            time.sleep(0.01)
        os.kill(worker, signal.SIGKILL)

    with caplog.at_level(logging.WARNING, logger="tputui"):
        host_map.host_op_stats(run, progress=progress)
    died = [r.getMessage() for r in caplog.records if "died" in r.getMessage()]
    assert died == ["op stats: the worker process mapping host v4-w-0 died; mapping it again here"]
    assert export_text(run, "overview_page") == want


def test_dask_with_its_only_worker_dead_is_one_line_and_exit_2(monkeypatch, capsys):
    """A real LocalCluster (scheduler) whose only worker, a process of its own, is killed: the
    export waits DASK_NO_WORKER_SECONDS, then says so in one line and exits 2."""
    distributed = pytest.importorskip("distributed")
    import subprocess
    import sys

    from tputui.cli import main

    monkeypatch.setattr(host_map, "DASK_NO_WORKER_SECONDS", 2.0, raising=False)
    with distributed.LocalCluster(n_workers=0, dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster.scheduler_address) as client:
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
                                   "--no-nanny", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client.wait_for_workers(1, timeout=120)
            worker.kill()
            worker.wait(timeout=30)
            deadline = time.monotonic() + 60
            while client.scheduler_info(n_workers=-1)["workers"]:
                assert time.monotonic() < deadline, "the scheduler still lists the killed worker"
                time.sleep(0.1)
            codes: list[int] = []
            export = threading.Thread(target=lambda: codes.append(main(
                ["export", str(POD), "--tool", "overview_page", "--dask", cluster.scheduler_address,
                 "--no-cache", "-o", os.devnull])), daemon=True)
            export.start()
            export.join(timeout=90)
            assert not export.is_alive(), "the export still waits for a Dask worker"
            (rc,) = codes
        finally:
            if worker.poll() is None:
                worker.kill()
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err == ["tputui: error: no Dask worker answered in 2 s (4 host(s) left to map)"]


def test_a_worker_killed_mid_piece_is_named_and_its_piece_mapped_here(caplog, monkeypatch):
    """A giant host read in pieces (analysis/host_pieces.py): a worker killed while it maps a piece."""
    from conftest import PROFILES

    from tputui.analysis import host_pieces

    monkeypatch.setattr(logging.getLogger("tputui"), "propagate", True)
    monkeypatch.setenv(host_pieces.PIECE_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(host_pieces, "PIECE_TARGET_BYTES", 1)  # every line, every chip a piece

    def tpu_run(**kw) -> RunData:
        return RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0], **kw)

    want = export_text(tpu_run(jobs=1, use_cache=False), "overview_page")
    run = tpu_run(jobs=2, use_cache=False)
    map_pool.start(1)
    pool = map_pool._started
    assert pool is not None
    (worker,) = pool._processes
    os.kill(worker, signal.SIGSTOP)  # it takes its first piece and cannot finish it

    def progress(message: str) -> None:
        if "done" not in message or not os.path.exists(f"/proc/{worker}"):
            return
        if any(host_pieces.map_piece in (w.fn, *w.args[:1]) for w in list(pool._pending_work_items.values())):
            os.kill(worker, signal.SIGKILL)  # it holds a piece it cannot finish

    with caplog.at_level(logging.WARNING, logger="tputui"):
        host_map.host_op_stats(run, progress=progress)
    died = [r.getMessage() for r in caplog.records if "died" in r.getMessage()]
    assert died and all(m == "op stats: the worker process mapping a piece of host t1v-tpu-host died; mapping it again here"
                        for m in died)
    assert export_text(run, "overview_page") == want
