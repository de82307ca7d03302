"""glibc's allocator told to keep freed memory for reuse, for processes that live for one job.

By default glibc serves every block over 32 MB (a column of a big profile, and each numpy
temporary of that size) with its own mmap and unmaps it when freed, so the next one faults in
fresh pages the kernel must zero: on a 322 MB profile that is ~3 GB of page faults, a third of the
run's CPU. Served from the heap and never trimmed, freed blocks are reused instead (page faults
halve). A one-shot command (`tputui export`) or a map worker exits soon after, so the memory it
keeps does not matter; the app does not call this.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def keep_freed_memory() -> bool:
    """Apply the policy; False where the C library is not glibc (nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:  # glibc's soname first: find_library runs `ldconfig -p` (~45 ms of a ~1 s export)
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            return False
    try:
        mallopt = libc.mallopt
    except AttributeError:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(_M_MMAP_MAX, 0) == 1  # no mmap-served blocks: every block comes from the heap
    ok &= mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1  # and the heap's top is not given back
    return bool(ok)
