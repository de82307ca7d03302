"""Time from process spawn to the first frame of `tputui --demo` in a pseudo-terminal (80x24).

    python bench/startup.py [--repeat 5] [-- extra tputui args]

The first frame is the first output that draws the context bar ("│  run"), i.e. what the user sees
instead of a blank terminal. Prints each run and the minimum; the process is stopped right after.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

PYFLAGS: list[str] = []
ENTRY = "import sys; from tputui.cli import entry; sys.exit(entry())"  # what the `tputui` script runs
IMPORTS = ""  # --imports FILE: where the child's -X importtime lines go
MARK = "│  run".encode()


def first_frame(args: list[str], timeout: float = 30.0) -> float:
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [sys.executable, *PYFLAGS, "-c", ENTRY, *args])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    start = time.monotonic()
    seen = b""
    try:
        while time.monotonic() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
                if MARK in seen:
                    return time.monotonic() - start
        raise SystemExit(f"no first frame in {timeout:.0f} s")
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        os.close(fd)


def first_imports(args: list[str], seconds: float = 6.0) -> None:
    """Run once with -X importtime into IMPORTS, then list the top-level imports made before the
    first frame's mark appears in that file, largest first."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.environ["PYTHONPROFILEIMPORTTIME"] = "1"
        os.dup2(os.open(IMPORTS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
        os.execv(sys.executable, [sys.executable, "-c", ENTRY, *args])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    time.sleep(seconds)
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    os.close(fd)
    data = open(IMPORTS, "rb").read()
    before = data.split(MARK)[0].decode(errors="replace")
    rows = []
    for line in before.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            _, cum, name = line.split("|")
            if not name.startswith("  ") and cum.strip().isdigit():
                rows.append((int(cum) / 1e6, name.strip()))
    print(f"imports before the first frame: {sum(s for s, _ in rows):.3f} s in {len(rows)} top-level modules")
    for s, name in sorted(rows, reverse=True)[:15]:
        print(f"  {s:.3f} s  {name}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--imports", default="", help="instead: one run with -X importtime into this file, and the "
                   "imports made before the first frame")
    p.add_argument("args", nargs="*", default=["--demo"])
    ns = p.parse_args()
    global IMPORTS
    IMPORTS = ns.imports
    if IMPORTS:  # the screen goes to the file too (Textual writes to stderr): read it from there
        first_imports(ns.args)
        return
    times = []
    for _ in range(ns.repeat):
        times.append(first_frame(ns.args))
        print(f"first frame {times[-1]:.3f} s", flush=True)
    print(f"min {min(times):.3f} s  median {sorted(times)[len(times) // 2]:.3f} s over {len(times)}")


if __name__ == "__main__":
    main()
