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


def _random_forest(rng, n):
    """Parents of a random forest, nodes numbered so every parent comes before its children."""
    parent = np.full(n, -1, np.int32)
    for i in range(1, n):
        if rng.random() < 0.8:
            parent[i] = rng.integers(0, i)
    return parent


@pytest.mark.parametrize("seed", range(10))
def test_spread_min_matches_numpy_and_reaches_the_deepest_descendant(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2000))
    parent = _random_forest(rng, n)
    label = rng.integers(0, 50, n).astype(np.int32)
    a, b = label.copy(), label.copy()
    changed = nesting.spread_min(parent, a)
    assert changed == nesting.spread_min_numpy(parent, b)
    np.testing.assert_array_equal(a, b)
    # Every node ends with the smallest label on its path to the root.
    for i in rng.integers(0, n, 50).tolist():
        best, k = int(label[i]), i
        while k >= 0:
            best, k = min(best, int(label[k])), int(parent[k])
        assert a[i] == best
    assert not nesting.spread_min(parent, a)  # a second pass changes nothing


def test_spread_min_follows_the_given_order_when_parents_come_later():
    parent = np.array([2, 2, -1, 0], np.int32)  # 2 is the root; 0 and 1 its children; 3 under 0
    label = np.array([9, 9, 1, 9], np.int32)
    assert nesting.spread_min(parent, label, np.array([2, 0, 1, 3], np.int64))
    np.testing.assert_array_equal(label, [1, 1, 1, 1])
    with pytest.raises(ValueError, match="leaves"):
        nesting.spread_min(parent, label, np.array([7], np.int64))
