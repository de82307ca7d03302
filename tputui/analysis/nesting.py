"""Event nesting: each event's parent and depth, the building block of self times and grouping.

The C kernels (tputui/analysis/_nesting.c, one linear stack walk each) do the work when the
extension is built; the numpy versions below are the fallback and the reference the tests compare
them with.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

_nesting: ModuleType | None  # None: the C extension is not built
try:
    from tputui.analysis import _nesting
except ImportError:  # extension not built: the numpy versions
    _nesting = None


def nest_parents(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Parent row of each interval, -1 for roots (input sorted by start, then longest first:
    see nest_parents_numpy)."""
    if _nesting is None:
        return nest_parents_numpy(start, end)
    out = np.empty(len(start), np.int64)
    _nesting.parents(np.ascontiguousarray(start, np.int64), np.ascontiguousarray(end, np.int64), out)
    return out


def depths(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors of each node (parent -1 for roots)."""
    if _nesting is None:
        return depths_numpy(parent)
    out = np.empty(len(parent), np.int64)
    _nesting.depths(np.ascontiguousarray(parent, np.int64), out)
    return out


def spread_min(parent: np.ndarray, label: np.ndarray, order: np.ndarray | None = None) -> bool:
    """label[i] = min(label[i], label[ancestor]) for every ancestor, in place (parent and label int32);
    `order` lists the nodes so that each parent comes before its children (None: array order).
    True when a label changed. One pass in C; the numpy version goes depth by depth."""
    if _nesting is None:
        return spread_min_numpy(parent, label)
    order = None if order is None else np.ascontiguousarray(order, np.int64)
    return bool(_nesting.spread_min(np.ascontiguousarray(parent, np.int32), label, order))


def spread_min_numpy(parent: np.ndarray, label: np.ndarray) -> bool:
    depth = depths_numpy(parent)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(1, int(depth.max(initial=0)) + 2))
    changed = False
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        idx = by_depth[a:b]
        new = np.minimum(label[idx], label[parent[idx]])
        changed |= bool((new != label[idx]).any())
        label[idx] = new
    return changed


def nest_parents_numpy(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Parent row of each interval, -1 for roots.

    Input must be sorted by start ascending, then end descending (longest first). This is XProf's
    AncestorStack: walking in that order, the parent is the nearest earlier event still open that
    contains the event (closed inclusion: a zero-length event at a parent's end is inside it); a
    partially overlapping earlier event is popped, not a parent. With starts sorted that is the
    nearest earlier row whose end is >= ours, found here by vectorized pointer jumping.
    """
    n = len(start)
    end = np.asarray(end, np.int64)
    cand = np.arange(n, dtype=np.int64) - 1
    # First round on slices (no gathers): most events sit inside the one just before them.
    todo = np.flatnonzero(end[:-1] < end[1:]) + 1
    if len(todo):
        c = todo - 1
        cand[todo] = cand[c]
        todo = todo[cand[todo] >= 0]
    while len(todo):
        c = cand[todo]
        bad = end[c] < end[todo]
        todo, c = todo[bad], c[bad]
        # Everything between cand[c] and c ends before c, hence before us: jump over it.
        cand[todo] = cand[c]
        todo = todo[cand[todo] >= 0]
    return cand


def depths_numpy(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), np.int64)
    anc = parent.copy()
    while True:
        live = anc >= 0
        if not live.any():
            return depth
        depth[live] += 1
        anc[live] = parent[anc[live]]
