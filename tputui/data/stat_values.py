"""Typed reads of loosely typed values: stat maps (`XSpaceFrame.stat_map` gives
`dict[str, object]`) and Polars scalars (`Series.mean()`, `.max()`, `.item()`).

`to_float` / `to_int` are `float()` / `int()` for the values those can hold (numbers,
numeric text or bytes, NumPy scalars) and raise TypeError for anything else, as the
builtins would; they only give the checker a type to hold on to.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def to_float(v: object) -> float:
    if isinstance(v, (int, float, str, bytes, np.number)):
        return float(v)
    raise TypeError(f"float() argument must be a number, not '{type(v).__name__}'")


def to_int(v: object) -> int:
    if isinstance(v, (int, float, str, bytes, np.number)):
        return int(v)
    raise TypeError(f"int() argument must be a number, not '{type(v).__name__}'")


def stat_float(stats: Mapping[str, object], key: str, default: float = 0.0) -> float:
    """`float(stats[key])`, or `default` when the stat is absent or falsy (0, "", None)."""
    return to_float(stats.get(key) or default)
