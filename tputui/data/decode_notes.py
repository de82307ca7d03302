"""What decoding a host file warned about (a damaged riegeli region skipped), kept in the cache
(its notes/ folder, beside frames/), so the warning comes again when a cached result stands in
for the decode: the op stats, a trace index, an export's output. Keyed like the frame (path,
size, mtime): a file that changes is a new key. One small JSON list per damaged file; nothing
for a sound one."""
from __future__ import annotations

import json
import logging
import os

from tputui.data.cache_entry import cache_key
from tputui.data.files import atomic_open
from tputui.data.runs import HostFile
from tputui.data.storage import cache_root

log = logging.getLogger("tputui")
SUFFIX = ".json"


def _path(hf: HostFile) -> str | None:
    key = cache_key(hf, None)
    return os.path.join(cache_root(), "notes", key + SUFFIX) if key else None


def record(hf: HostFile, lines: list[str]) -> None:
    """Keep the warnings of decoding `hf` (best effort: a full or read-only cache keeps none)."""
    path = _path(hf)
    if not lines or path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_open(path, "w", encoding="utf-8") as f:
            json.dump(list(lines), f)
    except OSError:
        pass


def replay(hf: HostFile) -> None:
    """Warn again what decoding `hf` warned about, if anything was kept (the warning handlers
    drop a line already said in this command or app)."""
    path = _path(hf)
    if path is None or not os.path.isfile(path):
        return
    try:
        with open(path, encoding="utf-8") as f:
            lines = json.load(f)
    except (OSError, ValueError):
        return
    for line in lines if isinstance(lines, list) else ():
        if isinstance(line, str):
            log.warning(line)
