"""signals.exiting_app: an app that cannot exit after SIGTERM / SIGHUP (its event loop blocked,
as Textual's is by a writer thread that died on a dead terminal) is ended by the watchdog, after
the cleanup it was given: no process is left behind."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

STUCK_APP = textwrap.dedent("""
    import asyncio, sys, threading
    from tputui import signals

    signals.EXIT_WATCHDOG_S = 0.5

    class StuckApp:
        def exit(self, *args):  # asked through the event loop, which is blocked: never runs
            print("exited", flush=True)

        def run(self):
            async def main():
                print("running", flush=True)
                lock = threading.Lock()
                lock.acquire()
                lock.acquire()  # blocks the event loop for good
            asyncio.run(main())

    def cleanup():
        open(sys.argv[1], "w").write("cleaned up")

    with signals.exiting_app(StuckApp(), cleanup):
        StuckApp().run()
""")


def test_watchdog_ends_an_app_stuck_after_a_signal(tmp_path):
    marker = tmp_path / "marker"
    p = subprocess.Popen([sys.executable, "-c", STUCK_APP, str(marker)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "running"
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
    finally:
        p.kill()
    assert "exited" not in out
    assert p.returncode == 128 + signal.SIGTERM and marker.read_text() == "cleaned up"


def test_an_ignored_hang_up_stays_ignored(tmp_path):
    """`nohup tputui capture ...`: SIGHUP is ignored on purpose, and tputui must not undo that."""
    code = ("import signal, os; from tputui import signals; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
            "signals.raise_on_ending_signals(); os.kill(os.getpid(), signal.SIGHUP); "
            "print(signal.getsignal(signal.SIGTERM) is signals._raise, flush=True)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stderr
