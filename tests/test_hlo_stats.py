"""hlo_stats against XProf's hlo_stats on the TPU profile: every row and column (order, names, HLO
text, counts, times, percentages, rates, bound-by), floats to 1e-9 relative. XProf's source_info
cell is HTML; ours is "file:line" (checked separately)."""
from __future__ import annotations

import pytest
from op_tools_helpers import datatable_rows, mismatches, oracle, run_of

from tputui.analysis import hlo_stats
from tputui.analysis.result import NoDataError


def test_rows_equal_xprof():
    ours = hlo_stats.analyze(run_of("tpu_v6e_inference"))
    theirs = datatable_rows(oracle("tpu_v6e_inference", "hlo_stats"))
    rows = ours.rows.to_dicts()
    assert len(rows) == len(theirs) == 17
    cols = [c for c in theirs[0] if c not in ("source_info", "vdd_energy")]
    bad = mismatches(rows, theirs, cols)
    assert not bad, "\n".join(bad[:20])
    for a, b in zip(rows, theirs):  # same file:line inside XProf's HTML cell
        assert (a["source_info"] == "") == (b["source_info"] == "")
        if a["source_info"]:
            assert f">{a['source_info']}</div>" in b["source_info"]


def test_columns_and_csv_table():
    ours = hlo_stats.analyze(run_of("tpu_v6e_inference"))
    table = ours.tables()["hlo_stats"]
    assert table.columns == hlo_stats.COLUMNS
    assert table["cumulative_total_self_time_percent"].is_sorted()
    assert ours.to_json()["rows"][0]["hlo_op_name"] == "copy-done.4"


def test_cpu_only_profile_says_why():
    with pytest.raises(NoDataError, match="TPU"):
        hlo_stats.analyze(run_of("tf_loop"))
