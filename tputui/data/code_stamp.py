"""A stamp of the code this process runs, for the keys of what the cache keeps of its results.

The op stats, the trace index and an export's output are computed by tputui's own code: an edited
checkout, or a new build with the same version number and format versions, must not be answered
with what an older one wrote. The stamp is the newest modification time of tputui's source and
extension files (~150 stats, a millisecond or two, once per process).
"""
from __future__ import annotations

import functools
import os

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tputui/


@functools.cache
def code_stamp() -> str:
    newest = 0.0
    for folder, _dirs, names in os.walk(_PACKAGE):
        for n in names:
            if n.endswith((".py", ".so", ".c")):
                try:
                    newest = max(newest, os.stat(os.path.join(folder, n)).st_mtime)
                except OSError:
                    pass
    return repr(newest)
