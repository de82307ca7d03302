"""`tputui capture`: the command line over capture.py (one window) and snapshots.py (--continuous).

Its own module so capture.py and snapshots.py import each other in one direction only
(snapshots uses capture's run folders and writer).
"""
from __future__ import annotations

import argparse
import sys
import threading
import time

from tputui.live.capture import capture
from tputui.live.client import LiveError, TracerOptions
from tputui.live.snapshots import capture_continuous
from tputui.live.tpu_resolve import add_tpu_arguments, addresses_from


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "%(prog)s (ADDRESS[,ADDRESS...] | --tpu NAME) LOGDIR [options]"
    parser.add_argument("targets", nargs="+", metavar="ADDRESS LOGDIR",
                        help="profiler server(s) as host:port or grpc://host:port (comma-separated for "
                             "several workers; omit with --tpu), then the logdir to write "
                             "LOGDIR/plugins/profile/<run>/<host_port>.xplane.pb into")
    parser.add_argument("--duration-ms", type=int, default=2000, help="capture length (default 2000)")
    parser.add_argument("--num-tracing-attempts", type=int, default=3,
                        help="tries while the trace comes back empty (default 3)")
    parser.add_argument("--host-tracer-level", type=int, default=2, choices=[0, 1, 2, 3],
                        help="host TraceMe detail: 0 off, 1 user, 2 +framework (default), 3 verbose")
    parser.add_argument("--device-tracer-level", type=int, default=1, choices=[0, 1],
                        help="device (TPU/GPU) tracing: 1 on (default), 0 off")
    parser.add_argument("--python-tracer-level", type=int, default=0, choices=[0, 1],
                        help="Python function tracing: 0 off (default), 1 on")
    parser.add_argument("--no-dataset-ops", action="store_true", help="leave tf.data ops out of the trace")
    parser.add_argument("--continuous", action="store_true",
                        help="continuous profiling: start the server's ring buffer, wait --duration-ms, "
                             "save its snapshot as the run (servers that support it, e.g. JAX's)")
    parser.add_argument("--keep-running", action="store_true",
                        help="with --continuous: leave continuous profiling running after the snapshot (else it "
                             "is stopped on every exit, Ctrl+C and kill included, except kill -9)")
    add_tpu_arguments(parser)


def split_targets(targets: list[str], tpu: str | None) -> tuple[str | None, str]:
    """[ADDRESS] LOGDIR -> (address or None, logdir), checking the count against --tpu."""
    want = 1 if tpu else 2
    if len(targets) != want:
        usage = "capture --tpu NAME LOGDIR" if tpu else "capture ADDRESS[,ADDRESS...] LOGDIR (or --tpu NAME LOGDIR)"
        raise LiveError(f"expected: tputui {usage}")
    return (None, targets[0]) if tpu else (targets[0], targets[1])


def tracer_from_args(args) -> TracerOptions:
    return TracerOptions(host_tracer_level=args.host_tracer_level,
                         device_tracer_level=args.device_tracer_level,
                         python_tracer_level=args.python_tracer_level,
                         include_dataset_ops=not args.no_dataset_ops)


class _Ticker:
    """Elapsed seconds on one stderr line while a capture runs (only on a terminal)."""

    def __init__(self, stream, duration_ms: int):
        self.stream, self.total = stream, duration_ms / 1000.0
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.active = stream.isatty()

    def __enter__(self):
        if self.active:
            self._thread.start()
        return self

    def restart(self) -> None:
        self._t0 = time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            el = time.monotonic() - self._t0
            phase = "capturing" if el < self.total else "waiting for the server"
            self.stream.write(f"\r  {el:5.1f} s / {self.total:.1f} s  {phase}   ")
            self.stream.flush()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self.active:
            self._thread.join()
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


def main(args: argparse.Namespace) -> int:
    address, logdir = split_targets(args.targets, args.tpu)
    err = sys.stderr
    addresses = addresses_from(address, args.tpu, args.zone, args.project, args.profiler_port,
                               say=lambda m: print(m, file=err, flush=True))
    with _Ticker(err, args.duration_ms) as ticker:
        def say(msg: str) -> None:
            if ticker.active:
                err.write("\r" + " " * 60 + "\r")
            print(msg, file=err, flush=True)
            ticker.restart()

        if getattr(args, "continuous", False):
            result = capture_continuous(addresses, logdir, duration_ms=args.duration_ms, tracer=tracer_from_args(args),
                                        keep_running=args.keep_running, progress=say)
        else:
            result = capture(addresses, logdir, duration_ms=args.duration_ms, attempts=args.num_tracing_attempts,
                             tracer=tracer_from_args(args), progress=say)
    for h in result.hosts:
        if h.server_side:
            print(f"{h.address}: the server wrote the profile itself (it ignores emit_xspace): {h.path}")
        else:
            print(f"Wrote {h.path} ({h.size / 1e6:.1f} MB)")
    for a in result.empty:
        print(f"{a}: no trace events (nothing ran there during the capture)", file=err)
    if result.failed:
        lines = "; ".join(result.failed.values())
        raise LiveError(f"captured {len(result.hosts)} of {len(addresses)} workers into run {result.run}; {lines}")
    print(f"Run {result.run} in {result.logdir}; open it with: tputui {result.logdir}")
    return 0
