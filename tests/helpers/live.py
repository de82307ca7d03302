"""Helpers for the live tests: free ports on 127.0.0.1, a real JAX profiler server in a
subprocess (tests/helpers/live_server.py, run with this interpreter), and a fake in-process
ProfilerService for behaviours real servers do not show on demand (a server that ignores
emit_xspace, one that implements Monitor, one that is slow)."""
from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc

from tputui.proto import profiler_service_pb2 as pb
from tputui.proto import profiler_service_pb2_grpc as pb_grpc

HELPERS = pathlib.Path(__file__).resolve().parent
READY_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port() -> int:
    """A port nothing listens on (just freed)."""
    return free_port()


class LiveServer:
    """live_server.py in a subprocess; `stop()` kills it (bounded waits everywhere)."""

    def __init__(self, seconds: float = 120, idle: bool = False):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        cmd = [sys.executable, str(HELPERS / "live_server.py"), "--port", str(self.port), "--seconds", str(seconds)]
        if idle:
            cmd.append("--idle")
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(READY_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"live_server.py did not print READY within {READY_TIMEOUT_S:g} s")

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("READY"):
                self._ready.set()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


HOLD_MAX_S = 30.0  # a held Profile answers anyway after this (a test that forgot to release it ends)


class FakeProfiler(pb_grpc.ProfilerServiceServicer):
    """Answers Profile from a script of responses (cycled on the last), Monitor if given one."""

    def __init__(self, responses=(), monitor: pb.MonitorResponse | None = None, delay_s: float = 0.0,
                 write_server_side: bool = False, xspace_bytes: bytes = b"", hold: threading.Event | None = None):
        self.responses = list(responses)
        self.monitor_response = monitor
        self.delay_s = delay_s
        self.write_server_side = write_server_side
        self.xspace_bytes = xspace_bytes
        self.requests: list[pb.ProfileRequest] = []
        # `hold`: Profile answers only once the test sets it (or after HOLD_MAX_S), so a test can
        # tell "the client returned before the server answered" by order, not by a clock.
        self.hold = hold
        self.answered = 0

    def Profile(self, request, context):
        self.requests.append(request)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.hold is not None:
            self.hold.wait(HOLD_MAX_S)
        self.answered += 1
        if self.write_server_side:
            # What old servers do without emit_xspace: write the file themselves.
            d = pathlib.Path(request.repository_root) / request.session_id
            d.mkdir(parents=True, exist_ok=True)
            (d / (request.host_name.replace(":", "_") + ".xplane.pb")).write_bytes(self.xspace_bytes)
            return pb.ProfileResponse()
        i = min(len(self.requests), len(self.responses)) - 1
        return self.responses[i]

    def Terminate(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "unimplemented.")  # a server without it: windows run out

    def Monitor(self, request, context):
        if self.monitor_response is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "unimplemented.")
        return self.monitor_response


@contextlib.contextmanager
def fake_server(servicer: FakeProfiler, host: str = "127.0.0.1", port: int = 0):
    """`host` / `port`: e.g. two workers on 127.0.0.1 and 127.0.0.2 with the same profiler port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_ProfilerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"{host}:{port}")
    server.start()
    try:
        yield f"{host}:{port}"
    finally:
        server.stop(grace=None)


def response_with(xspace_bytes: bytes) -> pb.ProfileResponse:
    r = pb.ProfileResponse()
    r.xspace.ParseFromString(xspace_bytes)
    return r


def empty_response() -> pb.ProfileResponse:
    return pb.ProfileResponse(empty_trace=True)


CLI_TIMEOUT_S = 120


def tputui(*args, timeout=CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    """The real command line in a subprocess (plain text: NO_COLOR)."""
    return subprocess.run([sys.executable, "-m", "tputui.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, NO_COLOR="1"))



class PtyCommand:
    """`python -m tputui.cli ARGS` on a pseudo-terminal of its own (its controlling terminal, 100x30),
    as a user runs it: keys are written to it, its screen output is collected, and closing the
    terminal (`hang_up`) sends it SIGHUP the way closing a terminal window or losing ssh does."""

    def __init__(self, *args: str, script: str | None = None, env: dict | None = None):
        import fcntl
        import pty
        import struct
        import termios

        argv = [sys.executable, script] if script else [sys.executable, "-m", "tputui.cli"]
        argv += list(args)
        full_env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30", **(env or {}))
        full_env["PYTHONPATH"] = os.pathsep.join([str(HELPERS.parent), str(HELPERS.parents[1]),
                                                  full_env.get("PYTHONPATH", "")])
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: nothing but exec (this process has threads)
            try:
                os.execve(argv[0], argv, full_env)
            finally:
                os._exit(127)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.output = bytearray()
        self._lock = threading.Lock()
        self.status: int | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # the terminal closed (the child ended, or we hung up)
                return
            if not chunk:
                return
            with self._lock:
                self.output += chunk

    def text(self) -> str:
        with self._lock:
            return self.output.decode("utf-8", "replace")

    def wait_for(self, needle: str, timeout: float = 90.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in self.text():
                return True
            if self.exited():
                return needle in self.text()
            time.sleep(0.05)
        return False

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def hang_up(self) -> None:
        os.close(self.fd)

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def wait(self, timeout: float = 60.0) -> int | None:
        """The exit code (negative: the signal that killed it), or None while it still runs."""
        end = time.monotonic() + timeout
        while not self.exited() and time.monotonic() < end:
            time.sleep(0.05)
        if self.status is None:
            return None
        self._reader.join(timeout=5)
        return os.waitstatus_to_exitcode(self.status)

    def kill(self) -> None:
        import signal

        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            self.wait(10)
