"""Where the TPU runtime's log is (`tpu_driver.INFO` under /tmp/tpu_logs by default).

Apart from tpu_runtime_log.py (which reads it, for the performance guide's checks) because
`tputui export` looks for the folder on every tool: finding a file must not load the guide and
the op-stats map (~0.13 s of imports) for tools that never read it (the memory profile).
"""
from __future__ import annotations

import glob
import os
from typing import Any

from tputui.errors import UserError

DEFAULT_DIR = "/tmp/tpu_logs"  # where libtpu writes its logs unless told otherwise
LOG_NAME = "tpu_driver.INFO"


def find_log(path: str) -> str | None:
    """The runtime log in `path` (a folder or the log file itself): tpu_driver.INFO, else the
    newest tpu_driver.*INFO* file; None when there is none."""
    if os.path.isfile(path):
        return path
    named = os.path.join(path, LOG_NAME)
    if os.path.isfile(named):
        return named
    found = [p for p in glob.glob(os.path.join(glob.escape(path), "tpu_driver*INFO*")) if os.path.isfile(p)]
    return max(found, key=os.path.getmtime) if found else None


def require_log(path: str) -> str:
    """find_log, or one line for the user when they named a folder without a log."""
    if not os.path.exists(path):
        raise UserError(f"--tpu-logs: no such file or directory: {path}")
    log = find_log(path)
    if log is None:
        raise UserError(f"--tpu-logs: no {LOG_NAME} (TPU runtime log) in {path}")
    return log


def stamp(path: str | None) -> list[Any] | None:
    """(file, size, mtime) of the log `path` leads to: part of a cached export's key."""
    log = find_log(path) if path else None
    if log is None:
        return None
    st = os.stat(log)
    return [os.path.realpath(log), st.st_size, st.st_mtime_ns]
