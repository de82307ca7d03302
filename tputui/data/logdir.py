"""Logdir -> runs -> hosts -> files, named the way XProf names them.

A LOGDIR may be a TensorBoard logdir (searched recursively for plugins/profile/<run>/),
a plugins/profile folder, one run folder, or a single <host>.xplane.pb file.
XProf calls a run `<dir holding plugins/profile, relative to the logdir>/<run>`,
or just `<run>` when that dir is the logdir itself. Newest run first.
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

    @property
    def supported(self) -> bool:
        return self.format in ("pb", "riegeli")


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
                return datetime(*map(int, m.groups())).timestamp()
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

    @property
    def unsupported(self) -> list[HostFile]:
        return [h for h in self.hosts if not h.supported]


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


def natural_key(name: str) -> tuple:
    """Sort key that orders embedded numbers by value: w-2 before w-10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(name) if part)


def _host_of(filename: str) -> tuple[str, str] | None:
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
        parsed = _host_of(path.rsplit(sep, 1)[-1])
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
        run = runs.setdefault(name, Run(name=name, path=run_dir))
        run.hosts.append(HostFile(host=host, path=path, size=size, mtime=mtime, format=fmt))
    for run in runs.values():
        run.hosts.sort(key=lambda h: natural_key(h.host))
    return sorted(runs.values(), key=lambda r: (r.sort_key, r.name), reverse=True)


def _list_local(root: str) -> list[tuple[str, int, float]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        for fn in filenames:
            if fn.endswith((XPLANE_SUFFIX, RIEGELI_SUFFIX)):
                p = os.path.join(dirpath, fn)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out.append((p, st.st_size, st.st_mtime))
    return out


def open_logdir(path: str) -> Logdir:
    """Discover runs and hosts under PATH (local path, single file, or gs:// URL)."""
    if path.startswith("gs://"):
        from tputui.data import gcs  # optional extra; says so clearly when missing

        return gcs.open_logdir(path)
    path = os.path.expanduser(path)
    if not os.path.exists(path):
        raise LogdirError(f"no such file or directory: {path}")
    if os.path.isfile(path):
        parsed = _host_of(os.path.basename(path))
        if parsed is None:
            raise LogdirError(f"{path}: not an XProf profile (expected a <host>{XPLANE_SUFFIX} file)")
        st = os.stat(path)
        run_dir = os.path.dirname(os.path.abspath(path))
        run = Run(name=os.path.basename(run_dir), path=run_dir,
                  hosts=[HostFile(parsed[0], path, st.st_size, st.st_mtime, parsed[1])])
        return Logdir(root=path, runs=[run])
    if not os.access(path, os.R_OK | os.X_OK):
        raise LogdirError(f"{path}: permission denied")
    runs = runs_from_listing(os.path.abspath(path), _list_local(os.path.abspath(path)), sep=os.sep)
    if not runs:
        raise LogdirError(f"no profiles under {path}: expected {EXPECTED}")
    return Logdir(root=path, runs=runs)
