"""`tputui export -o FILE` killed outright (kill -9) mid-write leaves its part file beside FILE
(only a rename within one filesystem is atomic, so that is where it must be); the next write of
FILE removes the parts of dead processes of this machine, and only those."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

from conftest import PROFILES
from helpers.live import HELPERS, tputui

from tputui.data.files import atomic_open, part_name, prune_dead_parts


def test_export_killed_mid_write_leaves_nothing_after_the_next_run(tmp_path):
    out = tmp_path / "out" / "overview.json"
    out.parent.mkdir()
    logdir = str(PROFILES / "jax_mlp")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HELPERS.parents[1]), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.Popen([sys.executable, str(HELPERS / "export_stalls.py"), logdir, "--tool", "overview_page",
                          "-o", str(out), "--no-cache"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stderr.readline().strip() == "stalled"  # half of the output written
        (part,) = out.parent.iterdir()
        assert part.name.startswith("overview.json.part-") and part.stat().st_size >= 100
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        p.kill()
    assert part.exists() and not out.exists()  # what kill -9 leaves
    r = tputui("export", logdir, "--tool", "overview_page", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(x.name for x in out.parent.iterdir()) == ["overview.json"]
    assert json.loads(out.read_text())["steps"]  # the whole output


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_only_dead_processes_parts_of_this_machine_are_pruned(tmp_path):
    target = str(tmp_path / "f.csv")
    dead, alive = dead_pid(), os.getppid()
    paths = {
        "dead here": part_name(target, dead, 7),
        "dead, earlier naming": f"{target}.part-{dead}-7",
        "alive here": part_name(target, alive, 7),
        "ours": part_name(target, os.getpid(), 8),
        "another machine": f"{target}.part-{dead}-7@not-{socket.gethostname()}",
        "another file": part_name(str(tmp_path / "g.csv"), dead, 7),
        "the user's": str(tmp_path / "f.csv.part-notes"),
    }
    for p in paths.values():
        open(p, "w").close()
    removed = prune_dead_parts(target)
    assert sorted(removed) == sorted(os.path.basename(paths[k]) for k in ("dead here", "dead, earlier naming"))
    assert all(os.path.exists(paths[k]) for k in paths if k not in ("dead here", "dead, earlier naming"))
    with atomic_open(target, "w") as f:  # a write prunes on its own, and leaves its own part nowhere
        f.write("x")
    assert open(target).read() == "x" and not os.path.exists(part_name(target, os.getpid(), 0))


def test_export_ended_by_sigterm_or_sighup_removes_its_part_file_itself(tmp_path):
    """SIGTERM / SIGHUP unwind like Ctrl+C (tputui/signals.py): the part file goes at once."""
    logdir = str(PROFILES / "jax_mlp")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HELPERS.parents[1]), os.environ.get("PYTHONPATH", "")]))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        out = tmp_path / signal.Signals(sig).name / "overview.json"
        out.parent.mkdir()
        p = subprocess.Popen([sys.executable, str(HELPERS / "export_stalls.py"), logdir, "--tool", "overview_page",
                              "-o", str(out), "--no-cache"], stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert p.stderr.readline().strip() == "stalled"
            p.send_signal(sig)
            err = p.communicate(timeout=30)[1]
        finally:
            p.kill()
        assert p.returncode == 128 + sig and err.strip() == f"tputui: ended by {signal.Signals(sig).name}"
        assert not any(out.parent.iterdir())
