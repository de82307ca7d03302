"""Runs the per-host map (op_stats.map_host) for a run: once per host, cached, in parallel.

For each host, in order: the run's memo (this process), the on-disk cache (data/derived_cache.py:
keyed like the decoded frame plus the op-stats format version and tputui's version), and only then
the map itself. Hosts still to compute run

- on a Dask cluster when one is named (`--dask ADDRESS` or TPUTUI_DASK): each worker reads its
  host file itself (local path or gs://) and only the small HostOpStats come back;
- else in worker processes when there are several (`--jobs N`; by default one per core once the
  host files add up to 32 MB, below which starting workers costs more than it saves);
- else here, in this process.

Frames decoded for the map in this process are dropped afterwards when the run has several
hosts, so memory follows the largest host, not their sum.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

from tputui.analysis import host_pieces, map_pool, op_stats, op_stats_format
from tputui.analysis.event_grouping import HostGrouping
from tputui.analysis.hlo_ops import DeviceOps, combine_device_ops, combine_perf
from tputui.analysis.op_stats import HostOpStats, OpStats
from tputui.analysis.op_stats_format import KIND
from tputui.data import decode_notes, derived_cache, xspace
from tputui.data.cache import load_frame
from tputui.data.heap import release_free_memory
from tputui.data.progress import Progress, Step, current_progress
from tputui.data.raw_subset import release_pages
from tputui.data.run_data import RunData
from tputui.data.run_memo import MemoKind
from tputui.data.runs import HostFile
from tputui.data.storage import is_remote
from tputui.errors import UserError

log = logging.getLogger("tputui")
DASK_ENV = "TPUTUI_DASK"
# With hosts still to map, how long the Dask cluster may have no worker at all (the only one died,
# or none ever joined) before the map gives up: a worker that is there but slow is waited for.
DASK_NO_WORKER_SECONDS = 60.0
_DASK_POLL_SECONDS = 1.0
# A host file mapped on its own (a multi-host run) gets its decoded frame cached from this size:
# below it, decoding again (~0.15 s for 20 MB) is cheaper than writing ~2.4x its size to disk.
FRAME_CACHE_MIN_BYTES = 64 << 20


# What this module keeps in RunData.memo (per host, or per host choice: None = every host).
HOST_OP_STATS: MemoKind[HostOpStats] = MemoKind(KIND)
RUN_OP_STATS: MemoKind[OpStats] = MemoKind("run_op_stats")
RUN_DEVICE_OPS: MemoKind[DeviceOps] = MemoKind("run_device_ops")


class ScaleOutError(UserError):
    """The Dask cluster cannot be reached or failed: one line for the user."""


def map_host_file(hf: HostFile, use_cache: bool = True) -> HostOpStats:
    """The map for one host file, as a worker process or a Dask worker runs it. The frame of a
    small host file is not written to the cache: decoding it again when a tool needs it (the
    trace viewer of that host) costs less than writing every host's frame during the map."""
    try:
        if host_pieces.read_merged_in_pieces(hf, use_cache):
            return _merged_in_pieces(hf)
        pieces = host_pieces.plan(hf)
        if pieces:
            return host_pieces.map_in_pieces(hf, pieces)
        # full_check: the map reads every column, so a cached entry's every byte is checked first
        frame = load_frame(hf, use_cache=use_cache, write_cache=hf.size >= FRAME_CACHE_MIN_BYTES, full_check=True)
    except UserError as e:
        raise HostUnreadable(hf.host, str(e)) from None
    return op_stats.map_host(frame, hf.host)


def _merged_in_pieces(hf: HostFile) -> HostOpStats:
    """A giant riegeli host: merged once into the cache (its columns on disk, mapped), then read in
    pieces cut from them (analysis/host_pieces.py)."""
    frame = load_frame(hf, use_cache=True, full_check=True)  # every column is read: checked in full
    pieces = host_pieces.plan_merged(frame)
    release_pages(frame.raw)  # what the load's checks and the plan read
    if not pieces:
        return op_stats.map_host(frame, hf.host)
    return host_pieces.map_merged_in_pieces(hf, frame, pieces)


