"""`tputui sql` and its `events` table, checked against XProf 2.24's own events db.

The oracle (tests/fixtures/events_db/oracle.json, made by scripts/make_events_db_oracle.py) holds, for
every fixture profile, what XProf's `create_events_db` converter wrote: the row count, per category
the row count and the sums of self_time_ns / flops / memory_accessed / start_ns / end_ns, and the
row count of every distinct value of the text / id columns. Tolerance: none (all integers, exact).
"""
from __future__ import annotations

import json
import pathlib

import polars as pl
import pytest

from tputui.analysis.events_table import events_frame
from tputui.cli import main
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.query import _columns_of, run_query

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
ORACLE = json.loads((FIXTURES / "events_db" / "oracle.json").read_text())
PROFILES = FIXTURES / "profiles"


def _frame_of(relpath: str):
    rd = RunData(open_logdir(str(FIXTURES / relpath)).run(None))
    return rd.frame(rd.hosts[0]), rd.hosts[0]


@pytest.mark.parametrize("relpath", sorted(ORACLE))
def test_events_table_matches_xprof_events_db(relpath):
    want = ORACLE[relpath]
    frame, host = _frame_of(relpath)
    ours = events_frame(frame, host).filter("in_xprof")
    assert ours.height == want["rows"]
    cats = ours.group_by("category").agg(
        pl.len().alias("rows"), *[pl.col(c).sum() for c in ("self_time_ns", "flops", "memory_accessed",
                                                                 "start_ns", "end_ns")])
    got = {r.pop("category"): r for r in cats.iter_rows(named=True)}
    assert got == want["categories"]
    for column, counts in want["values"].items():
        got_counts = ours.group_by(column).len().sort(column, nulls_last=True)
        assert [[v, n] for v, n in got_counts.iter_rows()] == counts, column


def test_events_rows_outside_xprof_are_the_lines_it_skips():
    """TPU TensorCore lines XProf's events db does not read (Async XLA Ops, XLA TraceMe here) are
    still rows of ours, marked in_xprof = false."""
    frame, host = _frame_of("profiles/tpu_v6e_inference/plugins/profile/2025_12_10_run/t1v-tpu-host.xplane.pb")
    ev = events_frame(frame, host, ["line", "in_xprof", "plane"])
    assert ev.height == frame.num_events
    skipped = ev.filter(~pl.col("in_xprof")).group_by("line").len().sort("line")
    assert skipped.to_dicts() == [{"line": "Async XLA Ops", "len": 600}, {"line": "XLA TraceMe", "len": 426}]


def test_query_builds_only_the_columns_it_names():
    rd = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).run(None))
    res = run_query(rd, "SELECT hlo_op, sum(self_time_ns) AS ns FROM events WHERE category = 'XLA Ops' "
                        "GROUP BY hlo_op ORDER BY ns DESC LIMIT 3")
    assert res.frame.columns == ["hlo_op", "ns"] and res.frame.height == 3
    built = set(_columns_of[rd.frame(rd.hosts[0])]._cache)
    assert built <= {"hlo_op", "self_time_ns", "category", "start_ns", "duration_ns"}
    # The op XProf's hlo_stats ranks first by self time across cores is among the top three here.
    hlo = run_query(rd, "SELECT hlo_op_name FROM hlo_ops ORDER BY total_self_time DESC LIMIT 1").frame
    assert hlo["hlo_op_name"][0] in res.frame["hlo_op"].to_list()


def test_events_of_every_host_and_one_host():
    pod = FIXTURES / "pod" / "pod_v4_32"
    rd = RunData(open_logdir(str(pod)).run(None))
    per_host = run_query(rd, "SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host").frame
    assert per_host["host"].to_list() == sorted(rd.hosts)
    assert per_host["n"].to_list() == [rd.frame(h).num_events for h in sorted(rd.hosts)]
    one = run_query(rd, "SELECT DISTINCT host FROM events", host=rd.hosts[1]).frame
    assert one["host"].to_list() == [rd.hosts[1]]


def test_ops_and_steps_tables_are_the_tools_tables():
    rd = RunData(open_logdir(str(PROFILES / "jax_mlp")).run(None))
    from tputui.export import run_tool

    steps = run_query(rd, "SELECT * FROM steps").frame
    assert steps.equals(run_tool(rd, "overview_page").tables()["steps"])
    ops = run_query(rd, "SELECT * FROM ops").frame
    assert ops.equals(run_tool(rd, "framework_op_stats").tables()["framework_op_stats"])


def test_cli_formats(capsys):
    q = "SELECT step, count(*) AS n FROM events WHERE step IS NOT NULL GROUP BY step ORDER BY step LIMIT 2"
    assert main(["sql", str(PROFILES / "jax_mlp"), q, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [{"step": "train 0", "n": 29}, {"step": "train 1", "n": 29}]
    assert main(["sql", str(PROFILES / "jax_mlp"), q, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["step,n", "train 0,29", "train 1,29"]
    assert main(["sql", str(PROFILES / "jax_mlp"), q]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["step", "n"] and out[2].split() == ["train", "0", "29"] and out[-1] == "(2 rows)"


@pytest.mark.parametrize("query, message", [
    ("SELECT nam FROM events", "unknown column 'nam' in table events (its columns: device, stream_id"),
    ("SELECT op FROM ops", "unknown column 'op' in table ops (its columns: rank, host_or_device"),
    ("SELECT * FROM evnts", "unknown table 'evnts' (tables: events, ops, hlo_ops, steps)"),
    ("DELETE FROM events", "only SELECT queries are answered"),
    ("SELECT * FROM hlo_ops", "table hlo_ops has no data in this run: no TPU device ops"),
    ("SELECT * FROM events WHERE", "SQL: "),
])
def test_bad_queries_say_what_is_wrong_in_one_line(capsys, query, message):
    assert main(["sql", str(PROFILES / "jax_mlp"), query]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tputui: error: " + message) and err.count("\n") == 1


def test_an_unreadable_host_is_left_out_with_a_note(tmp_path, capsys):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    good = next((PROFILES / "jax_mlp").rglob("*.xplane.pb"))
    (run / "good.xplane.pb").write_bytes(good.read_bytes())
    (run / "bad.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f not an xspace")
    assert main(["sql", str(tmp_path), "SELECT host, count(*) AS n FROM events GROUP BY host", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [{"host": "good", "n": 2688}]
    assert err.startswith("tputui: note: host bad left out: ") and err.count("\n") == 1
