"""kernel_stats against XProf's kernel_stats on our GPU fixture (scripts/make_gpu_fixture.py; XProf
reads it as a GPU profile): every row and column exactly (durations are whole ns in XProf too)."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES
from op_tools_helpers import datatable_rows, mismatches, run_of

from tputui.analysis import gpu_kernels
from tputui.analysis import kernel_stats as ks
from tputui.analysis.result import NoDataError
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData

GPU = FIXTURES / "gpu_kernels"


def _run():
    return RunData(open_logdir(str(GPU)).runs[0])


def test_rows_equal_xprof():
    ours = ks.analyze(_run()).rows.to_dicts()
    theirs = datatable_rows(json.loads((GPU / "oracle" / "kernel_stats.json").read_text()))
    assert len(ours) == len(theirs) == 7
    bad = mismatches(ours, theirs, list(theirs[0]))
    assert not bad, "\n".join(bad)


def test_launch_parsing_and_tensor_core_rules():
    p = gpu_kernels.parse_launch("regs:32 static_shared:8 dynamic_shared:0 grid:2,3,4 block:128,1,1 occ_pct:12.5 junk")
    assert (p["regs"], p["static_shared"], p["grid"], p["block"], p["occ"]) == (32, 8, (2, 3, 4), (128, 1, 1), 12.5)
    assert gpu_kernels.parse_launch("grid:1,2 block:x,1,1")["grid"] == (1, 1, 1)
    assert gpu_kernels.uses_tensor_core("volta_h884gemm") and not gpu_kernels.uses_tensor_core("EigenMetaKernel")
    assert gpu_kernels.einsum_tensor_core_eligible("ab,bc->ac") and not gpu_kernels.einsum_tensor_core_eligible("ab->ba")
    assert gpu_kernels.op_tensor_core_eligible("a/b/Conv2D") and not gpu_kernels.op_tensor_core_eligible("a/Relu")


def test_top_kernels_and_no_gpu():
    top = ks.analyze(_run()).top_kernels(2)
    assert top[0][0].startswith("void cudnn::cnn::conv2d") and top[0][1] == pytest.approx(1.205)
    with pytest.raises(NoDataError, match="GPU"):
        ks.analyze(run_of("tf_loop"))


async def test_duration_cells_agree_with_their_us_headers():
    """`total_duration_us` shows µs numbers (it showed '803 ns' under a header that says µs)."""
    from conftest import make_app, settle

    from tputui.widgets.table import FrameTable

    app = make_app(GPU, "kernel_stats")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#kernels", FrameTable)
        raw = table.frame["total_duration_us"][0]
        shown = table.formats["total_duration_us"](raw)
        assert float(shown.replace(",", "")) == pytest.approx(raw, abs=1e-3)
        assert not shown.endswith(("s", "µs", "ns", "ms")), shown