def host_op_stats(run: RunData, host: str | None = None, progress: Progress | None = None) -> list[HostOpStats]:
    """The op stats of one host, or of every host of the run (in host order)."""
    hosts = [host] if host else run.require_hosts()
    found = known_op_stats(run, hosts)
    todo = [h for h in hosts if h not in found]
    if todo:
        # One map at a time per run: a second asker (the tool picker while the overview loads)
        # waits for the first one's results instead of decoding the same hosts again.
        with run.memo.get_or_make(_MAP_LOCK, None, threading.Lock):
            found.update(known_op_stats(run, todo))
            todo = [h for h in todo if h not in found]
            if todo:
                report = progress or current_progress()
                for h, stats in _unreadable_noted(run, _compute(run, todo, report)):
                    found[h] = run.memo.put(HOST_OP_STATS, h, stats)
                    if run.use_cache:
                        derived_cache.store(run.host_file(h), KIND, op_stats_format.FORMAT_VERSION, stats)
                        decode_notes.replay(run.host_file(h))  # a worker's warnings went nowhere
    return [found[h] for h in hosts]


_MAP_LOCK: MemoKind[threading.Lock] = MemoKind("op stats map lock")


def known_op_stats(run: RunData, hosts: list[str], from_disk: bool = True) -> dict[str, HostOpStats]:
    """The op stats of `hosts` already computed: in this process, or (from_disk) in the cache.
    Never decodes a host."""
    found: dict[str, HostOpStats] = {}
    for h in hosts:
        hit = run.memo.get(HOST_OP_STATS, h)
        if hit is not None:
            found[h] = hit
            continue
        if not (from_disk and run.use_cache):
            continue
        cached = derived_cache.load(run.host_file(h), KIND, op_stats_format.FORMAT_VERSION)
        if isinstance(cached, HostOpStats):
            found[h] = run.memo.put(HOST_OP_STATS, h, cached)
            decode_notes.replay(run.host_file(h))  # no decode here: say what the decode warned about
    return found


def host_facts(run: RunData, host: str | None = None) -> list[frozenset[str]]:
    """Each host's tool facts (tool_facts.py), from its op stats."""
    return [h.tool_facts for h in host_op_stats(run, host)]


def known_grouping(run: RunData, host: str | None = None) -> HostGrouping | None:
    """The host's step groups from op stats already computed (this process, or the cache), else
    None: the trace viewer then groups the frame itself, once (event_grouping.host_grouping)."""
    hf = run.host_file(host)
    stats = run.memo.get(HOST_OP_STATS, hf.host)
    if stats is None and run.use_cache:
        cached = derived_cache.load(hf, KIND, op_stats_format.FORMAT_VERSION)
        if isinstance(cached, HostOpStats):
            stats = run.memo.put(HOST_OP_STATS, hf.host, cached)
    return stats.grouping if stats is not None else None


def _unreadable_noted(run: RunData, results):
    """A host file that cannot be read, wherever its map ran, is recorded in `run.unreadable` (as
    RunData.frame does) before its one-line error goes up: all-hosts tools then leave it out."""
    try:
        yield from results
    except HostUnreadable as e:
        run.unreadable[e.host] = e.message
        raise UserError(e.message) from None


