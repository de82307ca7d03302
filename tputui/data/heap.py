"""The C heap's free pages given back to the system."""
from __future__ import annotations

import ctypes
from typing import Any

_trim: Any = None


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim; nothing elsewhere).

    glibc keeps what numpy frees in a thread's arena, and below the mmap threshold (which rises
    to 32 MB as big arrays are freed) in the main heap too: after building the flows at 10M
    events that is ~150 MB the process holds but does not use; a map worker done with a piece of
    a giant host held ~900 MB of it while it waited for the next."""
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)
