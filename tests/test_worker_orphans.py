"""Workers die with `tputui export` (issue #33, item 1): whatever signal kills the export, its
map workers and multiprocessing's resource tracker end too, and a pipe it wrote into closes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process tree from /proc")


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a live process, None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def _descendants(root: int) -> dict[int, int]:
    """pid -> start time of every process below `root`."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _proc_stat(int(name))) is not None:
            children.setdefault(st[1], []).append(int(name))
    out, stack = {}, [root]
    while stack:
        for pid in children.get(stack.pop(), []):
            st = _proc_stat(pid)
            if st is not None:
                out[pid] = st[2]
                stack.append(pid)
    return out


def _alive(tree: dict[int, int]) -> list[int]:
    """The processes of `tree` still running (a zombie or a new process with a reused pid is not)."""
    out = []
    for pid, started in tree.items():
        st = _proc_stat(pid)
        if st is not None and st[0] != "Z" and st[2] == started:
            out.append(pid)
    return out


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_export_workers_end_with_the_export(tmp_path, sig):
    """`tputui export --jobs 2 ... | cat` on a multi-host run, killed while its worker is up:
    nothing of its process tree is left and `cat` sees the end of its input."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    export = subprocess.Popen(
        [sys.executable, "-m", "tputui.cli", "export", str(FIXTURES / "pod" / "pod_v4_32"), "--tool",
         "overview_page", "--jobs", "2", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    cat = subprocess.Popen(["cat"], stdin=export.stdout, stdout=subprocess.PIPE)
    assert export.stdout is not None
    export.stdout.close()  # only the export's tree holds the pipe's write end now
    tree: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace") for pid in _alive(tree)):
            assert export.poll() is None, "the export ended before its worker was seen"
            tree = _descendants(export.pid)
            time.sleep(0.01)
        # Stopped, the export cannot finish before the signal lands; SIGCONT then delivers it.
        os.kill(export.pid, signal.SIGSTOP)
        tree = _descendants(export.pid)
        assert any("spawn_main" in Path(f"/proc/{p}/cmdline").read_text(errors="replace") for p in tree), tree
        assert export.poll() is None
        os.kill(export.pid, sig)
        os.kill(export.pid, signal.SIGCONT)
        # Killed outright (SIGKILL), or unwound by tputui's handler (SIGTERM, SIGHUP: 128 + signal).
        assert export.wait(timeout=30) in (-sig, 128 + sig)
        cat.communicate(timeout=30)  # the pipe closed: every holder of its write end is gone
        deadline = time.monotonic() + 30
        while _alive(tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(tree) == [], [Path(f"/proc/{p}/cmdline").read_text(errors="replace") for p in _alive(tree)]
    finally:  # whatever failed, leave nothing running
        for pid in _alive({**tree, **_descendants(export.pid)}):
            os.kill(pid, signal.SIGKILL)
        if export.poll() is None:
            export.kill()
        if cat.poll() is None:
            cat.kill()


def test_workers_of_a_pool_started_from_a_thread_end_with_their_process():
    """The app starts its pools from worker threads, where Linux's parent-death signal (tied to
    the starting thread) is not used: the lifeline pipe alone must end the workers."""
    code = ("import threading, time\nfrom tputui.analysis import map_pool\n"
            "pools = []\n"
            "t = threading.Thread(target=lambda: pools.append(map_pool.take(2)))\n"
            "t.start(); t.join()\n"
            "[f.result() for f in [pools[0].submit(sum, [1]) for _ in range(4)]]\n"
            "print(' '.join(str(p) for p in pools[0]._processes), flush=True)\n"
            "time.sleep(600)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    tree: dict[int, int] = {}
    try:
        assert child.stdout is not None
        workers = [int(p) for p in child.stdout.readline().split()]
        tree = {p: st[2] for p in workers if (st := _proc_stat(p)) is not None}
        assert len(tree) == 2, workers
        child.kill()
        child.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(tree) == []
    finally:
        for pid in _alive(tree):
            os.kill(pid, signal.SIGKILL)
        if child.poll() is None:
            child.kill()
