"""roofline_model against XProf's roofline_model on the TPU profile: all 38 rows (Program rows, ops
with and without infeed/outfeed, the empty `Average` rows) and the device peaks / ridge points."""
from __future__ import annotations

import math

from op_tools_helpers import datatable_rows, mismatches, oracle, run_of

from tputui.analysis import roofline


def test_rows_equal_xprof():
    ours = roofline.analyze(run_of("tpu_v6e_inference"))
    doc = oracle("tpu_v6e_inference", "roofline_model")
    theirs = datatable_rows(doc[0])
    rows = ours.rows.to_dicts()
    assert len(rows) == len(theirs) == 38
    cols = [c for c in theirs[0] if c != "source_info"]
    bad = mismatches(rows, theirs, cols)
    assert not bad, "\n".join(bad[:20])
    assert ours.diagnostics == [datatable_rows(doc[1])[0]["message"]]


def test_peaks_and_ridge_points_equal_xprof():
    ours = roofline.analyze(run_of("tpu_v6e_inference")).properties
    theirs = oracle("tpu_v6e_inference", "roofline_model")[0]["p"]
    assert ours["device_type"] == theirs["device_type"]
    for k in ("peak_flop_rate", "peak_hbm_bw", "peak_vmem_read_bw", "peak_vmem_write_bw", "hbm_ridge_point",
              "vmem_read_ridge_point", "vmem_write_ridge_point", "peak_cmem_read_bw"):
        # XProf prints these with 6 significant digits.
        assert math.isclose(ours[k], float(theirs[k]), rel_tol=5e-6, abs_tol=1e-9), k
    assert int(ours["has_merged_vmem"]) == int(theirs["has_merged_vmem"])


def test_ops_view_and_bound_by():
    model = roofline.analyze(run_of("tpu_v6e_inference"))
    ops = model.ops(include_infeed_outfeed=True)
    assert ops.height == 17 and set(ops["bound_by"]) == {"HBM"}
    fusion = ops.filter(ops["operation"] == "broadcast_add_fusion.1").row(0, named=True)
    assert math.isclose(fusion["operational_intensity"], 0.125)
