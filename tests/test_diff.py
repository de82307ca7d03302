"""`tputui diff`: a run against itself (every delta zero), the two runs of jax_two_runs (every delta is
our two exports subtracted), HLO ops matched by name when program ids differ, the CI gate and bad input.

The oracle for the figures is our own exports of each run (`tputui export`), which the tool tests
check against XProf 2.24; the diff must add nothing of its own. Tolerance: 1e-9 relative (floats
added / subtracted in another order), exact for counts.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import polars as pl
import pytest

from tputui.analysis.diff import Side, diff
from tputui.cli import main
from tputui.compare import diff_runs, load_side, resolve_pair
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import export_text, run_tool

PROFILES = pathlib.Path(__file__).parent / "fixtures" / "profiles"
TWO = PROFILES / "jax_two_runs"
RUN_A, RUN_B = "2026_11_22_12_58_45", "2026_11_22_12_58_50"
TPU = PROFILES / "tpu_v6e_inference"


def _run(logdir: pathlib.Path, name: str | None = None) -> RunData:
    return RunData(open_logdir(str(logdir)).run(name))


def _diff_json(capsys, *args) -> dict:
    assert main(["diff", *map(str, args), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("logdir", [TPU, PROFILES / "jax_mlp", PROFILES / "tf_keras"])
def test_a_run_against_itself_has_no_deltas(capsys, logdir):
    run = open_logdir(str(logdir)).runs[0].name.split("/")[-1]
    d = _diff_json(capsys, logdir, logdir, "--run-a", run, "--run-b", run)
    for section in ("hlo_ops", "framework_ops"):
        for row in d[section]:
            assert row["delta_us"] == 0 and row["only_in"] == "" and row["a_time_us"] == row["b_time_us"], row
    assert all(r["delta"] in (0, None) for r in d["kpis"] + d["memory"])
    assert d["only_in_a"] == d["only_in_b"] == {"hlo_ops": [], "framework_ops": []}
    st = d["step_time"]
    assert st["a"] == st["b"] and st["delta_pct"] in (0, None)
    assert d["gate"]["delta_pct"] in (0, None)


def test_tpu_self_diff_lists_every_op_of_both_tools(capsys):
    d = _diff_json(capsys, TPU, TPU, "--run-a", "2025_12_10_run", "--run-b", "2025_12_10_run")
    hlo = run_tool(_run(TPU), "hlo_stats").tables()["hlo_stats"]
    assert len(d["hlo_ops"]) == hlo.height == 17
    fw = run_tool(_run(TPU), "framework_op_stats").tables()["framework_op_stats"]
    assert len(d["framework_ops"]) == fw.height
    assert {r["name"] for r in d["hlo_ops"]} >= {"copy-done.4", "broadcast_add_fusion", "all-reduce"}
    assert d["gate"]["measure"] == "device op time" and d["gate"]["a"] > 0
    kpi = {r["kpi"]: r for r in d["kpis"]}
    assert kpi["Device idle %"]["a"] == pytest.approx(13.364813273992816, rel=1e-12)


def _export(run: RunData, tool: str) -> dict:
    return json.loads(export_text(run, tool))


def test_two_runs_deltas_are_the_two_exports_subtracted(capsys):
    d = _diff_json(capsys, TWO, TWO)  # the same logdir twice: previous run (A) vs newest (B)
    assert (d["a"]["run"], d["b"]["run"]) == (RUN_A, RUN_B)
    assert d["b"]["path"].endswith(f"jax_two_runs/plugins/profile/{RUN_B}")
    ra, rb = _run(TWO, RUN_A), _run(TWO, RUN_B)
    oa, ob = _export(ra, "overview_page"), _export(rb, "overview_page")
    for side, o in (("a", oa), ("b", ob)):
        times = np.array([s["step_time_ms"] for s in o["steps"]])
        got = d["step_time"][side]
        assert got["count"] == o["step_time_ms"]["count"] == len(times)
        assert got["mean_ms"] == pytest.approx(o["step_time_ms"]["avg"], rel=1e-9)
        assert got["stddev_ms"] == pytest.approx(o["step_time_ms"]["stddev"], rel=1e-9)
        assert got["median_ms"] == pytest.approx(float(np.median(times)), rel=1e-9)
        assert (got["min_ms"], got["max_ms"]) == (pytest.approx(times.min()), pytest.approx(times.max()))
    assert d["step_time"]["delta_pct"] == pytest.approx(
        (ob["step_time_ms"]["avg"] - oa["step_time_ms"]["avg"]) / oa["step_time_ms"]["avg"] * 100, rel=1e-9)
    for row in d["step_breakdown"]:
        key = row["category"] + "_ms"
        assert row["a_ms"] == pytest.approx(oa["step_time_breakdown_ms"][key]["avg"], rel=1e-9)
        assert row["delta_ms"] == pytest.approx(ob["step_time_breakdown_ms"][key]["avg"]
                                                - oa["step_time_breakdown_ms"][key]["avg"], rel=1e-9, abs=1e-12)
    fa, fb = _export(ra, "framework_op_stats")["rows"], _export(rb, "framework_op_stats")["rows"]
    key = lambda r: (r["host_or_device"], r["op_type"], r["op_name"])  # noqa: E731
    ta = {key(r): r["total_self_time_us"] for r in fa}
    tb = {key(r): r["total_self_time_us"] for r in fb}
    got = {(r["host_or_device"], r["op_type"], r["name"]): r for r in d["framework_ops"]}
    assert set(got) == set(ta) | set(tb)
    for k, r in got.items():
        assert r["delta_us"] == pytest.approx(tb.get(k, 0.0) - ta.get(k, 0.0), rel=1e-9, abs=1e-9)
    assert d["gate"] == {"measure": "mean step time", "unit": "ms", "a": d["step_time"]["a"]["mean_ms"],
                         "b": d["step_time"]["b"]["mean_ms"], "delta_pct": d["step_time"]["delta_pct"]}


class _Renumbered:
    """A real hlo_stats result whose program ids are those of another compilation (ids + 1)."""

    def __init__(self, result):
        self.result = result

    def tables(self):
        t = self.result.tables()["hlo_stats"]
        return {"hlo_stats": t.with_columns((pl.col("program_id").cast(pl.UInt64) + 1).cast(pl.String))}


def test_hlo_ops_fall_back_to_names_when_program_ids_differ():
    a = load_side(_run(TPU), "A")
    b = Side("B", a.run, a.hosts, a.overview, _Renumbered(a.hlo_stats), a.framework_op_stats, a.memory_profile)
    d = diff(a, b)
    assert d.hlo_ops.height == a.hlo_stats.tables()["hlo_stats"].height
    assert (d.hlo_ops["only_in"] == "").all() and (d.hlo_ops["delta_us"] == 0).all()
    assert (d.hlo_ops["program_a"] != d.hlo_ops["program_b"]).all()
    # An op on one side only says so, and its whole time is the delta.
    b.hlo_stats = type("Dropped", (), {"tables": lambda self: {"hlo_stats": a.hlo_stats.tables()["hlo_stats"]
                                                                .filter(pl.col("hlo_op_name") != "all-reduce")}})()
    d = diff(a, b)
    gone = d.hlo_ops.filter(pl.col("name") == "all-reduce").row(0, named=True)
    assert gone["only_in"] == "A" and gone["delta_us"] == -gone["a_time_us"] < 0
    assert d.to_json()["only_in_a"]["hlo_ops"] == ["all-reduce"]


def test_fail_if_slower_is_a_ci_gate(capsys):
    # B (15-step run) is over 400% slower per step than A: trips at 5%, not at 1000%.
    assert main(["diff", str(TWO), str(TWO), "--fail-if-slower", "5", "--format", "json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tputui: B is 428.") and "mean step time" in err and err.count("\n") == 1
    assert main(["diff", str(TWO), str(TWO), "--fail-if-slower", "1000", "--format", "json"]) == 0
    capsys.readouterr()
    # The other way round B is faster: never trips.
    assert main(["diff", str(TWO), RUN_A, "--run-a", RUN_B, "--fail-if-slower", "0", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("table,side,kind,name,only_in,a_time_us,b_time_us,delta_us")


def test_run_name_as_b_and_labels():
    ra, la, rb, lb = resolve_pair(str(TWO), RUN_A, run_a=RUN_B)
    assert (ra.name, rb.name, la, lb) == (RUN_B, RUN_A, RUN_B, RUN_A)
    ra, la, rb, lb = resolve_pair(str(PROFILES / "jax_mlp"), str(TWO))
    assert la.endswith("jax_mlp · 2026_11_22_12_58_33") and rb.name == RUN_B


def test_text_report(capsys):
    assert main(["diff", str(TWO), str(TWO)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"A: {RUN_A}  (vm)\nB: {RUN_B}  (vm)\n")
    for heading in ("Step time (ms)", "Step time breakdown (mean ms per step)", "Overview KPIs", "Framework ops: "):
        assert heading in out
    assert out.rstrip().splitlines()[-1].startswith("mean step time: A 1.300 ms · B 6.868 ms · +428.")


@pytest.mark.parametrize("args, message", [
    (["/no/such/dir", str(TWO)], "no such file or directory: /no/such/dir"),
    ([str(TPU), str(TPU)], "has one run (2025_12_10_run): give two logdirs or runs to compare"),
    ([str(TWO), str(TWO), "--host", "nohost"], "run 2026_11_22_12_58_45 has no host 'nohost' (hosts: vm)"),
    ([str(TWO), "no_such_run"], "no such file or directory: no_such_run (nor a run of "),
    ([str(TWO), str(TWO), "--table", "ops"], "--table goes with --format csv"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    assert main(["diff", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tputui: error: ") and message in err and err.count("\n") == 1


def test_diff_runs_combines_hosts():
    pod = pathlib.Path(__file__).parent / "fixtures" / "pod" / "pod_v4_32"
    run = _run(pod)
    d = diff_runs(run, _run(pod), label_a="A", label_b="B")
    assert d.a.hosts == run.hosts and len(run.hosts) == 4
    assert d.step_a is not None and d.step_a == d.step_b
    assert (d.framework_ops["delta_us"] == 0).all()
