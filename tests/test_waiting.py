"""gs:// discovery against real local servers that misbehave: one that never answers (the wait
is capped, with progress while it lasts) and one that answers 503 (each retry is reported)."""
from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading

import pytest

pytest.importorskip("gcsfs")

from conftest import ROOT  # noqa: E402

from tputui.data import gcs  # noqa: E402
from tputui.data.logdir import LogdirError  # noqa: E402
from tputui.data.waiting import open_logdir_waiting  # noqa: E402


@pytest.fixture
def silent_server(monkeypatch):
    """Accepts connections and never replies (a black-holed network, on 127.0.0.1)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(sock.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    host = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
    gcs._fs_cache.clear()
    yield host
    stop.set()
    t.join()
    for c in conns:
        c.close()
    sock.close()
    gcs._fs_cache.clear()


@pytest.fixture
def unavailable_server(monkeypatch):
    """Answers every request with 503, which gcsfs retries with back-off."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = b'{"error": {"code": 503, "message": "Service Unavailable"}}'
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{srv.server_address[1]}")
    gcs._fs_cache.clear()
    yield srv
    srv.shutdown()
    srv.server_close()
    gcs._fs_cache.clear()


def test_a_silent_server_is_given_up_on_after_the_timeout(silent_server):
    said: list[str] = []
    # The message is the cap's own (the library alone waits 120 s per read): no clock needed.
    with pytest.raises(LogdirError, match=r"gs://b/logs: no answer in 2 s .*--timeout"):
        open_logdir_waiting("gs://b/logs", timeout=2, report=said.append)
    assert "waiting for gs://b/logs (1 s)" in said


def test_each_retry_is_reported(unavailable_server):
    said: list[str] = []
    with pytest.raises(LogdirError):
        open_logdir_waiting("gs://b/logs", timeout=4, report=said.append)
    retries = [m for m in said if m.startswith("retry ")]
    assert retries and retries[0].startswith("retry 1: "), said
    assert "503" in retries[0] or "Unavailable" in retries[0], retries


def test_cli_gives_one_line_and_exit_2(silent_server):
    proc = subprocess.run([sys.executable, "-m", "tputui.cli", "export", "gs://b/logs", "--list", "--timeout", "1"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "tputui: error: gs://b/logs: no answer in 1 s (network down or blocked?); --timeout SECONDS waits longer"]