class HostUnreadable(Exception):
    """A host's file failed to read or decode during the map (carries which host)."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(host, message)
        self.host, self.message = host, message


def run_op_stats(run: RunData, host: str | None = None, progress: Progress | None = None) -> OpStats:
    """The hosts' op stats combined (XProf's ALL_HOSTS when host is None), once per run and host
    choice: the overview, its advice and the performance guide read the same combine (its readers
    do not change it)."""
    return run.memo.get_or_make(RUN_OP_STATS, host, lambda: op_stats.combine(host_op_stats(run, host, progress)))


def _compute(run: RunData, hosts: list[str], report: Progress | None):
    files = [run.host_file(h) for h in hosts]
    address = run.dask or os.environ.get(DASK_ENV)
    pieces = None
    if len(files) == 1 and not run.has_frame(files[0].host):
        try:
            pieces = host_pieces.plan(files[0])
        except UserError as e:
            raise HostUnreadable(files[0].host, str(e)) from None
    if pieces and address:  # a giant host: its pieces go where a multi-host run's hosts go
        yield files[0].host, _pieces_on_dask(address, files[0], pieces, report)
        return
    if address:
        yield from _on_dask(address, files, run.use_cache, report)
        return
    if pieces:
        yield files[0].host, _pieces_in_lanes(files[0], pieces, run.jobs, report)
        return
    if len(files) == 1 and not run.has_frame(files[0].host) and host_pieces.read_merged_in_pieces(files[0], run.use_cache):
        if report:
            report(f"op stats: {files[0].host} in pieces of its merged columns")
        try:
            yield files[0].host, _merged_in_pieces(files[0])
        except UserError as e:
            raise HostUnreadable(files[0].host, str(e)) from None
        return
    jobs = map_pool.lanes(files, run.jobs)
    if jobs > 1:
        yield from _in_processes(files, jobs, run.use_cache, report)
        return
    keep = len(run.hosts) == 1  # a single host's frame serves the other tools too
    for i, hf in enumerate(files):
        if report:
            report(Step(f"op stats: host {i + 1}/{len(files)} ({hf.host})", i, len(files)))
        if keep or run.has_frame(hf.host):
            try:  # the map reads it all: checked in full
                frame = run.frame(hf.host, full_check=True, keep=_keep_frame(run, hf))
            except UserError as e:
                raise HostUnreadable(hf.host, str(e)) from None
            if report:  # decoded: what is left is the op stats themselves (seconds at 100M events)
                report(Step(f"op stats: host {i + 1}/{len(files)} ({hf.host}, {frame.num_events:,} events)", i, len(files)))
            yield hf.host, op_stats.map_host(frame, hf.host)
        else:
            yield hf.host, map_host_file(hf, run.use_cache)


def _keep_frame(run: RunData, hf: HostFile) -> bool:
    """Whether the run keeps a single host's frame after its map. Not a big local .xplane.pb's
    that the cache takes (its entry is written beside the map): held, its columns and what the
    map derived from them stay in anonymous memory (~4x the file: 1.3 GB for a 325 MB host, all
    through the overview); the next tool that needs the frame maps the cache entry instead
    (file pages, read as touched). A frame decoded before (an export's prefetch) stays."""
    big = hf.size >= FRAME_CACHE_MIN_BYTES and hf.format != "riegeli" and not is_remote(hf.path)
    return run.has_frame(hf.host) or not (run.use_cache and big)


def _pieces_in_lanes(hf: HostFile, pieces: list[host_pieces.Piece], jobs: int | None,
                     report: Progress | None) -> HostOpStats:
    """One giant host in pieces (analysis/host_pieces.py): the host piece here, then the device
    pieces over the lanes, workers taking from the front and this process from the back."""
    lanes = min(jobs or map_pool.default_jobs(), len(pieces))
    if report:
        report(f"op stats: {hf.host} in {len(pieces)} pieces ({hf.size / 1e6:,.0f} MB), {lanes} at a time")
    done = 0
    pool = map_pool.take(lanes - 1) if lanes > 1 else None  # for every stage of the host's pieces

    def run_parts(todo: list[host_pieces.Piece], launches: dict | None, grouping: bool):
        nonlocal done
        died = f"op stats: the worker process mapping a piece of host {hf.host} died; mapping it again here"
        for part in pieces_in_lanes(pool, lanes, todo, host_pieces.map_piece, (hf,), (launches, grouping), died):
            done += 1
            if report:
                report(Step(f"op stats: {hf.host}: piece {done}/{len(pieces)} done", done, len(pieces)))
            yield part

    try:
        return host_pieces.map_in_pieces(hf, pieces, run_parts)
    except UserError as e:
        raise HostUnreadable(hf.host, str(e)) from None
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def pieces_in_lanes(pool, lanes: int, todo: list[host_pieces.Piece], work: Callable, before: tuple, after: tuple,
                    died: str, estimate: Callable[[host_pieces.Piece], int] = host_pieces.memory_estimate,
                    here: bool = True) -> Iterator:
    """work(*before, piece, *after) for every piece, in any order: `lanes - 1` workers of `pool`
    take pieces from the front and this process from the back (here=False: `lanes` workers, this
    process only waits: it holds an app), within host_pieces' memory budget (one piece at least
    is always in flight; `estimate`: a piece's peak memory). A piece whose worker died is done
    again here, after the warning `died`."""
    workers = lanes - 1 if here else lanes
    pending = collections.deque(todo)
    in_flight: dict[Future, host_pieces.Piece] = {}  # a worker's future -> its piece
    budget = host_pieces.memory_budget()
    broken = False

    def fits(piece: host_pieces.Piece) -> bool:
        held = sum(estimate(p) for p in in_flight.values())
        return not in_flight or held + estimate(piece) <= budget

    def hand_out() -> None:  # a free worker takes the next piece from the front, memory allowing
        nonlocal broken
        # The last piece is left for this process (when it takes pieces), which would otherwise wait.
        while (pool is not None and not broken and len(pending) > (1 if here else 0) and len(in_flight) < workers
               and fits(pending[0])):
            try:
                fut = pool.submit(_trimmed, work, *before, pending[0], *after)
            except BrokenProcessPool:  # a worker died: this process does what is left
                broken = True
                return
            in_flight[fut] = pending.popleft()

    def result(fut: Future, piece: host_pieces.Piece):
        try:
            return fut.result()
        except BrokenProcessPool:
            log.warning(died)
            return _trimmed(work, *before, piece, *after)

    try:
        hand_out()
        while pending or in_flight:
            ready = [f for f in in_flight if f.done()]
            if not ready and in_flight and (not here or not pending or not fits(pending[-1])):
                ready = [next(iter(in_flight))]  # nothing (that fits) to do here: wait for a worker
            if ready:
                got = [result(f, in_flight.pop(f)) for f in ready]
                hand_out()
            else:
                with xspace.one_decode_thread() if pool is not None else contextlib.nullcontext():
                    got = [_trimmed(work, *before, pending.pop(), *after)]
                hand_out()
            yield from got
    finally:
        for f in in_flight:
            f.cancel()


def _trimmed(work: Callable, *args):
    """work(*args), then the heap's free pages given back: a lane done with a piece of a giant
    host would otherwise hold its peak while it waits for the next, or for nothing."""
    try:
        return work(*args)
    finally:
        release_free_memory()


def _in_processes(files: list[HostFile], jobs: int, use_cache: bool, report: Progress | None):
    """The hosts over `jobs` lanes: jobs - 1 worker processes, and this process itself, which
    has its modules imported already (a worker spends ~0.4 s on imports before its first host).

    Workers take hosts from the front, this process from the back. A thread of this process hands
    a worker its next host the moment it finishes one (this process, busy with its own host, could
    only do so between hosts: the worker waited up to a host's time), and each worker holds one
    host at a time, so at the end no worker has a queue left while this process waits."""
    if report:
        report(f"op stats: {len(files)} hosts in {jobs} processes")
    pending = collections.deque(files)
    lock = threading.Lock()
    finished: queue.Queue = queue.Queue()  # (host file, future) of the workers' hosts as they end;
    # (None, None): a host went back to `pending`
    freed: queue.Queue = queue.Queue()  # a worker is free; None: stop handing out
    done = 0
    pool = map_pool.take(jobs - 1)
    try:
        def hand_next() -> None:
            with lock:
                hf = pending.popleft() if pending else None
            if hf is None:
                return
            try:
                fut = pool.submit(map_host_file, hf, use_cache)
            except RuntimeError:  # a broken or shut down pool: the host goes back, for this process
                with lock:
                    pending.appendleft(hf)
                finished.put((None, None))  # wakes this process if it waits for the workers
                raise

            def ended(f: Future, hf: HostFile = hf) -> None:
                finished.put((hf, f))
                freed.put(True)

            fut.add_done_callback(ended)

        def hand_out() -> None:
            try:
                for _ in range(jobs - 1):
                    hand_next()
                while freed.get() is not None:
                    hand_next()
            except RuntimeError:  # the pool was shut down under us: the map is over
                pass

        feeder = threading.Thread(target=hand_out, name="tputui-map-hand-out", daemon=True)
        feeder.start()
        try:
            while done < len(files):
                with lock:
                    here = pending.pop() if pending else None
                if here is not None:
                    with xspace.one_decode_thread():
                        stats = map_host_file(here, use_cache)
                    done += 1
                    if report:
                        report(Step(f"op stats: {done}/{len(files)} hosts done ({here.host}, here)", done, len(files)))
                    yield here.host, stats
                wait = here is None  # nothing left to map here: wait for the workers' hosts
                while done < len(files):
                    try:
                        hf, fut = finished.get(block=wait)
                    except queue.Empty:
                        break
                    if hf is None:  # a host went back to `pending`: this process takes it
                        break
                    wait = False
                    done += 1
                    try:
                        stats = fut.result()
                    except BrokenProcessPool:  # the worker died (killed, out of memory): once more, here
                        log.warning(f"op stats: the worker process mapping host {hf.host} died; mapping it again here")
                        with xspace.one_decode_thread():
                            stats = map_host_file(hf, use_cache)
                    if report:
                        report(Step(f"op stats: {done}/{len(files)} hosts done ({hf.host})", done, len(files)))
                    yield hf.host, stats
        finally:
            freed.put(None)
            feeder.join()
    finally:
        # The workers exit while the reduce runs, not before it.
        pool.shutdown(wait=False)


def _dask_client(address: str):
    """A client of the Dask scheduler at `address`; ScaleOutError (one line) when it cannot be had."""
    try:
        from distributed import Client
    except ImportError:
        raise ScaleOutError("--dask needs the dask extra: pip install 'tputui[dask]'") from None
    try:
        return Client(address, timeout=10, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise ScaleOutError(f"cannot reach the Dask scheduler at {address}: {e}") from None


def _on_dask(address: str, files: list[HostFile], use_cache: bool, report: Progress | None):
    client = _dask_client(address)
    try:
        if report:
            workers = len(client.scheduler_info().get("workers", {}))
            report(f"op stats: {len(files)} hosts on Dask at {address} ({workers} workers)")
        futures = client.map(map_host_file, files, use_cache=use_cache, pure=False)
        host_of = {f.key: hf.host for f, hf in zip(futures, files)}
        done = 0
        for fut in _dask_finished(client, futures):
            try:
                stats = fut.result()
            except (UserError, HostUnreadable):
                raise
            except Exception as e:  # noqa: BLE001 (a worker's failure, said in one line)
                raise ScaleOutError(f"Dask worker failed on host {host_of[fut.key]}: {e}") from None
            done += 1
            if report:
                report(Step(f"op stats: {done}/{len(files)} hosts done on Dask ({stats.host})", done, len(files)))
            yield stats.host, stats
    finally:
        client.close()


def _pieces_on_dask(address: str, hf: HostFile, pieces: list[host_pieces.Piece], report: Progress | None) -> HostOpStats:
    """One giant host's pieces on the Dask cluster: each worker reads its pieces from the file
    itself, stage by stage (analysis/host_pieces.py)."""
    client = _dask_client(address)
    done = 0
    if report:
        workers = len(client.scheduler_info().get("workers", {}))
        report(f"op stats: {hf.host} in {len(pieces)} pieces on Dask at {address} ({workers} workers)")

    def run_parts(todo: list[host_pieces.Piece], launches: dict | None, grouping: bool):
        nonlocal done
        futures = client.map(host_pieces.map_piece, [hf] * len(todo), todo, launches=launches, grouping=grouping,
                             pure=False)
        for fut in _dask_finished(client, futures, f"piece(s) of host {hf.host}"):
            try:
                part = fut.result()
            except UserError:
                raise
            except Exception as e:  # noqa: BLE001 (a worker's failure, said in one line)
                raise ScaleOutError(f"Dask worker failed on a piece of host {hf.host}: {e}") from None
            done += 1
            if report:
                report(Step(f"op stats: {hf.host}: piece {done}/{len(pieces)} done on Dask", done, len(pieces)))
            yield part

    try:
        return host_pieces.map_in_pieces(hf, pieces, run_parts)
    except UserError as e:
        raise HostUnreadable(hf.host, str(e)) from None
    finally:
        client.close()


def _dask_finished(client, futures: list, what: str = "host(s)"):
    """The futures as they finish. The scheduler keeps a task waiting as long as no worker can
    run it: when the cluster has had no worker for DASK_NO_WORKER_SECONDS, one line says so."""
    finished: queue.Queue = queue.Queue()
    for f in futures:
        f.add_done_callback(finished.put)
    since = time.monotonic()  # when a worker was last seen (or a host finished)
    for left in range(len(futures), 0, -1):
        while True:
            try:
                fut = finished.get(timeout=_DASK_POLL_SECONDS)
                break
            except queue.Empty:
                pass
            if client.scheduler_info().get("workers"):
                since = time.monotonic()
            elif time.monotonic() - since > DASK_NO_WORKER_SECONDS:
                raise ScaleOutError(f"no Dask worker answered in {DASK_NO_WORKER_SECONDS:g} s "
                                    f"({left} {what} left to map)")
        since = time.monotonic()
        yield fut


def run_device_ops(run: RunData, host: str | None = None, progress: Progress | None = None) -> DeviceOps:
    """The hosts' TPU device ops combined (op profile, HLO stats, roofline, the guide's checks):
    hlo_ops.DeviceOps, combined once per run and host choice (its readers do not change it)."""
    def combined() -> DeviceOps:
        hosts = host_op_stats(run, host, progress)
        return combine_device_ops([h.device_ops for h in hosts], combine_perf([h.perf for h in hosts]))

    return run.memo.get_or_make(RUN_DEVICE_OPS, host, combined)


def has_device_ops(run: RunData) -> bool:
    """Whether any host has TPU device ops (op profile, HLO stats, roofline), from the op stats:
    the tool picker asks this without decoding frames in this process."""
    return any(h.device_ops is not None and h.device_ops.db.ops.height > 0 for h in host_op_stats(run))


def has_gpu_kernels(run: RunData) -> bool:
    """Whether any host has GPU planes (kernel stats), from the op stats."""
    return any(h.kernels is not None for h in host_op_stats(run))


def has_hlo_modules(run: RunData) -> bool:
    """Whether any host has an XLA program with its HLO (memory viewer, graph viewer), from the op stats."""
    return bool(run.hosts) and any(h.hlo_module_names for h in host_op_stats(run))
