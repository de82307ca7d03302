"""libtpu's runtime metrics (the `RuntimeMetricService` Google's tpu-info reads): HBM used / total
and duty cycle per chip, HLO queue size and execution-time percentiles, DCN / transfer latency
percentiles. Read over gRPC with local credentials on localhost:8431 while a process uses the
TPU; reading them does not touch the job (no tracing).

Memory is reported per TensorCore and duty cycle per chip (two cores per chip on v2 / v3): the
ratio of the two counts says how many cores a chip has, and a chip's HBM is its cores' sum.
Percentiles of the exponential-bucket distributions are computed as tpu-info computes them.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import grpc
from google.protobuf.message import DecodeError

from tputui.live.client import CancellableCalls, CancelledError, LiveError, normalize_address
from tputui.proto import tpu_metric_service_pb2 as tm
from tputui.proto import tpu_metric_service_pb2_grpc as tm_grpc

METRICS_ADDRESS = "localhost:8431"
METRICS_TIMEOUT_S = 2.0  # a metric read is a map lookup in libtpu: a slow answer is a stuck service
HBM_USED = "tpu.runtime.hbm.memory.usage.bytes"
HBM_TOTAL = "tpu.runtime.hbm.memory.total.bytes"
DUTY_CYCLE = "tpu.runtime.tensorcore.dutycycle.percent"
HLO_QUEUE = "hlo.queue.size.gauge"
HLO_EXEC = "hlo.execution.timing.distribution.microseconds"
# (label, metric): megascale latency distributions, in microseconds; present on multi-slice jobs.
LATENCIES = [
    ("DCN transfer", "megascale.dcn_transfer_latencies.microsecond.cumulative.distribution"),
    ("DCN inbound", "megascale.dcn_inbound_transfer_latencies.microsecond.cumulative.distribution"),
    ("host to device", "megascale.host_to_device_transfer_latencies.microsecond.cumulative.distribution"),
    ("device to host", "megascale.device_to_host_transfer_latencies.microsecond.cumulative.distribution"),
    ("collective e2e", "megascale.collective_end_to_end_latencies.microsecond.cumulative.distribution"),
]
QUANTILES = (0.5, 0.9, 0.95, 0.999)


# --- figures ---------------------------------------------------------------------------------
@dataclass
class Percentiles:
    """A distribution's count, mean and p50 / p90 / p95 / p99.9 (microseconds)."""

    count: int
    mean: float
    p50: float
    p90: float
    p95: float
    p999: float


@dataclass
class ChipReading:
    chip: int
    hbm_used: int | None = None  # bytes, the chip's cores summed
    hbm_total: int | None = None
    duty_cycle_pct: float | None = None
    tensorcore_util_pct: float | None = None  # only where libtpu exposes it
    hlo_queue: int | None = None  # programs queued, the chip's cores summed
    hlo_exec_us: Percentiles | None = None

    @property
    def hbm_pct(self) -> float | None:
        if self.hbm_used is None or not self.hbm_total:
            return None
        return 100.0 * self.hbm_used / self.hbm_total


@dataclass
class RuntimeReading:
    """One read of every runtime metric; `error` is the one line when the read failed."""

    time: float
    address: str
    chips: list[ChipReading] = field(default_factory=list)
    cores_per_chip: int = 1
    latencies_us: dict[str, Percentiles] = field(default_factory=dict)  # label -> all buffer sizes merged
    missing: list[str] = field(default_factory=list)  # optional metrics this libtpu does not serve
    error: str | None = None
    retry_in_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> RuntimeReading:
        chips = []
        for c in d.get("chips", []):
            c = dict(c)
            if c.get("hlo_exec_us"):
                c["hlo_exec_us"] = Percentiles(**c["hlo_exec_us"])
            chips.append(ChipReading(**c))
        lat = {k: Percentiles(**v) for k, v in d.get("latencies_us", {}).items()}
        rest = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k not in ("chips", "latencies_us")}
        return cls(chips=chips, latencies_us=lat, **rest)


