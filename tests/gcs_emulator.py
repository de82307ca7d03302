"""A real local GCS for tests and benches: gcp-storage-emulator in a subprocess, behind a proxy.

The emulator (`gcp_storage_emulator start --in-memory`, see `_LAUNCH`) serves the GCS JSON API on
127.0.0.1. Clients talk to it through `RecordingProxy`, a small in-process HTTP forwarder that

- records every request (method, path, query, headers, start/end times) so tests can count
  list requests and downloads and prove nothing was written;
- pages object listings at 1000 items like GCS does (the emulator returns everything at once);
- answers `ifGenerationMatch=0` uploads of existing objects with 412, as GCS does (the emulator
  ignores preconditions);
- serves objects stored with Content-Encoding: gzip the way GCS does (whole, Range ignored);
- injects faults on request: an HTTP error with a GCS-style JSON body (403, 401, ...) or a dropped
  connection, because the emulator itself never refuses anyone.

Set STORAGE_EMULATOR_HOST to `proxy.url`. Helpers that seed or inspect buckets talk to the
emulator directly, so they never show up in the proxy's log.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GCS_PAGE = 1000  # GCS returns at most 1000 objects per list page
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host",
                "proxy-connection", "upgrade", "te", "trailer"}


# Two launch tweaks that change speed, not behaviour; every request is still served by the
# emulator's own handlers and storage:
# - it rewrites its whole metadata JSON after every object write (quadratic: 1800 uploads took
#   30 s); in memory mode nothing ever reads that JSON back, so the rewrite is skipped;
# - its HTTPServer listens with a backlog of 5, so a client opening 8 connections at once (our
#   parallel ranged reads) gets SYNs dropped and waits 1 s to retry; GCS has no such limit.
_LAUNCH = """
import socketserver, sys
socketserver.TCPServer.request_queue_size = 128
from gcp_storage_emulator import __main__ as cli, storage
_write = storage.Storage._write_config_to_file
def _write_unless_in_memory(self):
    if not self._use_memory_fs:
        _write(self)
storage.Storage._write_config_to_file = _write_unless_in_memory
cli.main(sys.argv[1:])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    started: float = 0.0
    ended: float = 0.0
    status: int = 0

    @property
    def object(self) -> str | None:
        """The object name a request is about (unquoted), if any."""
        return urllib.parse.unquote(self.path.split("/o/", 1)[1]) if "/o/" in self.path else None

    @property
    def bucket(self) -> str | None:
        return self.path.split("/b/", 1)[1].split("/", 1)[0] if "/b/" in self.path else None

    @property
    def is_list(self) -> bool:
        return self.method == "GET" and self.path.startswith("/storage/v1/b/") and self.path.endswith("/o")

    @property
    def is_download(self) -> bool:
        return self.method == "GET" and (self.path.startswith("/download/") or self.query.get("alt") == "media")

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")


# A fault: given a request, None (forward it), "drop" (close the connection unanswered) or
# (status, message) for a GCS-style JSON error.
Fault = Callable[[Request], "None | str | tuple[int, str]"]


def gcs_error(status: int, message: str, reason: str = "forbidden") -> bytes:
    return json.dumps({"error": {"code": status, "message": message,
                                 "errors": [{"message": message, "domain": "global", "reason": reason}]}}).encode()


