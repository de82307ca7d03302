"""The generated protobuf modules are current, and our XSpace proto reads real files."""
from __future__ import annotations

import importlib.util

from conftest import ROOT


def test_generated_modules_are_current(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = {p.name: p.read_text() for p in gen.generate(tmp_path)}
    committed = {p.name: p.read_text() for p in (ROOT / "tputui" / "proto").glob("*.py")}
    assert sorted(fresh) == sorted(committed), "run scripts/gen_protos.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale generated modules (run scripts/gen_protos.py): {stale}"


def test_profile_request_wire_numbers():
    from tputui.proto import profiler_service_pb2 as ps

    f = ps.ProfileRequest.DESCRIPTOR.fields_by_name
    assert (f["duration_ms"].number, f["opts"].number, f["repository_root"].number,
            f["session_id"].number, f["host_name"].number, f["emit_xspace"].number) == (1, 4, 5, 6, 7, 9)
    assert ps.ProfileResponse.DESCRIPTOR.fields_by_name["xspace"].number == 8
    mr = ps.ProfilerServiceMonitorResult.DESCRIPTOR.fields_by_name
    assert mr["step_time_ms_avg"].number == 4 and mr["infeed_percent_max"].number == 9


def test_runtime_metric_wire_numbers():
    """Field numbers of libtpu's RuntimeMetricService messages (tpu-info's tpu_metric_service.proto)."""
    from tputui.proto import tpu_metric_service_pb2 as tm

    assert tm.DESCRIPTOR.package == "tpu.monitoring.runtime"
    assert tm.DESCRIPTOR.services_by_name["RuntimeMetricService"].methods_by_name["GetRuntimeMetric"]
    m = tm.Metric.DESCRIPTOR.fields_by_name
    assert (m["attribute"].number, m["timestamp"].number, m["gauge"].number, m["counter"].number,
            m["distribution"].number, m["summary"].number, m["start_timestamp"].number) == (1, 2, 3, 4, 5, 6, 7)
    g = tm.Gauge.DESCRIPTOR.fields_by_name
    assert (g["as_double"].number, g["as_int"].number) == (1, 2)
    d = tm.Distribution.DESCRIPTOR.fields_by_name
    assert (d["count"].number, d["mean"].number, d["bucket_options"].number, d["bucket_counts"].number) == (1, 2, 6, 7)
    e = tm.Distribution.BucketOptions.Exponential.DESCRIPTOR.fields_by_name
    assert (e["num_finite_buckets"].number, e["growth_factor"].number, e["scale"].number) == (1, 2, 3)
    a = tm.AttrValue.DESCRIPTOR.fields_by_name
    assert (a["string_attr"].number, a["int_attr"].number, a["kvlist_attr"].number) == (1, 3, 6)
    assert tm.MetricResponse.DESCRIPTOR.fields_by_name["metric"].number == 1
    assert tm.TPUMetric.DESCRIPTOR.fields_by_name["metrics"].number == 3