def percentile(rank: int, count: int, buckets: list[int], scale: float, growth: float) -> float:
    """The value below which `rank` of `count` samples fall, interpolated inside its bucket.

    tpu-info's reading of an exponential distribution: bucket i >= 1 spans
    [scale * growth^(i-1), scale * growth^i); a rank in the underflow bucket reads 1.
    """
    above = count
    for i in range(len(buckets) - 1, 0, -1):
        above -= buckets[i]  # samples in buckets below i
        if above <= rank:
            lower = scale * growth ** (i - 1)
            return lower * (1 + (rank - above) / buckets[i] * (growth - 1))
    return 1.0


def percentiles(count: int, mean: float, buckets: list[int], scale: float, growth: float) -> Percentiles | None:
    if count <= 0 or not buckets:
        return None
    p = [percentile(int(count * q), count, buckets, scale, growth) for q in QUANTILES]
    return Percentiles(count, mean, *p)


def merged_percentiles(dists: list) -> Percentiles | None:
    """Several exponential distributions (same buckets) summed bucket by bucket, then read."""
    dists = [d for d in dists if d.count > 0]
    if not dists:
        return None
    exp = dists[0].bucket_options.exponential_buckets
    width = max(len(d.bucket_counts) for d in dists)
    buckets = [0] * width
    for d in dists:
        for i, n in enumerate(d.bucket_counts):
            buckets[i] += n
    count = sum(d.count for d in dists)
    mean = sum(d.mean * d.count for d in dists) / count
    return percentiles(count, mean, buckets, exp.scale, exp.growth_factor)


def buffer_size(metric) -> str:
    """A megascale entry's transfer size bucket (`buffer-size`, else the first attribute)."""
    attrs = metric.attribute.value.kvlist_attr.attributes
    for kv in attrs:
        if kv.key == "buffer-size":
            return kv.value.string_attr
    return attrs[0].value.string_attr if attrs else "n/a"


def latency_by_size(entries) -> dict[str, Percentiles]:
    """A megascale distribution per transfer size (tpu-info's table rows)."""
    groups: dict[str, list] = {}
    for m in entries:
        if m.WhichOneof("measure") == "distribution":
            groups.setdefault(buffer_size(m), []).append(m.distribution)
    return {size: p for size, dists in groups.items() if (p := merged_percentiles(dists)) is not None}


# --- attributes ----------------------------------------------------------------------------
def device_id(metric) -> int | None:
    """The device a metric is about: `device-id` (int attribute) or a kvlist's `device_ordinal`."""
    a = metric.attribute
    kind = a.value.WhichOneof("attr")
    if kind == "int_attr":
        return a.value.int_attr
    if kind == "kvlist_attr":
        for kv in a.value.kvlist_attr.attributes:
            if kv.key == "device_ordinal":
                k = kv.value.WhichOneof("attr")
                if k == "int_attr":  # older libtpu
                    return kv.value.int_attr
                if k == "string_attr" and kv.value.string_attr.isdigit():  # newer libtpu
                    return int(kv.value.string_attr)
    if kind == "string_attr" and a.value.string_attr.isdigit():
        return int(a.value.string_attr)
    return None


def gauge_value(metric) -> float | int | None:
    g = metric.gauge
    kind = g.WhichOneof("value")
    return getattr(g, kind) if kind in ("as_int", "as_double") else None


def _by_device(metrics) -> dict[int, object]:
    out = {}
    for m in metrics:
        d = device_id(m)
        if d is not None:
            out[d] = m
    return out


# --- the client ----------------------------------------------------------------------------
class MetricNotServed(LiveError):
    """libtpu does not serve this metric name (older libtpu, or a single-slice job for megascale)."""


