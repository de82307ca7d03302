"""Logdir -> runs -> hosts -> files: the model, named the way XProf names them (no I/O here).

XProf calls a run `<dir holding plugins/profile, relative to the logdir>/<run>`,
or just `<run>` when that dir is the logdir itself. Newest run first.
Discovery (`logdir.open_logdir`) lists files through `storage` and groups them here.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime

from tputui.errors import UserError

XPLANE_SUFFIX = ".xplane.pb"
RIEGELI_SUFFIX = ".xplane.riegeli"
EXPECTED = "plugins/profile/<run>/<host>.xplane.pb"
_DIGITS = re.compile(r"(\d+)")
_RUN_TIME = re.compile(r"(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})")


class LogdirError(UserError):
    """A logdir that cannot be read: the message is the one line users see."""


@dataclass(frozen=True)
class HostFile:
    host: str
    path: str  # local path or URL (gs://...)
    size: int
    mtime: float  # seconds; for gs:// the object generation stands in
    format: str = "pb"  # "pb" | "riegeli"


@dataclass
class Run:
    name: str  # XProf's frontend run name, e.g. "train/2026_11_22_12_58_40"
    path: str
    hosts: list[HostFile] = field(default_factory=list)

    @property
    def sort_key(self) -> float:
        m = _RUN_TIME.search(os.path.basename(self.path.rstrip("/")))
        if m:
            try:
                year, month, day, hour, minute, second = (int(g) for g in m.groups())
                return datetime(year, month, day, hour, minute, second).timestamp()
            except ValueError:
                pass
        return max((h.mtime for h in self.hosts), default=0.0)

    def host(self, name: str | None) -> HostFile:
        if name is None:
            return self.hosts[0]
        for h in self.hosts:
            if h.host == name:
                return h
        raise LogdirError(f"run {self.name} has no host {name!r} (hosts: {', '.join(h.host for h in self.hosts)})")


@dataclass
class Logdir:
    root: str
    runs: list[Run]

    def run(self, name: str | None) -> Run:
        if name is None:
            return self.runs[0]
        for r in self.runs:
            if r.name == name or r.name.endswith("/" + name):
                return r
        raise LogdirError(f"no run {name!r} in {self.root} (runs: {', '.join(r.name for r in self.runs)})")


def shown(name: str) -> str:
    """A name taken from the file system, as text: a byte that is not UTF-8 (which Python keeps as
    a lone surrogate, fine for opening the file but not for printing, JSON or hashing as UTF-8)
    is written \\xNN. Hosts and runs are named with it; their paths keep the real bytes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def path_bytes(path: str) -> bytes:
    """A path as the bytes the file system holds (for cache keys): any name encodes."""
    return path.encode("utf-8", "surrogateescape")


def natural_key(name: str) -> tuple:
    """Sort key that orders embedded numbers by value: w-2 before w-10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(name) if part)


def host_of(filename: str) -> tuple[str, str] | None:
    if filename.endswith(XPLANE_SUFFIX):
        return filename[: -len(XPLANE_SUFFIX)], "pb"
    if filename.endswith(RIEGELI_SUFFIX):
        return filename[: -len(RIEGELI_SUFFIX)], "riegeli"
    return None


def runs_from_listing(root: str, files: list[tuple[str, int, float]], sep: str = "/") -> list[Run]:
    """Group a flat listing [(path, size, mtime)] under `root` into XProf runs.

    Shared by local and remote (gs://) logdirs: both list once, flat, then group here.
    """
    root = root.rstrip(sep)
    runs: dict[str, Run] = {}
    for path, size, mtime in files:
        parsed = host_of(path.rsplit(sep, 1)[-1])
        if parsed is None:
            continue
        host, fmt = parsed
        run_dir = path.rsplit(sep, 1)[0]
        rel = run_dir[len(root):].strip(sep).split(sep) if run_dir.startswith(root) else [run_dir]
        rel = [p for p in rel if p]
        if len(rel) >= 3 and rel[-3:-1] == ["plugins", "profile"]:
            name = sep.join(rel[:-3] + rel[-1:])
        elif not rel:  # LOGDIR is the run folder itself
            name = os.path.basename(run_dir.rstrip(sep)) or run_dir
        elif len(rel) == 1:  # LOGDIR is a plugins/profile folder
            name = rel[0]
        else:
            continue  # an .xplane.pb outside plugins/profile/<run>/: not a profile run
        name, host = shown(name), shown(host)
        run = runs.setdefault(name, Run(name=name, path=run_dir))
        run.hosts.append(HostFile(host=host, path=path, size=size, mtime=mtime, format=fmt))
    for run in runs.values():
        run.hosts.sort(key=lambda h: natural_key(h.host))
    return sorted(runs.values(), key=lambda r: (r.sort_key, r.name), reverse=True)
