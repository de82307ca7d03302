"""The C column passes (tputui/data/_columns.c) against their numpy references in xspace.py."""
from __future__ import annotations

import numpy as np
import pytest

from tputui.data import xspace

pytestmark = pytest.mark.skipif(xspace._columns is None, reason="C extension not built")


@pytest.mark.parametrize("seed", range(6))
def test_lookup_equals_the_numpy_reference(seed):
    rng = np.random.default_rng(seed)
    n_planes = 4
    # Plane 0 dense ids with repeats, plane 1 sparse (large) ids with repeats, plane 2 negative
    # ids, plane 3 defines nothing.
    keys_plane = np.concatenate([np.zeros(50), np.ones(40), np.full(10, 2)]).astype(np.int32)
    keys_id = np.concatenate([rng.integers(0, 60, 50), rng.integers(0, 1 << 40, 40) // 7 * 7,
                              rng.integers(-5, 5, 10)]).astype(np.int64)
    keys_id[60:65] = keys_id[55:60]  # repeats in the sparse plane
    perm = rng.permutation(len(keys_id))
    keys_plane, keys_id = keys_plane[perm], keys_id[perm]
    n = 5000
    plane = np.sort(rng.integers(0, n_planes, n)).astype(np.int32)
    pool = np.concatenate([keys_id, rng.integers(-10, 100, 50)])
    ids = pool[rng.integers(0, len(pool), n)].astype(np.int64)
    want = xspace._lookup(keys_plane, keys_id, plane, ids)
    got = xspace.lookup_rows(keys_plane, keys_id, plane, ids)
    assert (got >= 0).sum() > n // 10  # many queries find a row: the comparison means something
    np.testing.assert_array_equal(got, want)
    # With owners: query i's plane is plane[owner[i]], in any order.
    owner = rng.integers(0, n, n)
    want = xspace._lookup(keys_plane, keys_id, plane[owner], ids)
    np.testing.assert_array_equal(xspace.lookup_rows(keys_plane, keys_id, plane, ids, owner=owner), want)


def test_lookup_on_empty_tables_and_queries():
    e32, e64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    assert len(xspace.lookup_rows(e32, e64, e32, e64)) == 0
    got = xspace.lookup_rows(e32, e64, np.zeros(3, np.int32), np.arange(3))
    np.testing.assert_array_equal(got, [-1, -1, -1])


def test_lookup_rejects_an_owner_outside_the_planes():
    with pytest.raises(ValueError):
        xspace.lookup_rows(np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(2, np.int32),
                           np.zeros(1, np.int64), owner=np.array([5]))


@pytest.mark.parametrize("seed", range(4))
def test_group_rows_equals_a_stable_sort(seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(-1, 12, 10_000)
    keys[:3] = [40, -7, 11]  # outside 0..n-1 -> the last bucket
    offsets, order = xspace.group_rows(keys, 12)
    bucket = np.where((keys >= 0) & (keys < 12), keys, 12)
    np.testing.assert_array_equal(order, np.argsort(bucket, kind="stable"))
    np.testing.assert_array_equal(np.diff(offsets), np.bincount(bucket, minlength=13))
    saved = xspace._columns
    try:
        xspace._columns = None
        ref = xspace.group_rows(keys, 12)
    finally:
        xspace._columns = saved
    np.testing.assert_array_equal(ref[0], offsets)
    np.testing.assert_array_equal(ref[1], order)
