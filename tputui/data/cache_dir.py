"""Where tputui's cache lives: its own module, so that what stores files there (cache_folder, the
gs:// download cache) and what reads profiles (storage) need not import each other."""
from __future__ import annotations

import os


def cache_root() -> str:
    """Our cache folder ($XDG_CACHE_HOME/tputui); never inside a logdir."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tputui")
