"""`tputui capture` from a server whose XSpace is garbage (issue #33 item 6): nothing is written
and the capture fails in one line (exit 2), instead of reporting a profile that cannot be opened.
The server is a real gRPC server on 127.0.0.1 that answers Profile with raw bytes (a real
profiler server does not send garbage on demand)."""
from __future__ import annotations

import contextlib
import random
from concurrent import futures

import grpc
from helpers.live import tputui


def _profile_response_with(xspace: bytes) -> bytes:
    """A ProfileResponse whose `xspace` field (8) holds these bytes as they are."""
    n, size = len(xspace), b""
    while True:
        size += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            break
    return bytes([8 << 3 | 2]) + size + xspace


@contextlib.contextmanager
def raw_profile_server(answer: bytes):
    handler = grpc.method_handlers_generic_handler("tensorflow.ProfilerService", {
        "Profile": grpc.unary_unary_rpc_method_handler(lambda request, context: answer)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def test_a_garbage_profile_is_not_written_and_fails_in_one_line(tmp_path):
    garbage = random.Random(33).randbytes(100_000)
    with raw_profile_server(_profile_response_with(garbage)) as address:
        p = tputui("capture", address, str(tmp_path / "logs"), "--duration-ms", "100", "--num-tracing-attempts", "1")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Wrote" not in p.stdout
    (line,) = [s for s in p.stderr.splitlines() if s.startswith("tputui: error:")]
    assert f"{address}: the server's profile is not a readable XSpace (" in line and line.endswith("nothing written")
    assert not list(tmp_path.rglob("*.xplane.pb"))
