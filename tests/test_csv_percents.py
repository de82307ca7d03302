"""Every percentage in a CSV is a percent (0-100), whichever tool wrote it: framework op stats and
the roofline hold their shares as fractions (XProf's JSON, kept as is), hlo_stats as percents;
`tputui export --format csv` and the screens' `x` write them all as percents (README)."""
from __future__ import annotations

import io

import polars as pl
import pytest
from conftest import FIXTURES

from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import run_tool, write_result

POD = FIXTURES / "pod" / "pod_v4_32"
SHARES = {"framework_op_stats": "device_total_self_time_percent", "roofline_model": "total_self_time_percent",
          "hlo_stats": "total_self_time_percent"}


@pytest.mark.parametrize("tool", list(SHARES))
def test_csv_shares_are_percents_json_keeps_xprofs_fractions(tool):
    result = run_tool(RunData(open_logdir(str(POD)).runs[0], use_cache=False), tool)
    out = io.StringIO()
    write_result(result, "csv", out)
    csv = pl.read_csv(io.StringIO(out.getvalue()))
    share = csv[SHARES[tool]]
    assert 10.0 < share.max() <= 100.0 + 1e-9, (tool, share.max())  # the largest op: ~31 %, not 0.31
    for c in csv.columns:
        if c.endswith(("_percent", "_percentage")) and csv[c].dtype.is_numeric():
            assert csv[c].max() <= 100.0 + 1e-6 and csv[c].min() >= -1e-9, (tool, c)
    rows = result.to_json()["rows"]
    fraction = tool != "hlo_stats"  # XProf's own JSON: fractions in these two tools
    key = SHARES[tool]
    assert max(r.get(key) or 0 for r in rows) <= (1.0 + 1e-9 if fraction else 100.0 + 1e-9)
