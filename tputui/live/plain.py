"""`tputui monitor --plain`: the live figures as lines (capture_tpu_profile's wording where a
figure exists): a block per runtime-metrics read (one line per chip) and per worker window."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable

from tputui import format as fmt
from tputui.live.client import LiveError
from tputui.live.feed import LiveFeed
from tputui.live.monitor import MonitorSession, Sample, save_window
from tputui.live.monitor_state import MonitorState
from tputui.live.runtime_metrics import Percentiles, RuntimeReading

GIB = float(1 << 30)


def _pct(v: float | None, digits: int = 1) -> str:
    return fmt.percent(v, digits, missing="n/a")


def _ms(v: float | None) -> str:
    return fmt.duration_ms(v, plain=True)


def plain_lines(s: Sample, level: int) -> list[str]:
    """The lines of one cycle, in capture_tpu_profile's wording where a figure exists."""
    stamp = time.strftime("%H:%M:%S", time.localtime(s.time))
    if s.error:
        retry = f"; retrying in {s.retry_in_s:g} s" if s.retry_in_s else ""
        return [f"Timestamp: {stamp}", f"Error: {s.error}{retry}"]
    if s.empty:
        return [f"Timestamp: {stamp}",
                f"No trace event is collected in this {s.window_ms} ms window (the job is idle or not started)"]
    dtype = s.device_type or "unknown"
    host_only = s.from_trace and s.cores is None
    unit = "TPU" if dtype.upper().startswith("TPU") else "Device"
    mxu = _pct(s.mxu_pct, 3) if s.mxu_pct is not None else "n/a (no matrix-unit counters or FLOPs in the trace)"
    if s.mxu_pct is not None and s.mxu_source:
        mxu += f" ({s.mxu_source})"
    out = [f"Timestamp: {stamp}",
           f"{unit} type: {dtype}" + (" (host only: no TPU or GPU in the trace)" if host_only else "")]
    if level >= 2 and not host_only:
        out.append(f"Number of {unit} cores: {s.cores if s.cores is not None else 'n/a'}")
        out.append(f"{unit} idle time (lower is better): {_pct(s.idle_pct)}")
    out.append(f"Utilization of TPU Matrix Units (higher is better): {mxu}")
    if s.utilization_pct is not None:
        out.append(f"{unit} busy time (duty cycle): {_pct(s.utilization_pct)}")
    if level >= 2:
        if s.from_trace and s.step_ms_avg is None:
            out.append("Step time: n/a (no step markers in the window)")
        else:
            steps = f" over {s.steps} steps" if s.from_trace else ""
            out.append(f"Step time: {_ms(s.step_ms_avg)} (avg), {_ms(s.step_ms_min)} (min), "
                       f"{_ms(s.step_ms_max)} (max){steps}")
        if s.infeed_pct_avg is None:
            out.append("Infeed percentage: n/a")
        else:
            out.append(f"Infeed percentage: {_pct(s.infeed_pct_avg, 3)} (avg), {_pct(s.infeed_pct_min, 3)} (min), "
                       f"{_pct(s.infeed_pct_max, 3)} (max)")
    return out




def _us(v: float) -> str:
    return f"{v / 1000:.3f} ms" if v >= 1000 else f"{v:.1f} us"


def percentile_text(p: Percentiles) -> str:
    return f"p50 {_us(p.p50)}, p90 {_us(p.p90)}, p95 {_us(p.p95)}, p99.9 {_us(p.p999)}"


def runtime_lines(r: RuntimeReading) -> list[str]:
    """One read of libtpu's runtime metrics: a line per chip, then the latency distributions."""
    stamp = time.strftime("%H:%M:%S", time.localtime(r.time))
    if r.error:
        retry = f"; retrying in {r.retry_in_s:g} s" if r.retry_in_s else ""
        return [f"Timestamp: {stamp}", f"Runtime metrics error: {r.error}{retry}"]
    cores = f", {r.cores_per_chip} TensorCores per chip" if r.cores_per_chip > 1 else ""
    out = [f"Timestamp: {stamp}", f"libtpu runtime metrics ({r.address}): {len(r.chips)} chips{cores}"]
    for c in r.chips:
        bits = []
        if c.hbm_used is not None and c.hbm_total:
            bits.append(f"HBM {c.hbm_used / GIB:.2f} GiB / {c.hbm_total / GIB:.2f} GiB ({c.hbm_pct:.1f}%)")
        bits.append(f"duty cycle {_pct(c.duty_cycle_pct)}")
        if c.tensorcore_util_pct is not None:
            bits.append(f"TensorCore utilization {_pct(c.tensorcore_util_pct)}")
        if c.hlo_queue is not None:
            bits.append(f"HLO queue {c.hlo_queue}")
        if c.hlo_exec_us is not None:
            bits.append(f"HLO execution {percentile_text(c.hlo_exec_us)}")
        out.append(f"Chip {c.chip}: " + ", ".join(bits))
    for label, p in r.latencies_us.items():
        out.append(f"{label} latency: {percentile_text(p)} ({p.count:,} transfers)")
    return out


def worker_lines(s: Sample, level: int, state: MonitorState) -> list[str]:
    """A worker's window; with several workers, which worker it is and which one is slowest."""
    lines = plain_lines(s, level)
    if len(state.workers) > 1:
        lines.insert(1, f"Worker: {s.address}")
        slow = state.slowest()
        if slow is not None and s.ok:
            lines.append(f"Slowest worker: {slow.address} ({slow.step_ms_avg:.3f} ms avg step time)")
    return lines


def run_plain(feed: LiveFeed | MonitorSession, num_queries: int, out=None, err=None,
              save_windows: str | None = None, on_window: Callable[[str], None] | None = None) -> int:
    """Print `num_queries` cycles; exit status 2 if nothing was ever reached or the last cycle failed."""
    out, err = out or sys.stdout, err or sys.stderr
    if isinstance(feed, MonitorSession):
        feed = LiveFeed([feed])
    state = MonitorState(feed.addresses, runtime=feed.poller is not None)
    level = feed.sessions[0].level if feed.sessions else 2
    try:
        return _print_items(feed, num_queries, out, err, save_windows, on_window, state, level)
    finally:  # however this ends (done, Ctrl+C, a signal, an error): no window of ours left on a server
        feed.stop()
        feed.wait_ended(say=lambda m: _say(err, f"tputui: {m}"))


def _say(err, message: str) -> None:
    try:
        print(message, file=err, flush=True)
    except (OSError, ValueError):  # the terminal is gone (SIGHUP)
        pass


def _print_items(feed: LiveFeed, num_queries: int, out, err, save_windows: str | None,
                 on_window: Callable[[str], None] | None, state: MonitorState, level: int) -> int:
    last_error: str | None = None
    for item in feed.items(num_queries, fail_fast=True):
        state.add(item)
        if isinstance(item, RuntimeReading):
            lines = runtime_lines(item)
        else:
            lines = worker_lines(item, level, state)
            session = next(s for s in feed.sessions if s.address == item.address)
            if item.ok and not item.empty and save_windows and session.last_xspace is not None:
                path = save_window(save_windows, session.address, session.last_xspace, item.time)
                print(f"window saved: {path}", file=err, flush=True)
                if on_window:
                    on_window(path)
        for line in lines:
            print(line, file=out)
        print(file=out, flush=True)
        if isinstance(item, RuntimeReading) == (feed.poller is not None):  # the primary source's last word
            last_error = item.error
    if last_error:
        raise LiveError(last_error)
    return 0
