"""A real gRPC server on 127.0.0.1 serving libtpu's `RuntimeMetricService` (local credentials, as
libtpu does) with answers of the shapes libtpu sends (we have no TPU here): HBM used / total per
TensorCore with a `device-id` int attribute, duty cycle per chip, HLO queue size and execution-time
distributions with a kvlist `device_ordinal` (string) + `core_type` attribute, megascale latency
distributions per `buffer-size`, exponential buckets. Values move with each read (`tick`), so a
pane shows them live.

Modes for failure tests: `delay_s` (a slow service: deadlines), `malformed` (answers bytes that
are not a MetricResponse), `unknown` (metric names answered NOT_FOUND, as libtpu answers names it
does not have), `list_metrics=False` (an older libtpu without ListSupportedMetrics).

usage (by hand): python tests/helpers/libtpu_server.py [--port 8431] [--layout v5e-4|v3-8]
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])  # run by hand from the repository

from tputui.proto import tpu_metric_service_pb2 as tm  # noqa: E402

SERVICE = "tpu.monitoring.runtime.RuntimeMetricService"
GIB = 1 << 30
# layout -> (chips, TensorCores per chip, HBM bytes per TensorCore)
LAYOUTS = {"v5e-4": (4, 1, 16 * GIB), "v5e-8": (8, 1, 16 * GIB), "v3-8": (4, 2, 16 * GIB), "v4-8": (4, 1, 32 * GIB)}
HLO_BUCKETS = 40  # exponential: scale 1 us, growth 1.5 (finite buckets + underflow + overflow)
LAT_BUCKETS = 30


def _int_attr(key: str, v: int) -> tm.Attribute:
    return tm.Attribute(key=key, value=tm.AttrValue(int_attr=v))


def _kv(**pairs: str) -> tm.Attribute:
    attrs = [tm.Attribute(key=k, value=tm.AttrValue(string_attr=v)) for k, v in pairs.items()]
    return tm.Attribute(key="", value=tm.AttrValue(kvlist_attr=tm.KeyValueList(attributes=attrs)))


def _distribution(counts: list[int], scale: float, growth: float) -> tm.Distribution:
    n = sum(counts)
    # a mean consistent with the buckets (each bucket's geometric midpoint)
    mids = [scale * growth ** (i - 0.5) if i else scale / 2 for i in range(len(counts))]
    mean = sum(c * m for c, m in zip(counts, mids)) / n if n else 0.0
    d = tm.Distribution(count=n, mean=mean, bucket_counts=counts)
    e = d.bucket_options.exponential_buckets
    e.num_finite_buckets, e.growth_factor, e.scale = len(counts) - 2, growth, scale
    return d


def _bell(width: int, centre: int, total: int, spread: int = 2) -> list[int]:
    w = [max(0, spread + 1 - abs(i - centre)) for i in range(width)]
    s = sum(w)
    counts = [total * x // s for x in w]
    counts[centre] += total - sum(counts)
    return counts


@dataclass
class FakeLibtpu:
    layout: str = "v5e-4"
    delay_s: float = 0.0
    malformed: bool = False
    unknown: set[str] = field(default_factory=set)
    list_metrics: bool = True
    megascale: bool = True
    frozen: int | None = None  # answer every read as this tick (recording an oracle)
    # more per-chip gauges to list and serve ({name: values}), for metrics only newer libtpus list
    extra: dict[str, list[float]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.chips, self.per_chip, self.hbm = LAYOUTS[self.layout]
        self.tick = 0
        self.listed = 0  # ListSupportedMetrics calls
        self._lock = threading.Lock()

    @property
    def cores(self) -> int:
        return self.chips * self.per_chip

    def metric(self, name: str, tick: int) -> tm.TPUMetric | None:
        m = tm.TPUMetric(name=name)
        if name == "tpu.runtime.hbm.memory.total.bytes":
            m.metrics.extend(tm.Metric(attribute=_int_attr("device-id", d), gauge=tm.Gauge(as_int=self.hbm))
                             for d in range(self.cores))
        elif name == "tpu.runtime.hbm.memory.usage.bytes":
            m.metrics.extend(tm.Metric(attribute=_int_attr("device-id", d),
                                       gauge=tm.Gauge(as_int=int(self.hbm * (0.30 + 0.08 * d + 0.01 * (tick % 5)))
                                                      % self.hbm))
                             for d in range(self.cores))
        elif name == "tpu.runtime.tensorcore.dutycycle.percent":
            m.metrics.extend(tm.Metric(attribute=_int_attr("device-id", c),
                                       gauge=tm.Gauge(as_double=round(45.0 + 10 * c + 7.5 * ((tick + c) % 4), 2)))
                             for c in range(self.chips))
        elif name == "hlo.queue.size.gauge":
            m.metrics.extend(tm.Metric(attribute=_kv(device_ordinal=str(d), core_type="tensor_core"),
                                       gauge=tm.Gauge(as_int=(d + tick) % 3)) for d in range(self.cores))
        elif name == "hlo.execution.timing.distribution.microseconds":
            m.metrics.extend(tm.Metric(attribute=_kv(device_ordinal=str(d), core_type="tensor_core"),
                                       distribution=_distribution(_bell(HLO_BUCKETS, 20 + d % 3, 1000 + 97 * tick),
                                                                  1.0, 1.5))
                             for d in range(self.cores))
        elif name in self.extra:
            m.metrics.extend(tm.Metric(attribute=_int_attr("device-id", c), gauge=tm.Gauge(as_double=v))
                             for c, v in enumerate(self.extra[name]))
        elif name.startswith("megascale.") and self.megascale:
            for j, size in enumerate(("1MB-8MB", "8MB-64MB")):
                m.metrics.append(tm.Metric(attribute=_kv(**{"buffer-size": size}),
                                           distribution=_distribution(_bell(LAT_BUCKETS, 12 + 3 * j, 500 + 13 * tick),
                                                                      1.0, 2.0)))
        else:
            return None
        return m

    # --- gRPC handlers (bytes in, bytes out: a malformed answer is possible) ---
    def get(self, request: bytes, context) -> bytes:
        name = tm.MetricRequest.FromString(request).metric_name
        with self._lock:
            self.requests.append(name)
            self.tick += 1
            tick = self.tick if self.frozen is None else self.frozen
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.malformed:
            return b"\xff\xff\xff\xff not a protobuf"
        m = None if name in self.unknown else self.metric(name, tick)
        if m is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"metric {name} not found")
        return tm.MetricResponse(metric=m).SerializeToString()

    def list(self, request: bytes, context) -> bytes:
        self.listed += 1
        if not self.list_metrics:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "")
        names = ["tpu.runtime.hbm.memory.total.bytes", "tpu.runtime.hbm.memory.usage.bytes",
                 "tpu.runtime.tensorcore.dutycycle.percent", "hlo.queue.size.gauge",
                 "hlo.execution.timing.distribution.microseconds"]
        if self.megascale:
            names += ["megascale.dcn_transfer_latencies.microsecond.cumulative.distribution",
                      "megascale.collective_end_to_end_latencies.microsecond.cumulative.distribution"]
        names = [n for n in names + list(self.extra) if n not in self.unknown]
        resp = tm.ListSupportedMetricsResponse(supported_metric=[tm.SupportedMetric(metric_name=n) for n in names])
        return resp.SerializeToString()

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(SERVICE, {
            "GetRuntimeMetric": grpc.unary_unary_rpc_method_handler(self.get),
            "ListSupportedMetrics": grpc.unary_unary_rpc_method_handler(self.list),
        })


def start(fake: FakeLibtpu, port: int = 0, host: str = "127.0.0.1") -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((fake.handler(),))
    bound = server.add_secure_port(f"{host}:{port}", grpc.local_server_credentials())
    server.start()
    return server, f"{host}:{bound}"


@contextlib.contextmanager
def libtpu_server(fake: FakeLibtpu | None = None):
    fake = fake or FakeLibtpu()
    server, address = start(fake)
    try:
        yield address
    finally:
        server.stop(grace=None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8431)
    ap.add_argument("--layout", default="v5e-4", choices=sorted(LAYOUTS))
    ap.add_argument("--frozen", type=int, default=None, help="answer every read as this tick")
    a = ap.parse_args()
    server, address = start(FakeLibtpu(a.layout, frozen=a.frozen), a.port)
    print(f"READY {address}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
