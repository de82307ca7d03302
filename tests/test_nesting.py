"""The C nesting kernels agree with the numpy reference (random nests and a real profile)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import xplane

from tputui.analysis import nesting
from tputui.analysis.op_metrics import tensor_core_planes
from tputui.data.xspace import decode

pytestmark = pytest.mark.skipif(nesting._nesting is None, reason="the C extension is not built")


def _random_nest(rng, n):
    start = np.sort(rng.integers(0, 10_000, n))
    end = start + rng.integers(0, 3_000, n)
    order = np.lexsort((-end, start))  # the sort nest_parents expects: start, then longest first
    return start[order].astype(np.int64), end[order].astype(np.int64)


@pytest.mark.parametrize("seed", range(20))
def test_parents_and_depths_match_numpy_on_random_nests(seed):
    rng = np.random.default_rng(seed)
    start, end = _random_nest(rng, int(rng.integers(0, 3000)))
    parent = nesting.nest_parents(start, end)
    np.testing.assert_array_equal(parent, nesting.nest_parents_numpy(start, end))
    np.testing.assert_array_equal(nesting.depths(parent), nesting.depths_numpy(parent))


def test_depths_with_parents_after_their_children():
    parent = np.array([2, 2, -1, 0, 3], np.int64)
    np.testing.assert_array_equal(nesting.depths(parent), [1, 1, 0, 2, 3])
    np.testing.assert_array_equal(nesting.depths_numpy(parent), [1, 1, 0, 2, 3])


def test_a_parent_cycle_is_refused():
    with pytest.raises(ValueError, match="cycle"):
        nesting.depths(np.array([1, 0], np.int64))


def test_parents_match_numpy_on_a_real_tpu_profile():
    fr = decode(xplane("tpu_v6e_inference").read_bytes())
    for p in tensor_core_planes(fr):
        for ln in fr.lines_of(p):
            sl = fr.line_events(ln)
            s = fr.start_ps[sl].astype(np.int64)
            e = s + fr.raw.event_duration_ps[sl].astype(np.int64)
            order = np.lexsort((-e, s))
            s, e = s[order], e[order]
            np.testing.assert_array_equal(nesting.nest_parents(s, e), nesting.nest_parents_numpy(s, e))
