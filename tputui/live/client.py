"""A thin client for `tensorflow.ProfilerService` (the gRPC service JAX / TF servers expose).

Every call has a deadline, and gRPC failures become a `LiveError` whose message is one line
a user can act on. Facts about how real servers answer are in PROTOCOL.md.
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass

import grpc

from tputui.data import pbwire
from tputui.errors import UserError
from tputui.proto import profiler_service_pb2 as service_pb2
from tputui.proto import profiler_service_pb2_grpc as service_grpc

# XSpace captures of busy jobs run to hundreds of MB; gRPC's default cap is 4 MB.
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
]
# Time a server may take beyond the capture itself (starting tracers, serializing the XSpace).
PROFILE_GRACE_S = 30.0
CONNECT_TIMEOUT_S = 10.0


class LiveError(UserError):
    """A live-profiling failure: the message is the one line users see."""


class ServerBusyError(LiveError):
    """The server is already running a profiling session (someone else is capturing)."""


class CancelledError(LiveError):
    """The call was cancelled from our side (the monitor is stopping)."""


class UnimplementedError(LiveError):
    """The server does not implement this RPC (JAX / TF servers answer Monitor this way)."""


class NoSessionError(LiveError):
    """GetSnapshot found no continuous-profiling session (it ended, or the server restarted)."""


_ADDRESS = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<host>[^:\s\[\]/]+)):(?P<port>\d{1,5})$")


def normalize_address(text: str) -> str:
    """`host:port` or `grpc://host:port` -> `host:port`; anything else is a LiveError."""
    a = text.strip()
    if a.startswith("grpc://"):
        a = a[len("grpc://"):]
    a = a.rstrip("/")
    m = _ADDRESS.match(a)
    if not m or not 0 < int(m["port"]) < 65536:
        raise LiveError(f"bad address {text.strip()!r}: expected host:port or grpc://host:port")
    return a


def parse_addresses(text: str) -> list[str]:
    """A comma-separated address list (one per worker) -> normalized, de-duplicated addresses."""
    parts = [p for p in (s.strip() for s in text.split(",")) if p]
    if not parts:
        raise LiveError("no profiler address given (host:port, grpc://host:port, or --tpu NAME)")
    return list(dict.fromkeys(normalize_address(p) for p in parts))


def host_file_name(address: str) -> str:
    """The file name real clients give a remote capture: `host:port` -> `host_port`."""
    return address.replace("[", "").replace("]", "").replace(":", "_")


def describe_rpc_error(e: grpc.RpcError, address: str, what: str, timeout: float | None) -> LiveError:
    """One line for a failed RPC, naming the address and what to check."""
    code = e.code() if hasattr(e, "code") else None
    details = (e.details() if hasattr(e, "details") else str(e)) or ""
    details = details.splitlines()[0] if details else ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return LiveError(
            f"failed to connect to {address}: no profiler server is answering there "
            f"(start one with jax.profiler.start_server(PORT) or tf.profiler.experimental.server.start(PORT))")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        limit = f" within {timeout:g} s" if timeout else ""
        return LiveError(f"{what} on {address}: deadline exceeded (no answer{limit}; is this a profiler port?)")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return UnimplementedError(f"{what} on {address}: the server does not implement it ({details})")
    if code == grpc.StatusCode.NOT_FOUND and "continuous profiling" in details.lower():
        return NoSessionError(f"{what} on {address}: {details}")
    if code == grpc.StatusCode.ALREADY_EXISTS or (code == grpc.StatusCode.INTERNAL
                                                  and "another profiling session" in details.lower()):
        return ServerBusyError(f"{what} on {address}: another profiling session is active on that server")
    name = code.name if code is not None else "ERROR"
    return LiveError(f"{what} on {address} failed: {name}: {details}")


def server_answers(address: str, timeout: float) -> bool:
    """A gRPC server is listening at `address` (the connection is up within `timeout`)."""
    channel = grpc.insecure_channel(normalize_address(address))
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


@dataclass(frozen=True)
class TracerOptions:
    """The ProfileOptions users choose (capture_tpu_profile's flags)."""

    host_tracer_level: int = 2
    device_tracer_level: int = 1
    python_tracer_level: int = 0
    include_dataset_ops: bool = True
    enable_hlo_proto: bool = True


def profile_request(address: str, duration_ms: int, tracer: TracerOptions, *, session_id: str = "",
                    repository_root: str = "", emit_xspace: bool = True) -> service_pb2.ProfileRequest:
    """A ProfileRequest as real clients send it.

    The capture length must be in `opts.duration_ms` (servers ignore the top-level field alone
    and return an empty trace at once); `emit_xspace` asks for the XSpace in the response.
    `repository_root` / `session_id` / `host_name` tell servers that ignore emit_xspace where
    to write the file themselves.
    """
    req = service_pb2.ProfileRequest(
        duration_ms=duration_ms, max_events=0, repository_root=repository_root,
        session_id=session_id, host_name=address, emit_xspace=emit_xspace)
    o = req.opts
    o.version = 1
    o.duration_ms = duration_ms
    o.host_tracer_level = tracer.host_tracer_level
    o.device_tracer_level = tracer.device_tracer_level
    o.python_tracer_level = tracer.python_tracer_level
    o.include_dataset_ops = tracer.include_dataset_ops
    o.enable_hlo_proto = tracer.enable_hlo_proto
    if repository_root:
        o.repository_path = repository_root
    return req


class CancellableCalls:
    """gRPC calls another thread can cancel (`cancel()`), so stopping never waits out a call.

    Subclasses set `address` and say how a failed call reads (`_describe`)."""

    address: str

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inflight = None
        self._wake: threading.Event | None = None  # set by cancel(): a call that ends itself (profile)
        self._cancelled = False  # sticky: a call started after cancel() is cancelled at once

    def _describe(self, e: grpc.RpcError, what: str, timeout: float) -> LiveError:
        raise NotImplementedError

    def _call(self, method, request, what: str, timeout: float):
        call = method.future(request, timeout=timeout)
        with self._lock:
            self._inflight = call
            if self._cancelled:  # cancel() came while the call was being issued (the server may have it)
                call.cancel()
        try:
            return self._result(call, what, timeout)
        finally:
            with self._lock:
                self._inflight = None

    def _result(self, call, what: str, timeout: float):
        try:
            return call.result()
        except grpc.FutureCancelledError:
            raise CancelledError(f"{what} on {self.address} cancelled") from None
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.CANCELLED:
                raise CancelledError(f"{what} on {self.address} cancelled") from None
            raise self._describe(e, what, timeout) from None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._inflight is not None:
                self._inflight.cancel()
            if self._wake is not None:
                self._wake.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled


# How a stopped capture window ends (see ProfilerClient.profile): Terminate's own deadline, then how
# long the server may take to answer the window it cut short (its trace so far is collected and
# sent; the session is gone once the answer is here) before the call is cancelled anyway.
TERMINATE_TIMEOUT_S = 2.0
END_WAIT_S = 5.0
# A server without Terminate runs the window out: the time it may take past the window's end.
RUN_OUT_SLACK_S = 2.0


class ProfilerClient(CancellableCalls):
    """One server's ProfilerService stub with deadlines on every call."""

    def __init__(self, address: str, connect_timeout: float = CONNECT_TIMEOUT_S):
        super().__init__()
        self.address = normalize_address(address)
        self.connect_timeout = connect_timeout
        self._channel = grpc.insecure_channel(self.address, options=_CHANNEL_OPTIONS)
        self._stub = service_grpc.ProfilerServiceStub(self._channel)
        # Profile answers stay bytes: the XSpace inside is sliced out, never parsed and re-serialized
        # (captures run to hundreds of MB; our decoder reads the bytes directly).
        self._profile_raw = self._channel.unary_unary(
            "/tensorflow.ProfilerService/Profile",
            request_serializer=service_pb2.ProfileRequest.SerializeToString,
            response_deserializer=None, _registered_method=True)
        self._snapshot_raw = self._channel.unary_unary(
            "/tensorflow.ProfilerService/GetSnapshot",
            request_serializer=service_pb2.GetSnapshotRequest.SerializeToString,
            response_deserializer=None, _registered_method=True)
        self.owns_continuous = False  # a continuous-profiling session we started runs on the server
        self.ending_until: float | None = None  # monotonic time a stopped window is waited for until

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> ProfilerClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _describe(self, e: grpc.RpcError, what: str, timeout: float) -> LiveError:
        return describe_rpc_error(e, self.address, what, timeout)

    def profile(self, request: service_pb2.ProfileRequest) -> ProfileReply:
        """Run one capture; the deadline is its duration plus a grace for the server's work.

        cancel() during the window ends the server's session instead of abandoning it (end_window),
        then raises CancelledError. (A client that dies is safe too: the server stops a Profile
        whose connection is gone within a millisecond.)"""
        if self._cancelled:  # stopped before the window was asked for: never start one
            raise CancelledError(f"capture on {self.address} cancelled")
        if not request.session_id:  # Terminate names the window by it: never an empty or shared one
            named = service_pb2.ProfileRequest()
            named.CopyFrom(request)
            named.session_id = f"tputui-{os.getpid()}-{time.time_ns()}"
            request = named
        timeout = request.opts.duration_ms / 1000.0 + PROFILE_GRACE_S
        started = time.monotonic()
        call = self._profile_raw.future(request, timeout=timeout)
        wake = threading.Event()
        call.add_done_callback(lambda _call: wake.set())
        with self._lock:
            self._wake = wake
            if self._cancelled:
                wake.set()
        try:
            wake.wait()
        except BaseException:  # interrupted (a caller on the main thread): end the window, then go on
            if not call.done():
                self.end_window(call, request, started)
            raise
        finally:
            with self._lock:
                self._wake = None
        if not call.done():
            self.end_window(call, request, started)
            raise CancelledError(f"capture on {self.address} cancelled")
        return ProfileReply.from_bytes(self._result(call, "capture", timeout))

    def end_window(self, call, request: service_pb2.ProfileRequest, started: float) -> bool:
        """End a window cut short so the server is free for the next capture at once: Terminate
        (its session id) makes the server stop tracing and answer with what it has, and that answer
        comes after its session is gone, so it is waited for (END_WAIT_S). A server without
        Terminate runs the window out (waited for, then cancelled). True when the server answered."""
        try:
            self._stub.Terminate(service_pb2.TerminateRequest(session_id=request.session_id),
                                 timeout=TERMINATE_TIMEOUT_S)
            self.ending_until = time.monotonic() + END_WAIT_S
        except grpc.RpcError:
            self.ending_until = started + request.opts.duration_ms / 1000.0 + RUN_OUT_SLACK_S
        done = threading.Event()
        call.add_done_callback(lambda _call: done.set())
        answered = done.wait(max(0.0, self.ending_until - time.monotonic()))
        call.cancel()  # not answered in time: the server sees the cancellation at its next check
        self.ending_until = None
        return answered

    def start_continuous(self, request: service_pb2.ProfileRequest) -> None:
        """Start continuous profiling. Never abandoned half-way: only its answer says whether the
        session the server may now hold is ours (ALREADY_EXISTS: someone else's), so an interrupt
        (Ctrl+C, a signal) waits for it before going on; `owns_continuous` says ours runs."""
        call = self._stub.StartContinuousProfiling.future(request, timeout=self.connect_timeout)
        try:
            self._result(call, "continuous profiling", self.connect_timeout)
        except LiveError:
            raise
        except BaseException:
            try:
                call.result(timeout=self.connect_timeout)
                self.owns_continuous = True
            except Exception:  # noqa: BLE001 - refused or unanswered: nothing of ours runs
                pass
            raise
        self.owns_continuous = True

    def stop_continuous(self, timeout: float | None = None) -> None:
        """Stop the server's continuous profiling (works after cancel(): it is how a stop ends)."""
        t = timeout or self.connect_timeout
        call = self._stub.StopContinuousProfiling.future(service_pb2.StopContinuousProfilingRequest(), timeout=t)
        try:
            self._result(call, "stopping continuous profiling", t)
        except NoSessionError:
            pass  # already gone (the server restarted): nothing runs
        self.owns_continuous = False

    def snapshot(self, timeout: float = PROFILE_GRACE_S) -> ProfileReply:
        """The running continuous-profiling session's buffer (on JAX: since it started, at most ~10 s)."""
        raw = self._call(self._snapshot_raw, service_pb2.GetSnapshotRequest(), "snapshot", timeout)
        return ProfileReply.from_bytes(raw)

    def monitor(self, duration_ms: int, level: int) -> service_pb2.MonitorResponse:
        req = service_pb2.MonitorRequest(duration_ms=duration_ms, monitoring_level=level, timestamp=True)
        return self._call(self._stub.Monitor, req, "monitor", duration_ms / 1000.0 + self.connect_timeout)


# ProfileResponse fields (PROTOCOL.md): tool_data=6, empty_trace=7, xspace=8.
_EMPTY_TRACE, _XSPACE = 7, 8
# Below this size an XSpace is parsed to check it holds an event; anything larger surely does.
_SMALL_XSPACE = 64 * 1024


@dataclass
class ProfileReply:
    """A ProfileResponse read from its wire bytes: the flag and the serialized XSpace (or None)."""

    empty_trace: bool = False
    xspace: bytes | None = None  # serialized tensorflow.profiler.XSpace, as the server sent it

    @classmethod
    def from_bytes(cls, data: bytes) -> ProfileReply:
        """Walk the top-level fields only (a handful); the XSpace is a zero-parse slice."""
        out = cls()
        try:
            for number, wire, value in pbwire.fields(memoryview(data)):
                if number == _EMPTY_TRACE and wire == 0:
                    out.empty_trace = bool(value)
                elif number == _XSPACE and wire == 2:  # a repeated message field would merge; servers send one
                    out.xspace = bytes(value) if out.xspace is None else out.xspace + bytes(value)
        except pbwire.WireError as e:
            raise LiveError(f"the server's Profile answer is not a readable ProfileResponse ({e})") from None
        return out

    def has_events(self) -> bool:
        if not self.xspace:
            return False
        if len(self.xspace) >= _SMALL_XSPACE:
            return True
        from tputui.proto import xplane_pb2

        xs = xplane_pb2.XSpace.FromString(self.xspace)
        return any(len(line.events) for plane in xs.planes for line in plane.lines)


def trace_is_empty(reply: ProfileReply) -> bool:
    """True when a capture saw nothing: the server's flag, or an XSpace without any event.

    A reply with no XSpace and no flag is a server-side write (the server ignores emit_xspace)."""
    if reply.empty_trace:
        return True
    return reply.xspace is not None and not reply.has_events()