class RuntimeMetricsClient(CancellableCalls):
    """Reads libtpu's runtime metrics at `address` (local credentials, as tpu-info connects)."""

    def __init__(self, address: str = METRICS_ADDRESS, timeout: float = METRICS_TIMEOUT_S):
        super().__init__()
        self.address = normalize_address(address)
        self.timeout = timeout
        self._channel = grpc.secure_channel(self.address, grpc.local_channel_credentials())
        # Answers stay bytes until we parse them, so a malformed answer is our one line, not gRPC's.
        self._get = self._channel.unary_unary(
            "/tpu.monitoring.runtime.RuntimeMetricService/GetRuntimeMetric",
            request_serializer=tm.MetricRequest.SerializeToString, response_deserializer=None,
            _registered_method=True)
        self._stub = tm_grpc.RuntimeMetricServiceStub(self._channel)
        self._served: set[str] | None = None  # from ListSupportedMetrics, when libtpu has it
        self._listed = False

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> RuntimeMetricsClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _describe(self, e: grpc.RpcError, name: str, timeout: float) -> LiveError:
        code = e.code()
        details = (e.details() or "").splitlines()[0] if e.details() else ""
        if code == grpc.StatusCode.UNAVAILABLE:
            return LiveError(f"no libtpu runtime metrics at {self.address}: no process is using the TPU on this "
                             f"VM (libtpu serves them only while a TPU job runs)")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return LiveError(f"libtpu runtime metrics at {self.address}: no answer within {self.timeout:g} s")
        if code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED):
            return MetricNotServed(f"libtpu at {self.address} does not serve metric {name!r} "
                                   f"({code.name}: {details})")
        return LiveError(f"libtpu runtime metric {name!r} at {self.address} failed: {code.name}: {details}")

    def metric(self, name: str) -> tm.TPUMetric:
        """One metric's answer; LiveError (MetricNotServed for an unknown name) on failure."""
        raw = self._call(self._get, tm.MetricRequest(metric_name=name), name, self.timeout)
        try:
            resp = tm.MetricResponse.FromString(raw)
        except DecodeError:
            raise LiveError(f"libtpu at {self.address} answered {name!r} with something that is not a "
                            f"MetricResponse ({len(raw)} bytes)") from None
        if resp.metric.name and resp.metric.name != name:
            raise LiveError(f"libtpu at {self.address} answered {name!r} with metric {resp.metric.name!r}")
        return resp.metric

    def served(self) -> set[str] | None:
        """Metric names libtpu lists (None when it cannot list them: then every name is tried)."""
        if not self._listed:
            try:
                resp = self._call(self._stub.ListSupportedMetrics, tm.ListSupportedMetricsRequest(),
                                  "ListSupportedMetrics", self.timeout)
                self._served = {m.metric_name for m in resp.supported_metric}
            except MetricNotServed:
                self._served = None  # an older libtpu without the listing
            self._listed = True
        return self._served

    def _optional(self, name: str, missing: list[str]):
        """An optional metric's entries, or None (noted in `missing`) when libtpu does not serve it."""
        served = self._served
        if served is not None and name not in served:
            missing.append(name)
            return None
        try:
            return self.metric(name).metrics
        except MetricNotServed:
            missing.append(name)
            return None

    def read(self) -> RuntimeReading:
        """Every metric once. HBM and duty cycle are required; the rest is read where served."""
        now = time.time()
        served = self.served()
        used = _by_device(self.metric(HBM_USED).metrics)
        total = _by_device(self.metric(HBM_TOTAL).metrics)
        duty = _by_device(self.metric(DUTY_CYCLE).metrics)
        if not used and not duty:
            raise LiveError(f"libtpu at {self.address} reports no TPU devices (no HBM or duty-cycle entries)")
        per_chip = len(used) // len(duty) if duty and used and len(used) % len(duty) == 0 else 1
        per_chip = max(1, per_chip)
        n_chips = len(duty) if duty else -(-len(used) // per_chip)
        chips = [ChipReading(c) for c in range(n_chips)]

        def chip_of(dev: int) -> ChipReading | None:
            c = dev // per_chip
            return chips[c] if 0 <= c < n_chips else None

        for dev, m in sorted(used.items()):
            c = chip_of(dev)
            v = gauge_value(m)
            if c is not None and v is not None:
                c.hbm_used = (c.hbm_used or 0) + int(v)
        for dev, m in sorted(total.items()):
            c = chip_of(dev)
            v = gauge_value(m)
            if c is not None and v is not None:
                c.hbm_total = (c.hbm_total or 0) + int(v)
        for dev, m in duty.items():
            v = gauge_value(m)
            if 0 <= dev < n_chips and v is not None:
                chips[dev].duty_cycle_pct = float(v)
        missing: list[str] = []
        tc_name = next((n for n in sorted(served or ()) if "tensorcore" in n and "util" in n), None)
        if tc_name:
            for dev, m in _by_device(self._optional(tc_name, missing) or []).items():
                c, v = chip_of(dev), gauge_value(m)
                if c is not None and v is not None:
                    c.tensorcore_util_pct = float(v)
        queue = self._optional(HLO_QUEUE, missing)
        for dev, m in _by_device(queue or []).items():
            c, v = chip_of(dev), gauge_value(m)
            if c is not None and v is not None:
                c.hlo_queue = (c.hlo_queue or 0) + int(v)
        timing = self._optional(HLO_EXEC, missing)
        grouped: dict[int, list] = {}
        for m in timing or []:
            timed_dev = device_id(m)
            if timed_dev is not None and timed_dev // per_chip < n_chips and m.WhichOneof("measure") == "distribution":
                grouped.setdefault(timed_dev // per_chip, []).append(m.distribution)
        for chip, dists in grouped.items():
            chips[chip].hlo_exec_us = merged_percentiles(dists)
        latencies = {}
        for label, name in LATENCIES:
            entries = self._optional(name, missing)
            dists = [m.distribution for m in entries or [] if m.WhichOneof("measure") == "distribution"]
            p = merged_percentiles(dists)
            if p is not None:
                latencies[label] = p
        return RuntimeReading(now, self.address, chips, per_chip, latencies, missing)


BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0)


class RuntimePoller:
    """Reads every `interval_s` until stopped; a failed read is a reading with its error line."""

    def __init__(self, address: str = METRICS_ADDRESS, interval_s: float = 1.0, timeout: float = METRICS_TIMEOUT_S):
        if interval_s <= 0:
            raise LiveError("--metrics-interval must be positive")
        self.address, self.interval_s, self.timeout = normalize_address(address), interval_s, timeout
        self._stop = threading.Event()
        self._client: RuntimeMetricsClient | None = None

    def stop(self) -> None:
        self._stop.set()
        c = self._client
        if c is not None:
            c.cancel()

    def restart(self) -> None:
        self._stop.clear()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def readings(self, count: int | None = None, fail_fast: bool = False) -> Iterator[RuntimeReading]:
        """Readings as they come; `fail_fast`: a first read that fails raises (no libtpu to watch)."""
        n, failures = 0, 0
        with RuntimeMetricsClient(self.address, self.timeout) as client:
            self._client = client
            try:
                while not self.stopped and (count is None or n < count):
                    n += 1
                    t0 = time.monotonic()
                    try:
                        r = client.read()
                        failures = 0
                        wait = max(0.0, self.interval_s - (time.monotonic() - t0))
                    except CancelledError:
                        return
                    except LiveError as e:
                        if fail_fast and n == 1:
                            raise
                        wait = max(self.interval_s, BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
                        failures += 1
                        last = count is not None and n >= count
                        r = RuntimeReading(time.time(), self.address, error=str(e), retry_in_s=None if last else wait)
                    yield r
                    if count is None or n < count:
                        self._stop.wait(wait)
            finally:
                self._client = None
