"""framework_op_stats against XProf's on tf_loop and tf_keras (host TF / tf.data ops), on the TPU
profile (device ops rolled up to framework ops) and on jax_mlp (a lone IDLE row): every row in
XProf's order, with and without IDLE; counts exact, times and fractions to 1e-9 relative."""
from __future__ import annotations

import pytest
from op_tools_helpers import datatable_rows, mismatches, oracle, run_of

from tputui.analysis import framework_op_stats as fos

COLUMNS = ["rank", "host_or_device", "type", "operation", "occurrences", "total_time", "avg_time",
           "total_self_time", "avg_self_time", "device_total_self_time_percent",
           "device_cumulative_total_self_time_percent", "host_total_self_time_percent",
           "Host_cumulative_total_self_time_percent", "measured_flop_rate", "model_flop_rate",
           "measured_memory_bw", "operational_intensity", "bound_by", "eager"]
RENAMES = {"Host_cumulative_total_self_time_percent": "host_cumulative_total_self_time_percent"}


@pytest.mark.parametrize("profile", ["tf_loop", "tf_keras", "tpu_v6e_inference", "jax_mlp"])
def test_rows_equal_xprof(profile):
    ours = fos.analyze(run_of(profile))
    doc = oracle(profile, "framework_op_stats")
    for table, theirs in ((ours.with_idle, doc[0]), (ours.without_idle, doc[1])):
        rows, expect = table.to_dicts(), datatable_rows(theirs)
        assert len(rows) == len(expect)
        bad = mismatches(rows, expect, COLUMNS, RENAMES)
        assert not bad, "\n".join(bad[:20])


def test_export_schema_and_charts():
    ours = fos.analyze(run_of("tf_loop"))
    row = ours.to_json()["rows"][1]
    for key in ("host_or_device", "op_type", "op_name", "occurrences", "total_time_us", "total_self_time_us"):
        assert key in row
    assert row["op_name"] == "PyFunc" and row["occurrences"] == 545
    by_type = ours.self_time_by_type("Host", include_idle=False)
    assert by_type["type"].to_list()[:2] == ["Dataset", "PyFunc"]  # tf.data iterators add up
    assert "IDLE" not in by_type["type"].to_list()
    assert list(ours.tables()) == ["framework_op_stats", "framework_op_stats_without_idle"]


def test_chart_shares_are_each_sides_self_time():
    """The four bar charts' figures (XProf's pies), from the result: percent of the side's self time."""
    ours = fos.analyze(run_of("tf_loop"))
    assert ours.sides_with_ops == ["Host"]  # a CPU run: no device ops
    rows = ours.table(include_idle=False).filter(ours.table(include_idle=False)["host_or_device"] == "Host")
    total = rows["total_self_time"].sum()
    shares = ours.self_time_shares("Host", "operation", include_idle=False, top=3)
    assert [n for n, _ in shares] == rows["operation"].to_list()[:3]
    assert [p for _, p in shares] == pytest.approx([v / total * 100 for v in rows["total_self_time"].to_list()[:3]])
    types = ours.self_time_shares("Host", "type", include_idle=False, top=50)
    assert sum(p for _, p in types) == pytest.approx(100.0)  # every type: the whole side
    assert [n for n, _ in types][:2] == ["Dataset", "PyFunc"]
