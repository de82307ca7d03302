"""Discovery: LOGDIR -> runs -> hosts, for local paths and gs:// URLs alike.

A LOGDIR may be a TensorBoard logdir (searched recursively for plugins/profile/<run>/),
a plugins/profile folder, one run folder, or a single <host>.xplane.pb file. `storage` lists
the files once, flat; `runs` groups them the way XProf names runs. The model's names are
importable from here too (most callers only need this module).
"""
from __future__ import annotations

import os
import posixpath

from tputui.data import storage
from tputui.data.runs import (  # noqa: F401  (re-exported: the model, for callers of discovery)
    EXPECTED,
    RIEGELI_SUFFIX,
    XPLANE_SUFFIX,
    HostFile,
    Logdir,
    LogdirError,
    Run,
    host_of,
    natural_key,
    runs_from_listing,
)


def open_logdir(path: str) -> Logdir:
    """Discover runs and hosts under PATH (local path, single file, or gs:// URL)."""
    if storage.is_remote(path):
        return _group(path, path.rstrip("/"), storage.list_profiles(path), sep="/")
    path = os.path.expanduser(path)
    if not os.path.exists(path):
        raise LogdirError(f"no such file or directory: {path}")
    if os.path.isfile(path):
        if host_of(os.path.basename(path)) is None:
            raise LogdirError(f"{path}: not an XProf profile (expected a <host>{XPLANE_SUFFIX} file)")
        return _group(path, os.path.abspath(path), storage.list_profiles(os.path.abspath(path)), sep=os.sep)
    if not os.access(path, os.R_OK | os.X_OK):
        raise LogdirError(f"{path}: permission denied")
    return _group(path, os.path.abspath(path), storage.list_profiles(os.path.abspath(path)), sep=os.sep)


def _group(given: str, root: str, files: storage.Listing, sep: str) -> Logdir:
    """Runs from a flat listing; ROOT naming one profile file is that file's run folder."""
    if len(files) == 1 and files[0][0] == root:
        root = (posixpath if sep == "/" else os.path).dirname(root)
    runs = runs_from_listing(root, files, sep=sep)
    if not runs:
        shown = root if storage.is_remote(given) else given
        raise LogdirError(f"no profiles under {shown}: expected {EXPECTED}")
    return Logdir(root=given, runs=runs)
