"""One run's hosts, decoded on demand (through the cache) for the tools to read."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from tputui.data.logdir import HostFile, LogdirError, Run
from tputui.data.xspace import PlaneSelector, XSpaceFrame


@dataclass
class RunData:
    """The hosts of one run. Frames are decoded lazily and kept per (host, planes)."""

    run: Run
    use_cache: bool = True
    # Called with a short message before slow steps (decode, download); screens set it.
    progress: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    # How per-host work (the op stats map) runs: worker processes (None: one per core) or a Dask
    # scheduler address.
    jobs: int | None = None
    dask: str | None = None
    # Results derived from the hosts (e.g. op stats), kept for this process by the analyses.
    memo: dict = field(default_factory=dict, repr=False, compare=False)
    _frames: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return self.run.name

    @property
    def hosts(self) -> list[str]:
        return [h.host for h in self.run.hosts if h.supported]

    def require_hosts(self) -> list[str]:
        """The readable hosts, or a one-line error saying why there are none."""
        if self.hosts:
            return self.hosts
        if self.run.unsupported:
            raise LogdirError(f"run {self.name} holds only .xplane.riegeli profiles (over 2 GiB): "
                              "not supported yet")
        raise LogdirError(f"run {self.name} has no host profiles")

    def host_file(self, host: str | None = None) -> HostFile:
        hf = self.run.host(host)
        if not hf.supported:
            raise LogdirError(f"{hf.path}: .xplane.riegeli profiles (over 2 GiB) are not supported yet")
        return hf

    def frame(self, host: str | None = None, planes: PlaneSelector = None, progress=None) -> XSpaceFrame:
        """Decoded frame of one host (the first host when None)."""
        from tputui.data.cache import load_frame

        hf = self.host_file(host)
        key = (hf.host, None if planes is None else tuple(planes) if not callable(planes) else planes)
        with self._lock:
            fr = self._frames.get(key)
        if fr is None:
            report = progress or self.progress
            if report:
                report(f"reading {hf.host} ({hf.size / 1e6:.1f} MB)")
            fr = load_frame(hf, planes=planes, use_cache=self.use_cache, progress=report)
            with self._lock:
                self._frames[key] = fr
        return fr

    def has_frame(self, host: str) -> bool:
        """Whether the host's full frame is already decoded in this process."""
        with self._lock:
            return (host, None) in self._frames

    def frames(self, planes: PlaneSelector = None, progress=None) -> dict[str, XSpaceFrame]:
        """Every supported host's frame, in host order."""
        return {h: self.frame(h, planes, progress) for h in self.hosts}