class Emulator:
    """gcp-storage-emulator in a subprocess on 127.0.0.1 (in memory), plus direct helpers."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, "start", "--host", "127.0.0.1",
             "--port", str(self.port), "--in-memory", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/", timeout=2).read()
                break
            except OSError as e:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the GCS emulator did not start") from e
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _call(self, method: str, path: str, body: bytes | None = None, ctype: str = "application/json"):
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers={"Content-Type": ctype} if body is not None else {})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
        return json.loads(data) if data else None

    def create_bucket(self, bucket: str) -> None:
        self._call("POST", "/storage/v1/b", json.dumps({"name": bucket}).encode())

    def upload(self, bucket: str, name: str, data: bytes) -> dict:
        q = urllib.parse.urlencode({"uploadType": "media", "name": name})
        return self._call("POST", f"/upload/storage/v1/b/{bucket}/o?{q}", data, "application/octet-stream")

    def upload_tree(self, local_root: str, bucket: str, prefix: str) -> int:
        """Copy every file under local_root to gs://bucket/prefix/...; returns the count."""
        n = 0
        for dirpath, _, filenames in os.walk(local_root):
            for fn in sorted(filenames):
                p = os.path.join(dirpath, fn)
                rel = os.path.relpath(p, local_root).replace(os.sep, "/")
                with open(p, "rb") as f:
                    self.upload(bucket, f"{prefix}/{rel}" if prefix else rel, f.read())
                n += 1
        return n

    def delete(self, bucket: str, name: str) -> None:
        self._call("DELETE", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}")

    def objects(self, bucket: str) -> dict[str, tuple]:
        """name -> (generation, metageneration, size, md5): a bucket's state, for comparisons."""
        items = (self._call("GET", f"/storage/v1/b/{bucket}/o") or {}).get("items") or []
        return {o["name"]: (o.get("generation"), o.get("metageneration"), str(o.get("size")), o.get("md5Hash"))
                for o in items}

    def patch(self, bucket: str, name: str, fields: dict) -> dict:
        return self._call("PATCH", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}",
                          json.dumps(fields).encode())

    def metadata(self, bucket: str, name: str) -> dict | None:
        try:
            return self._call("GET", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def stored_bytes(self, bucket: str, name: str) -> bytes:
        q = urllib.parse.quote(name, safe="")
        with urllib.request.urlopen(f"{self.url}/download/storage/v1/b/{bucket}/o/{q}?alt=media", timeout=60) as r:
            return r.read()

    def exists(self, bucket: str, name: str) -> bool:
        try:
            self._call("GET", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}")
            return True
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise


@dataclass
class RecordingProxy:
    """Forwards HTTP to the emulator; records requests; pages listings; injects faults."""

    emulator: Emulator
    page: int = GCS_PAGE
    log: list[Request] = field(default_factory=list)
    fault: Fault | None = None

    def __post_init__(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _body(self) -> bytes:
                n = self.headers.get("Content-Length")
                if n:
                    return self.rfile.read(int(n))
                if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return b""

            def _reply(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (cancelled part)
                    self.close_connection = True

            def _handle(self):
                body = self._body()
                url = urllib.parse.urlsplit(self.path)
                query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
                req = Request(self.command, url.path, query, {k.lower(): v for k, v in self.headers.items()},
                              started=time.monotonic())
                proxy.log.append(req)
                try:
                    fault = proxy.fault(req) if proxy.fault else None
                    if fault == "drop":
                        self.close_connection = True
                        req.status = -1
                        return
                    if fault:
                        status, message = fault
                        req.status = status
                        self._reply(status, gcs_error(status, message), [("Content-Type", "application/json")])
                        return
                    if self._precondition_failed(req, body):
                        req.status = 412
                        self._reply(412, gcs_error(412, "At least one of the pre-conditions you specified did not hold.",
                                                   "conditionNotMet"), [("Content-Type", "application/json")])
                        return
                    if req.is_download and self._served_gzipped(req):
                        return
                    status, headers, data = self._forward(req, body)
                    if req.is_list and status == 200:
                        data = self._paged(req, data)
                    req.status = status
                    self._reply(status, data, headers)
                finally:
                    req.ended = time.monotonic()

            def _precondition_failed(self, req: Request, body: bytes) -> bool:
                if req.method != "POST" or req.query.get("ifGenerationMatch") != "0":
                    return False
                bucket = req.path.split("/b/", 1)[-1].split("/", 1)[0]
                name = req.query.get("name")
                # Multipart and resumable uploads carry the name in their JSON metadata part.
                for line in ([] if name else body.split(b"\n")):
                    if line.startswith(b"{"):
                        name = json.loads(line).get("name")
                        break
                return bool(name) and proxy.emulator.exists(bucket, name)

            def _served_gzipped(self, req: Request) -> bool:
                """GCS serves objects stored with Content-Encoding: gzip whole (Range ignored) and,
                to clients that accept gzip, compressed with that header; the emulator does neither."""
                meta = proxy.emulator.metadata(req.bucket, req.object)
                if not meta or (meta.get("contentEncoding") or "").lower() != "gzip":
                    return False
                req.status = 200
                self._reply(200, proxy.emulator.stored_bytes(req.bucket, req.object),
                            [("Content-Type", meta.get("contentType") or "application/octet-stream"),
                             ("Content-Encoding", "gzip")])
                return True

            def _forward(self, req: Request, body: bytes):
                path = self.path
                if req.is_list:  # the proxy does the paging: ask the emulator for everything
                    q = {k: v for k, v in req.query.items() if k not in ("pageToken", "maxResults")}
                    path = req.path + ("?" + urllib.parse.urlencode(q) if q else "")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                headers["Host"] = self.headers.get("Host", "")
                conn = http.client.HTTPConnection("127.0.0.1", proxy.emulator.port, timeout=120)
                try:
                    conn.request(self.command, path, body=body or None, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                    out = [(k, v) for k, v in r.getheaders() if k.lower() not in _HOP_HEADERS]
                    return r.status, out, data
                finally:
                    conn.close()

            def _paged(self, req: Request, data: bytes) -> bytes:
                doc = json.loads(data)
                items = sorted(doc.get("items") or [], key=lambda o: o["name"])
                start = int(req.query.get("pageToken") or 0)
                size = min(int(req.query.get("maxResults") or proxy.page), proxy.page)
                doc["items"] = items[start:start + size]
                if start + size < len(items):
                    doc["nextPageToken"] = str(start + size)
                else:
                    doc.pop("nextPageToken", None)
                return json.dumps(doc).encode()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="gcs-proxy", daemon=True)
        self._thread.start()

    def reset(self) -> None:
        self.log.clear()
        self.fault = None

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # What the log says.
    def lists(self) -> list[Request]:
        return [r for r in self.log if r.is_list]

    def downloads(self) -> list[Request]:
        return [r for r in self.log if r.is_download]

    def writes(self) -> list[Request]:
        return [r for r in self.log if r.is_write]

    def max_in_flight(self, requests: list[Request]) -> int:
        """How many of these requests the proxy was serving at the same time, at most."""
        edges = sorted([(r.started, 1) for r in requests] + [(r.ended, -1) for r in requests])
        best = cur = 0
        for _, d in edges:
            cur += d
            best = max(best, cur)
        return best
