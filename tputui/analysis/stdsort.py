"""The order libstdc++'s `std::sort` leaves equal elements in.

`std::sort` is not stable: where XProf sorts events by (start, duration), events with equal
keys come out in an order that depends on the whole input. The trace viewer's derived
"Host Offload Ops" rows depend on that order (copy-done ops ending at the same picosecond),
so to match XProf we replay the exact algorithm of GCC's libstdc++ (which XProf's wheel links):
introsort (median-of-three pivot, Hoare partition, depth limit 2*log2(n), heap sort
fallback) followed by insertion sort of 16-element runs.

Only needed when the keys have ties; `sort_order` returns a plain stable argsort otherwise.
The replay runs in C (`_derive.std_sort`, ~100x faster) when the extension is built; the
Python below is the reference it is tested against and the fallback.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

_derive: ModuleType | None  # None: the C extension is not built
try:
    from tputui.analysis import _derive
except ImportError:  # built without a C compiler: the Python replay below
    _derive = None

_THRESHOLD = 16


def sort_order(*keys: np.ndarray, use_c: bool = True) -> np.ndarray:
    """Positions of the input in the order `std::sort` puts them, comparing `keys` lexicographically.

    keys: arrays of equal length, most significant first (like a tuple comparison).
    use_c=False runs the Python replay even when the C one is built (tests compare them).
    """
    n = len(keys[0]) if keys else 0
    stable = np.lexsort(tuple(reversed(keys))) if n else np.zeros(0, np.int64)
    if n < 2:
        return stable
    # Dense ranks make every comparison a single int compare.
    ks = [k[stable] for k in keys]
    new = np.zeros(n, bool)
    new[0] = True
    for k in ks:
        new[1:] |= k[1:] != k[:-1]
    if new.all():
        return stable  # no ties: every correct sort gives this order
    rank = np.empty(n, np.int64)
    rank[stable] = np.cumsum(new) - 1
    if _derive is not None and use_c:
        return np.frombuffer(_derive.std_sort(rank), np.int64).copy()
    r = rank.tolist()
    p = list(range(n))
    _introsort_loop(r, p, 0, n, 2 * (n.bit_length() - 1))
    _final_insertion_sort(r, p, 0, n)
    return np.array(p, np.int64)


def _swap(r, p, i, j):
    r[i], r[j] = r[j], r[i]
    p[i], p[j] = p[j], p[i]


def _introsort_loop(r, p, first, last, depth):
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(r, p, first, last)
            return
        depth -= 1
        cut = _partition_pivot(r, p, first, last)
        _introsort_loop(r, p, cut, last, depth)
        last = cut


def _partition_pivot(r, p, first, last):
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    # __move_median_to_first(first, a, b, c)
    if r[a] < r[b]:
        if r[b] < r[c]:
            _swap(r, p, first, b)
        elif r[a] < r[c]:
            _swap(r, p, first, c)
        else:
            _swap(r, p, first, a)
    elif r[a] < r[c]:
        _swap(r, p, first, a)
    elif r[b] < r[c]:
        _swap(r, p, first, c)
    else:
        _swap(r, p, first, b)
    # __unguarded_partition(first + 1, last, pivot=first)
    pivot = r[first]
    lo, hi = first + 1, last
    while True:
        while r[lo] < pivot:
            lo += 1
        hi -= 1
        while pivot < r[hi]:
            hi -= 1
        if not lo < hi:
            return lo
        _swap(r, p, lo, hi)
        lo += 1


def _final_insertion_sort(r, p, first, last):
    if last - first > _THRESHOLD:
        _insertion_sort(r, p, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(r, p, i)
    else:
        _insertion_sort(r, p, first, last)


def _insertion_sort(r, p, first, last):
    if first == last:
        return
    for i in range(first + 1, last):
        if r[i] < r[first]:
            vr, vp = r[i], p[i]
            r[first + 1:i + 1] = r[first:i]
            p[first + 1:i + 1] = p[first:i]
            r[first], p[first] = vr, vp
        else:
            _unguarded_linear_insert(r, p, i)


def _unguarded_linear_insert(r, p, last):
    vr, vp = r[last], p[last]
    nxt = last - 1
    while vr < r[nxt]:
        r[last], p[last] = r[nxt], p[nxt]
        last = nxt
        nxt -= 1
    r[last], p[last] = vr, vp


# --- libstdc++'s heap (std::partial_sort; introsort's heap-sort fallback) -------------------
def partial_sort(items: list, k: int, less) -> list:
    """The first k items in `less` order, exactly as libstdc++'s std::partial_sort leaves them
    (__heap_select then __sort_heap): ties come out as XProf's do (op_profile's children too)."""
    a = list(items)
    n = len(a)
    k = min(k, n)
    if k <= 0:
        return []
    if k > 1:  # __make_heap
        parent = (k - 2) // 2
        while True:
            _adjust_heap(a, parent, k, a[parent], less)
            if parent == 0:
                break
            parent -= 1
    for i in range(k, n):  # __heap_select
        if less(a[i], a[0]):
            v = a[i]
            a[i] = a[0]
            _adjust_heap(a, 0, k, v, less)
    end = k
    while end > 1:  # __sort_heap
        end -= 1
        v = a[end]
        a[end] = a[0]
        _adjust_heap(a, 0, end, v, less)
    return a[:k]


def _adjust_heap(a: list, hole: int, n: int, value, less) -> None:
    """libstdc++'s __adjust_heap over a[:n] (with its __push_heap)."""
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if less(a[child], a[child - 1]):
            child -= 1
        a[hole] = a[child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[hole] = a[child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[parent], value):
        a[hole] = a[parent]
        hole = parent
        parent = (hole - 1) // 2
    a[hole] = value


def _rank_less(x: tuple[int, int], y: tuple[int, int]) -> bool:
    return x[0] < y[0]


def _heap_sort(r, p, first, last):
    """Introsort's fallback, std::__partial_sort(first, last, last), on (rank, position) pairs."""
    out = partial_sort(list(zip(r[first:last], p[first:last])), last - first, _rank_less)
    r[first:last] = [x[0] for x in out]
    p[first:last] = [x[1] for x in out]
