"""One run's hosts, decoded on demand (through the cache) for the tools to read."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tputui.data.progress import Progress, current_progress
from tputui.data.run_memo import RunMemo
from tputui.data.runs import HostFile, LogdirError, Run
from tputui.errors import UserError

if TYPE_CHECKING:
    from tputui.data.xspace import PlaneSelector, XSpaceFrame

# The decoder (cache, xspace: numpy and Polars, ~0.5 s to import) is imported by the first read,
# in the loading worker: the app draws its first frame while it imports (same layer, no contract).


@dataclass
class RunData:
    """The hosts of one run. Frames are decoded lazily and kept per (host, planes)."""

    run: Run
    use_cache: bool = True
    # Hosts whose file could not be read or decoded -> the one-line reason; left out of `hosts`.
    unreadable: dict[str, str] = field(default_factory=dict)
    _checked: set = field(default_factory=set, repr=False)  # hosts check_hosts found readable
    # How per-host work (the op stats map) runs: worker processes (None: one per core) or a Dask
    # scheduler address.
    jobs: int | None = None
    dask: str | None = None
    # Results derived from the hosts (e.g. op stats), kept for this process by the analyses.
    memo: RunMemo = field(default_factory=RunMemo, repr=False, compare=False)
    _frames: dict = field(default_factory=dict, repr=False)
    _loading: dict = field(default_factory=dict, repr=False)  # key -> Event set when its load ends
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return self.run.name

    @property
    def hosts(self) -> list[str]:
        """The supported hosts not known to be unreadable (see check_hosts)."""
        return [h.host for h in self.run.hosts if h.host not in self.unreadable]

    def check_hosts(self, progress=None) -> dict[str, str]:
        """Check every host file's bytes (size, first bytes, top-level structure) and record the
        unreadable ones; returns them (host -> reason)."""
        for hf in self.run.hosts:
            if hf.host not in self.unreadable and hf.host not in self._checked:
                try:
                    from tputui.data.cache import check_host_file

                    check_host_file(hf, self.use_cache, progress)
                    self._checked.add(hf.host)
                except UserError as e:
                    self.unreadable[hf.host] = str(e)
        return dict(self.unreadable)

    def require_hosts(self) -> list[str]:
        """The readable hosts, or a one-line error saying why there are none."""
        if self.hosts:
            return self.hosts
        if self.unreadable:
            reason = next(iter(self.unreadable.values()))
            if len(self.run.hosts) == 1:
                raise LogdirError(reason)  # the one file's own line says it all
            more = f" (and {len(self.unreadable) - 1} more unreadable)" if len(self.unreadable) > 1 else ""
            raise LogdirError(f"run {self.name} has no readable host: {reason}{more}")
        raise LogdirError(f"run {self.name} has no host profiles")

    def host_file(self, host: str | None = None) -> HostFile:
        return self.run.host(host)

    def frame(self, host: str | None = None, planes: PlaneSelector = None,
              progress: Progress | None = None, keep: bool = True, full_check: bool = False) -> XSpaceFrame:
        """Decoded frame of one host (the first host when None); slow steps report to `progress`,
        else to the callback of the enclosing `reporting` block. keep=False: a frame not loaded
        yet is not kept by the run (a walk over many hosts then holds one at a time).
        full_check: a caller about to read every column (the op-stats map) has a big cache
        entry's every byte checked (cache.load_frame), not only a sample."""
        hf = self.host_file(host)
        key = (hf.host, None if planes is None else tuple(planes) if not callable(planes) else planes)
        while True:
            with self._lock:
                fr = self._frames.get(key)
                if fr is not None:
                    return fr
                loading = self._loading.get(key)
                if loading is None:  # ours to load
                    loading = self._loading[key] = threading.Event()
                    break
            loading.wait()  # another thread (a prefetch) is decoding it: its frame, or our turn
        try:
            report = progress or current_progress()
            if report:
                report(f"reading {hf.host} ({hf.size / 1e6:.1f} MB)")
            try:
                from tputui.data.cache import load_frame

                fr = load_frame(hf, planes=planes, use_cache=self.use_cache, progress=report, full_check=full_check)
            except UserError as e:
                self.unreadable[hf.host] = str(e)  # later `hosts` lists leave it out
                raise
            if keep:
                with self._lock:
                    self._frames[key] = fr
            return fr
        finally:
            with self._lock:
                del self._loading[key]
            loading.set()

    def prefetch(self, host: str | None = None) -> None:
        """Start decoding the host's whole frame in a background thread (the C decoder lets the
        GIL go), so it overlaps what the caller still has to import; frame() waits for it, and a
        failure is left for frame() to meet again."""
        def load() -> None:
            try:
                self.frame(host)
            except Exception:  # noqa: BLE001,S110 - the caller's own frame() call reports it
                pass

        threading.Thread(target=load, name="tputui-prefetch", daemon=True).start()

    def has_frame(self, host: str) -> bool:
        """Whether the host's full frame is already decoded in this process."""
        with self._lock:
            return (host, None) in self._frames

    def whole_frame_if_loaded(self, host: str) -> XSpaceFrame | None:
        """The host's whole frame when it is already decoded (it holds every plane), else None."""
        with self._lock:
            return self._frames.get((self.host_file(host).host, None))

    def frames(self, planes: PlaneSelector = None, progress: Progress | None = None) -> dict[str, XSpaceFrame]:
        """Every supported host's frame, in host order."""
        return {h: self.frame(h, planes, progress) for h in self.hosts}
