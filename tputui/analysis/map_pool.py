"""The worker processes of the per-host map (host_map), and when a run gets them.

A worker spends ~0.4 s starting Python and importing the analysis before its first host. Started
when the map begins, that time is lost from the second core; so `tputui export` starts them
(`start`) as soon as it knows the run and the tool, and they import while this process imports
the tool itself. host_map then `take`s the started pool (or starts one). This module imports no
analysis: it must be cheap to import before them.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import Pipe, get_context, resource_tracker
from multiprocessing.connection import Connection

from tputui.analysis import op_stats_format
from tputui.analysis.op_stats_format import KIND
from tputui.data import derived_cache
from tputui.data.allocator import keep_freed_memory
from tputui.data.runs import HostFile

PARALLEL_MIN_BYTES = 32 << 20  # default --jobs: worker processes only when the hosts add up to this

_started: ProcessPoolExecutor | None = None
_started_workers = 0
# The write end of a pipe only this process holds; each worker watches the read end: when this
# process ends, by any signal, the kernel closes it and the workers see the end (see _init_worker).
_lifeline: tuple[int, Connection, Connection] | None = None
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def lanes(files: list[HostFile], jobs: int | None) -> int:
    """How many hosts are mapped at once: `jobs` (None: one per core), at most one per host;
    by default 1 below PARALLEL_MIN_BYTES of host files, where starting workers costs more than
    it saves. The lanes are this process plus lanes - 1 workers."""
    n = min(jobs or default_jobs(), len(files))
    if n > 1 and not jobs and sum(hf.size for hf in files) < PARALLEL_MIN_BYTES:
        return 1
    return max(n, 1)


def uncached(files: list[HostFile]) -> list[HostFile]:
    """The host files whose op stats are not in the cache (an existence check, nothing read)."""
    return [hf for hf in files if not derived_cache.has(hf, KIND, op_stats_format.FORMAT_VERSION)]


def start(workers: int) -> None:
    """Start `workers` worker processes now (they begin importing the map); see the module doc."""
    global _started, _started_workers
    if _started is not None or workers < 1:
        return
    _started, _started_workers = _new_pool(workers), workers


def take(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` processes: the one start() began if it has that many, else a new one."""
    global _started, _started_workers
    pool, _started = _started, None
    if pool is not None and _started_workers == workers:
        return pool
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    return _new_pool(workers)


def _new_pool(workers: int) -> ProcessPoolExecutor:
    _start_resource_tracker()
    # Linux sends a parent-death signal when the *thread* that started a process ends: asked for
    # only when the main thread starts the pool (tputui export), which lasts as long as we do.
    on_main = threading.current_thread() is threading.main_thread()
    # spawn, not fork: the parent may already run Polars' and Textual's threads.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_init_worker,
                               initargs=(os.getpid(), _lifeline_end(), on_main))
    for _ in range(workers):  # every worker started now, from this thread (submit spawns them)
        pool.submit(os.getpid)
    return pool


def _lifeline_end() -> Connection:
    """The read end of this process's lifeline pipe (made once per process)."""
    global _lifeline
    if _lifeline is None or _lifeline[0] != os.getpid():
        reader, writer = Pipe(duplex=False)
        _lifeline = (os.getpid(), reader, writer)
    return _lifeline[1]


def _die_with_parent(parent: int, lifeline: Connection, signal_on_death: bool) -> None:
    """End this worker when the process that started it ends, however it ends (a SIGKILL runs
    no handler there): an orphaned worker would hold its memory and the parent's stdout (a
    `tputui export | cat` that never ends). Two ways, as the parent may die at any moment:
    Linux's parent-death signal (immediate, even in C code holding the GIL), and a thread that
    waits on the lifeline pipe, whose write end closes with the parent (any platform, and a pool
    started from a thread that may end first). The parent may have died before either was set
    up: then it is no longer our parent."""
    if signal_on_death and sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl: the lifeline still ends us

    def watch() -> None:
        try:
            lifeline.recv_bytes()  # nothing is ever sent: returns only at the end of the pipe
        except (EOFError, OSError):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="tputui-lifeline", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def _init_worker(parent: int, lifeline: Connection, signal_on_death: bool) -> None:
    """First, tie this worker's life to its parent's. Worker processes print nothing (their
    errors come back as exceptions): a stray warning must not land on the terminal the app draws
    on. Then the map's modules are imported, so a worker started early is ready when its first
    host comes (the map, not host_map: host_map imports this module)."""
    _die_with_parent(parent, lifeline, signal_on_death)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    # At exit, skip the interpreter's teardown (~0.04 s of freeing numpy's and Polars' modules):
    # `tputui export` waits for its workers to end before it can. Nothing is left to finish by
    # then: the pool's worker loop has returned and joined every thread (a frame cache write too).
    atexit.register(os._exit, 0)
    keep_freed_memory()  # a worker lives for one run's map (see data/allocator.py)
    from tputui.data import xspace
    xspace.decode_on_one_thread()  # the lanes fill the cores already
    import tputui.analysis.op_stats  # noqa: F401  the map's modules (host_map itself imports this one)


def _start_resource_tracker() -> None:
    """multiprocessing's resource tracker passes our stderr's fd to its process; under the app,
    stderr is a capture with no real fd, so start it against the process's original stderr."""
    try:
        if sys.stderr.fileno() >= 0:
            return
    except (OSError, ValueError, AttributeError):
        pass
    saved, sys.stderr = sys.stderr, sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = saved
