"""The user's own folders: where screen exports go and where settings live (no Textual here).

Exports (`x` on a table) go to $TPUTUI_EXPORT_DIR, else the user's downloads folder, else
`$XDG_CACHE_HOME/tputui/exports`; never into the logdir being viewed (tputui is read-only
towards profiles, and the working directory is often the logdir itself). Settings (the theme)
are one small JSON file under `$XDG_CONFIG_HOME/tputui/`.
"""
from __future__ import annotations

import json
import os
from typing import Any

from tputui.data.cache_folder import private_dir
from tputui.data.files import atomic_open


def _home() -> str:
    return os.path.expanduser("~")


def cache_root() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(_home(), ".cache"), "tputui")


def config_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(_home(), ".config")
    return os.path.join(base, "tputui", "settings.json")


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _downloads() -> str | None:
    """$XDG_DOWNLOAD_DIR or ~/Downloads, when it exists (a headless TPU VM rarely has one)."""
    for d in (os.environ.get("XDG_DOWNLOAD_DIR"), os.path.join(_home(), "Downloads")):
        if d and os.path.isdir(d):
            return d
    return None


def export_dir(logdir: str | None = None) -> str:
    """The folder screen exports go to (created if missing); never inside `logdir`."""
    local_logdir = logdir if logdir and "://" not in logdir else None
    in_cache = os.path.join(cache_root(), "exports")
    for d in (os.environ.get("TPUTUI_EXPORT_DIR"), _downloads(), in_cache):
        if not d or (local_logdir and _inside(d, local_logdir)):
            continue
        if d == in_cache:
            private_dir(d)  # the cache folder and the parents we create: 0700, like its entries
        else:
            os.makedirs(d, exist_ok=True)
        return d
    raise OSError("every export folder is inside the logdir; set TPUTUI_EXPORT_DIR to a folder outside it")


def short_path(path: str) -> str:
    """~ for the home folder, so a toast shows the part that matters."""
    home = _home().rstrip(os.sep)
    return "~" + path[len(home):] if home and (path == home or path.startswith(home + os.sep)) else path


def load_settings() -> dict[str, Any]:
    """The saved settings; {} when there are none or the file is unreadable (never fatal)."""
    try:
        with open(config_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_setting(key: str, value: Any) -> None:
    """Merge one setting into the file (atomically: a crash never leaves half a file)."""
    data = load_settings()
    data[key] = value
    path = config_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
