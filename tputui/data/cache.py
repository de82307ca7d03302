"""Decoded frames cached under the user cache dir, keyed by path + size + mtime.

`<cache root>/frames/<key>/` holds one entry (`cache_entry`: columns as .npy, fsynced, with a
manifest written last). Never written inside the logdir; `--no-cache` (use_cache=False) skips
both reading and writing. An entry that does not check out (a crash, a full disk, a hand edit)
is removed and the profile decoded again, so a damaged cache never fails twice. The file's
bytes come from `storage.read` (the one read path; local files memory-mapped).
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading

from tputui.data import cache_entry, decode_notes
from tputui.data.cache_entry import cache_key
from tputui.data.cache_folder import prune
from tputui.data.raw import RawXSpace
from tputui.data.runs import HostFile, LogdirError
from tputui.data.storage import cache_root, check_listed, is_remote, read
from tputui.data.xspace import DecodeError, PlaneSelector, XSpaceFrame, check, decode_raw

log = logging.getLogger("tputui")


def has_entry(hf: HostFile) -> bool:
    """Whether the whole frame of this host file is in the cache (nothing to decode)."""
    key = cache_key(hf, None)
    return key is not None and os.path.isfile(os.path.join(cache_root(), "frames", key, cache_entry.MANIFEST))


def load_frame(hf: HostFile, planes: PlaneSelector = None, use_cache: bool = True, progress=None,
               write_cache: bool = True, full_check: bool = False) -> XSpaceFrame:
    """The decoded frame of one host file, from the cache when it is fresh; a decoded
    .xplane.pb is written to the cache unless `write_cache` is False (a riegeli merge always
    writes its entry: its columns go there to keep memory bounded). `full_check`: a cached
    entry's every byte is checked, however big (a caller about to read it all: the op-stats
    map), where an open otherwise samples a big entry's big columns (entry_seal)."""
    key = cache_key(hf, planes) if use_cache else None
    entry = os.path.join(cache_root(), "frames", key) if key else None
    if entry and os.path.isdir(entry):
        try:
            frame = XSpaceFrame(cache_entry.load(entry, full=full_check))
        except Exception:  # noqa: BLE001 - DamagedEntry or anything it missed: rebuild from the file
            shutil.rmtree(entry, ignore_errors=True)
        else:
            try:
                os.utime(entry)  # marks it recently used for pruning
            except OSError:
                pass
            return frame
    data = read(hf, progress=progress)
    folder = None
    if hf.format == "riegeli":
        from tputui.data.riegeli_xspace import read_riegeli

        folder = _merge_folder(use_cache)
        try:
            raw, skipped = read_riegeli(data, hf, planes, progress, folder=folder)
        except OSError as e:  # the merge's files could not be written (a full disk): merge in memory
            if not folder:
                raise
            shutil.rmtree(folder, ignore_errors=True)
            folder = None
            log.warning(f"{hf.path}: merging in memory, its columns could not be written ({e})")
            raw, skipped = read_riegeli(data, hf, planes, progress)
        except BaseException:
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        if skipped and use_cache:  # said again when a cached result stands in for this decode
            decode_notes.record(hf, skipped)
        entry = None if skipped else entry  # a damaged file is read (and warned about) each time
        if folder and not entry:
            shutil.rmtree(folder, ignore_errors=True)  # the mapped columns stay readable until dropped
            folder = None
    else:
        if progress:
            progress(f"decoding {hf.host} ({len(data) / 1e6:.1f} MB)")
        try:
            raw = decode_raw(data, planes)
        except DecodeError as e:
            raise LogdirError(f"{hf.path}: {e}") from None
    del data
    if entry and (write_cache or hf.format == "riegeli"):
        # Writing ~35 bytes per event costs more than decoding them: do it beside the caller.
        # Not a daemon thread, so a short-lived CLI process still finishes the entry (said
        # outright: a thread started by a daemon thread, the export's prefetch, is one too).
        threading.Thread(target=_save_quietly, args=(raw, entry, folder, hf.path), name="tputui-cache-write",
                         daemon=False).start()
    return XSpaceFrame(raw)


def _merge_folder(use_cache: bool) -> str | None:
    """Where a riegeli merge writes its columns (then mapped, so memory does not follow the
    file): the cache entry being built, or with the cache off a temp folder removed once the
    columns are mapped. None (merge in memory) when neither can be written."""
    try:
        if use_cache:
            return cache_entry.new_folder(os.path.join(cache_root(), "frames"))
        return tempfile.mkdtemp(prefix="tputui-merge-")
    except OSError:
        return None


def check_host_file(hf: HostFile, use_cache: bool = True, progress=None) -> None:
    """Raise a one-line LogdirError unless the host file can be read: a cached entry of the
    whole file says it decoded before; else a local file is mapped and its top level walked
    (well under a millisecond for 80 MB), a gs:// object judged by its listed size only (its
    download waits for the decode, which may run on a worker or a Dask cluster)."""
    check_listed(hf)
    if is_remote(hf.path):
        return
    key = cache_key(hf, None)
    if use_cache and key and os.path.isfile(os.path.join(cache_root(), "frames", key, cache_entry.MANIFEST)):
        return
    data = read(hf, progress=progress)
    if hf.format == "riegeli":
        return  # its signature was checked by read(); its chunks are checked (and skipped) as they are read
    try:
        check(data)
    except DecodeError as e:
        raise LogdirError(f"{hf.path}: {e}") from None


def _save_quietly(raw: RawXSpace, entry: str, folder: str | None = None, name: str = "") -> None:
    try:
        cache_entry.save(raw, entry, folder)
        prune(os.path.dirname(entry), keep=entry)
    except OSError as e:  # a read-only or full cache dir must not stop the user from reading a profile
        # ... but is said, as for a riegeli file's columns: each run decodes the file again.
        log.warning(f"{name or entry}: its decoded columns could not be cached ({e.strerror or e}); "
                    "it is decoded again each time")
