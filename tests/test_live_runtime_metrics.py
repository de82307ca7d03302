"""The libtpu runtime-metrics client against a real gRPC server on 127.0.0.1 serving the
RuntimeMetricService proto with libtpu's answer shapes (tests/helpers/libtpu_server.py). The
oracle is Google's tpu-info 0.14.2 reading the same server (tests/fixtures/live/tpu_info_*.json,
recorded by tests/helpers/record_tpu_info_oracle.py): our figures equal its figures (1e-9 relative).
A dead service, a slow one, a malformed answer and unknown metric names each end in one line."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES
from helpers.libtpu_server import FakeLibtpu, libtpu_server
from helpers.live import closed_port

from tputui.live import runtime_metrics as rm
from tputui.live.client import LiveError
from tputui.live.runtime_metrics import RuntimeMetricsClient, RuntimePoller, RuntimeReading

REL = 1e-9


def oracle(layout: str) -> dict:
    return json.loads((FIXTURES / "live" / f"tpu_info_{layout}.json").read_text())


def test_v5e_chips_agree_with_tpu_info():
    want = oracle("v5e-4")
    with libtpu_server(FakeLibtpu("v5e-4", frozen=3)) as addr, RuntimeMetricsClient(addr) as c:
        r = c.read()
        dcn = rm.latency_by_size(c.metric(rm.LATENCIES[0][1]).metrics)
        coll = rm.latency_by_size(c.metric(rm.LATENCIES[4][1]).metrics)
    assert r.ok and r.cores_per_chip == 1 and len(r.chips) == 4
    assert [[c.chip, c.hbm_used, c.hbm_total, c.duty_cycle_pct] for c in r.chips] == want["usage"]
    assert [[c.chip, c.hlo_queue] for c in r.chips] == want["hlo_queue"]
    for chip, (dev, mean, p50, p90, p95, p999) in zip(r.chips, want["hlo_exec"]):
        e = chip.hlo_exec_us
        assert chip.chip == dev
        assert (e.mean, e.p50, e.p90, e.p95, e.p999) == pytest.approx((mean, p50, p90, p95, p999), rel=REL)
    for got, rows in ((dcn, want["dcn"]), (coll, want["collective"])):
        assert sorted(got) == sorted(row[0] for row in rows)
        for size, p50, p90, p95, p999 in rows:
            assert (got[size].p50, got[size].p90, got[size].p95, got[size].p999) == pytest.approx(
                (p50, p90, p95, p999), rel=REL)
    assert set(r.latencies_us) == {"DCN transfer", "collective e2e"}  # what this libtpu lists
    assert r.missing == [name for _, name in rm.LATENCIES if _ not in r.latencies_us]


def test_v3_memory_per_core_duty_cycle_per_chip():
    """v3: two TensorCores per chip; tpu-info lists memory per core, we sum a chip's cores."""
    want = oracle("v3-8")["usage"]
    with libtpu_server(FakeLibtpu("v3-8", frozen=3)) as addr, RuntimeMetricsClient(addr) as c:
        r = c.read()
    assert r.cores_per_chip == 2 and len(r.chips) == 4
    for chip in r.chips:
        cores = [row for row in want if row[0] // 2 == chip.chip]
        assert chip.hbm_used == sum(row[1] for row in cores)
        assert chip.hbm_total == sum(row[2] for row in cores)
        assert chip.duty_cycle_pct == cores[0][3] == cores[1][3]
    assert r.chips[0].hbm_pct == pytest.approx(100 * (want[0][1] + want[1][1]) / (want[0][2] + want[1][2]))


def test_percentile_reads_buckets_like_tpu_info():
    # 10 samples: 4 in [1, 2), 6 in [2, 4) (scale 1, growth 2); the median rank 5 is 1 into bucket 2.
    assert rm.percentile(5, 10, [0, 4, 6, 0], 1.0, 2.0) == pytest.approx(2.0 * (1 + 1 / 6))
    assert rm.percentile(0, 10, [10, 0, 0], 1.0, 2.0) == 1.0  # the underflow bucket reads 1, as tpu-info
    assert rm.percentiles(0, 0.0, [0, 0], 1.0, 2.0) is None


def test_readings_move_between_reads():
    with libtpu_server(FakeLibtpu("v5e-4")) as addr:
        a, b = list(RuntimePoller(addr, interval_s=0.01).readings(2))
    assert a.ok and b.ok and [c.duty_cycle_pct for c in a.chips] != [c.duty_cycle_pct for c in b.chips]
    assert RuntimeReading.from_json(json.loads(json.dumps(a.to_json()))) == a


def test_no_libtpu_is_one_line():
    addr = f"127.0.0.1:{closed_port()}"
    with RuntimeMetricsClient(addr) as c, pytest.raises(LiveError) as e:
        c.read()
    assert str(e.value) == (f"no libtpu runtime metrics at {addr}: no process is using the TPU on this VM "
                            "(libtpu serves them only while a TPU job runs)")


def test_slow_service_hits_the_deadline():
    with libtpu_server(FakeLibtpu(delay_s=1.0)) as addr, RuntimeMetricsClient(addr, timeout=0.2) as c:
        with pytest.raises(LiveError, match=r"^libtpu runtime metrics at .*: no answer within 0.2 s$"):
            c.metric(rm.HBM_USED)


def test_malformed_answer_is_one_line():
    with libtpu_server(FakeLibtpu(malformed=True)) as addr, RuntimeMetricsClient(addr) as c:
        with pytest.raises(LiveError, match=r"answered 'tpu.runtime.hbm.memory.usage.bytes' with something "
                                            r"that is not a MetricResponse \(\d+ bytes\)$"):
            c.metric(rm.HBM_USED)


def test_unknown_metric_names():
    """A required metric libtpu does not know is one line; optional ones are listed as missing."""
    fake = FakeLibtpu(unknown={rm.HBM_USED}, list_metrics=False)
    with libtpu_server(fake) as addr, RuntimeMetricsClient(addr) as c:
        with pytest.raises(rm.MetricNotServed, match="does not serve metric 'tpu.runtime.hbm.memory.usage.bytes' "
                                                     r"\(NOT_FOUND: metric .* not found\)$"):
            c.read()
    fake = FakeLibtpu(unknown={rm.HLO_EXEC}, list_metrics=False, megascale=False)
    with libtpu_server(fake) as addr, RuntimeMetricsClient(addr) as c:
        r = c.read()
        c.read()
    assert r.ok and all(ch.hlo_exec_us is None and ch.hlo_queue is not None for ch in r.chips)
    assert r.missing == [rm.HLO_EXEC] + [name for _, name in rm.LATENCIES] and r.latencies_us == {}
    assert fake.listed == 1  # an older libtpu without the listing is asked once, not on every read


def test_poller_turns_failures_into_readings_and_keeps_going(monkeypatch):
    monkeypatch.setattr(rm, "BACKOFF_S", (0.01,))
    addr = f"127.0.0.1:{closed_port()}"
    got = list(RuntimePoller(addr, interval_s=0.01).readings(2))
    assert [bool(r.error) for r in got] == [True, True] and got[0].retry_in_s == 0.01 and got[1].retry_in_s is None
    assert got[0].error.startswith("no libtpu runtime metrics at")


def test_tensorcore_utilization_where_libtpu_lists_it():
    """tpu-info reads TensorCore utilization through libtpu's SDK, not this service; a libtpu that
    lists a TensorCore utilization gauge here gets it read per chip, and none is read otherwise."""
    name = "tpu.runtime.tensorcore.utilization.percent"  # a name as libtpu spells its gauges
    with libtpu_server(FakeLibtpu("v5e-4", extra={name: [10.0, 20.5, 30.0, 40.0]})) as addr:
        with RuntimeMetricsClient(addr) as c:
            r = c.read()
    assert [ch.tensorcore_util_pct for ch in r.chips] == [10.0, 20.5, 30.0, 40.0]
    fake = FakeLibtpu("v5e-4")
    with libtpu_server(fake) as addr, RuntimeMetricsClient(addr) as c:
        r = c.read()
    assert all(ch.tensorcore_util_pct is None for ch in r.chips)
    assert not any("util" in n for n in fake.requests)


def test_stop_cancels_a_read_in_flight():
    """Quitting the pane must not wait out a stuck libtpu: stop() cancels the metric read."""
    import threading

    fake = FakeLibtpu(delay_s=5.0)
    with libtpu_server(fake) as addr:
        poller = RuntimePoller(addr, interval_s=0.1, timeout=10.0)
        got: list = []
        t = threading.Thread(target=lambda: got.extend(poller.readings(3)))
        t.start()
        for _ in range(100):  # until the first request reached the server
            if fake.requests:
                break
            threading.Event().wait(0.02)
        poller.stop()
        t.join(timeout=3)
        assert not t.is_alive() and got == []  # cancelled: no error reading, no more reads
